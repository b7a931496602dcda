package btfmodel

import "testing"

// IsVoid is "the traced function returns nothing": true for void only; a one-byte return
// is a return (the kernel saves it for fexit), and so is the conservative model's
// (MAX_BPF_FUNC_REG_ARGS u64 arguments, an 8-byte return: btf_distill_func_proto without
// BTF).
func TestIsVoid(t *testing.T) {
	for src, want := range map[string]bool{
		"void f(int x)": true, "u8 f(int x)": false, "bool f(void)": false, "void *f(void)": false,
		"const void *f(int a)": false, "int f(void)": false,
	} {
		fn, err := ParseProto(src)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Distill(fn, Kernel612)
		if err != nil {
			t.Fatal(err)
		}
		if m.IsVoid() != want {
			t.Errorf("%s: IsVoid %v, want %v", src, m.IsVoid(), want)
		}
	}
	if Conservative("f").IsVoid() {
		t.Error("the conservative model returns 8 bytes, not void")
	}
	spec := corpusSpec(t, "6.12-amd64")
	for name, want := range map[string]bool{"kfree": true, "get_random_u32": false, "kmem_cache_free": true} {
		fn, err := FuncByName(spec, name)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Distill(fn, Kernel612)
		if err != nil {
			t.Fatal(err)
		}
		if m.IsVoid() != want {
			t.Errorf("%s: IsVoid %v, want %v", name, m.IsVoid(), want)
		}
	}
}

// Flag names are the kernel's (BTF_FMODEL_STRUCT_ARG, BTF_FMODEL_SIGNED_ARG in
// include/linux/bpf.h) without the prefix; bits the kernel does not define show as hex.
func TestArgFlagNames(t *testing.T) {
	for f, want := range map[ArgFlags]string{
		0: "", StructArg: "STRUCT_ARG", SignedArg: "SIGNED_ARG", StructArg | SignedArg: "STRUCT_ARG|SIGNED_ARG",
		SignedArg | 1<<3: "SIGNED_ARG|0x8",
	} {
		if got := f.String(); got != want {
			t.Errorf("%#x: %q, want %q", uint8(f), got, want)
		}
	}
}
