package btfmodel

import (
	"testing"

	"github.com/cilium/ebpf/btf"
)

// CName and KindName on BTF that clang wrote from C (testdata/ctypes.bpf.c): the spelling
// expected back is the parameter's C type in that file; the kind is the kernel's
// btf_kind_str name (kernel/bpf/btf.c) of the type clang emitted for it.
var ctypeCases = []struct {
	fn, cname, kind string
}{
	{"t_int", "int", "INT"},
	{"t_uint", "unsigned int", "INT"},
	{"t_ulong", "unsigned long", "INT"},
	{"t_schar", "signed char", "INT"},
	{"t_bool", "_Bool", "INT"},
	{"t_charp", "char *", "PTR"},
	{"t_ccharp", "const char *", "PTR"},
	{"t_charpp", "char **", "PTR"},
	{"t_ccharpc", "const char * const", "CONST"},
	{"t_skp", "struct sk *", "PTR"},
	{"t_cskp", "const struct sk *", "PTR"},
	{"t_sk", "struct sk", "STRUCT"},
	{"t_up", "union u *", "PTR"},
	{"t_u", "union u", "UNION"},
	{"t_e", "enum e", "ENUM"},
	{"t_u64", "u64", "TYPEDEF"},
	{"t_anonp", "anon_t *", "PTR"},
	{"t_fnp", "int (*)(int, char *)", "PTR"},
	{"t_varfnp", "int (*)(const char *, ...)", "PTR"},
	{"t_voidp", "void *", "PTR"},
	{"t_vintp", "volatile int *", "PTR"},
	{"t_rintp", "int * restrict", "RESTRICT"},
	{"t_userp", "const char __user *", "PTR"},
	{"t_opaquep", "struct opaque *", "PTR"},
	{"t_uopaquep", "union uopaque *", "PTR"},
	{"t_holderp", "struct holder *", "PTR"},
}

func TestCNameFromClang(t *testing.T) {
	spec, err := LoadFile("testdata/ctypes.bpf.o", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ctypeCases {
		fn, err := FuncByName(spec, c.fn)
		if err != nil {
			t.Fatal(err)
		}
		p := fn.Type.(*btf.FuncProto).Params[0].Type
		if got := CName(p); got != c.cname {
			t.Errorf("%s: CName %q, want %q", c.fn, got, c.cname)
		}
		if got := KindName(p); got != c.kind {
			t.Errorf("%s: KindName %s, want %s", c.fn, got, c.kind)
		}
	}
	// Members: arrays, and anonymous aggregates (C has no spelling for these: kind only).
	var h *btf.Struct
	if err := spec.TypeByName("holder", &h); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct{ cname, kind string }{
		{"int[4]", "ARRAY"}, {"char *[2]", "ARRAY"}, {"", "STRUCT"}, {"", "UNION"},
	} {
		mt := h.Members[i].Type
		if got := CName(mt); want.cname != "" && got != want.cname {
			t.Errorf("holder member %d: CName %q, want %q", i, got, want.cname)
		}
		if got := KindName(mt); got != want.kind {
			t.Errorf("holder member %d: KindName %s, want %s", i, got, want.kind)
		}
	}
	// The remaining btf_kind_str names.
	for _, k := range []struct {
		t    btf.Type
		want string
	}{
		{&btf.Void{}, "UNKNOWN"}, {nil, "UNKNOWN"}, {&btf.Fwd{Name: "x"}, "FWD"},
		{&btf.Volatile{Type: &btf.Int{}}, "VOLATILE"}, {&btf.Func{Name: "f"}, "FUNC"},
		{&btf.FuncProto{}, "FUNC_PROTO"}, {&btf.Var{Name: "v"}, "VAR"}, {&btf.Datasec{Name: ".data"}, "DATASEC"},
		{&btf.Float{Name: "float", Size: 4}, "FLOAT"}, {&btf.TypeTag{Value: "user", Type: &btf.Int{}}, "TYPE_TAG"},
		{&btf.Enum{Name: "e64", Size: 8}, "ENUM64"}, {&btf.Enum{Name: "e32", Size: 4}, "ENUM"},
		{&btf.Typedef{Name: "t", Type: &btf.Int{}}, "TYPEDEF"}, {&btf.Const{Type: &btf.Int{}}, "CONST"},
		{&btf.Restrict{Type: &btf.Int{}}, "RESTRICT"}, {&btf.Array{Type: &btf.Int{}}, "ARRAY"},
	} {
		if got := KindName(k.t); got != k.want {
			t.Errorf("KindName(%T) = %s, want %s", k.t, got, k.want)
		}
	}
}

// SkipModifiers follows typedef, const, volatile, restrict and type tags all the way
// (btf_type_skip_modifiers), and stops at anything else.
func TestSkipModifiersFromClang(t *testing.T) {
	spec, err := LoadFile("testdata/ctypes.bpf.o", nil)
	if err != nil {
		t.Fatal(err)
	}
	for fn, want := range map[string]string{
		"t_ccharpc": "const char *", "t_rintp": "int *", "t_u64": "unsigned long long", "t_int": "int",
		"t_skp": "struct sk *",
	} {
		f, err := FuncByName(spec, fn)
		if err != nil {
			t.Fatal(err)
		}
		if got := CName(SkipModifiers(f.Type.(*btf.FuncProto).Params[0].Type)); got != want {
			t.Errorf("%s: SkipModifiers gives %q, want %q", fn, got, want)
		}
	}
	// Through a pointer's target: const, type tag, volatile.
	f, _ := FuncByName(spec, "t_userp")
	ptr := f.Type.(*btf.FuncProto).Params[0].Type.(*btf.Pointer)
	if got := CName(SkipModifiers(ptr.Target)); got != "char" {
		t.Errorf("t_userp target: %q, want char", got)
	}
	f, _ = FuncByName(spec, "t_vintp")
	ptr = f.Type.(*btf.FuncProto).Params[0].Type.(*btf.Pointer)
	if got := CName(SkipModifiers(ptr.Target)); got != "int" {
		t.Errorf("t_vintp target: %q, want int", got)
	}
}
