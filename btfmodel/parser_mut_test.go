package btfmodel

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// Tests the mutation run drove (docs/mutation.md). Expected values are C's own spelling of
// the declarations given, not the parser's output.

// A model's prototype spells each argument as C declares it: a function-pointer argument's
// name goes inside "(*...)". The sources are already in that spelling, so Prototype must
// give them back unchanged.
func TestPrototypeSpellsFunctionPointerNames(t *testing.T) {
	for _, src := range []string{
		"int f(int (*cb)(void *), int x)",
		"void g(long int (*fn)(int, char *), void *data)",
		"char *h(char *s)",
	} {
		fn, err := ParseProto(src)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		m, err := Distill(fn, Kernel612)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if got := m.Prototype(); got != src {
			t.Errorf("Prototype() = %q, want %q", got, src)
		}
	}
}

// Kernel prototypes carry function attributes the parser must read past (`__visible` in
// front of, for instance, the syscall entry points and schedule()).
func TestParseProtoSpecifiers(t *testing.T) {
	for _, spec := range []string{"static", "extern", "inline", "__always_inline", "noinline", "notrace",
		"asmlinkage", "__cold", "__must_check", "__weak", "__noreturn", "__visible", "__bpf_kfunc", "noinstr"} {
		src := spec + " int f(int x)"
		fn, err := ParseProto(src)
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		if fn.Name != "f" {
			t.Errorf("%q: function %q", src, fn.Name)
		}
	}
}

// An array size that is not a number is named as such, not reported as size 0.
func TestParseProtoArraySizeNotANumber(t *testing.T) {
	for _, src := range []string{"struct s { char a[N]; }; void f(struct s *p)", "struct s { char a[]; }; void f(struct s *p)"} {
		_, err := ParseProto(src)
		if err == nil || !strings.Contains(err.Error(), "expected an array size") {
			t.Errorf("%q: %v, want \"expected an array size\"", src, err)
		}
	}
}

// A '/' that is the last character is not the start of a comment: a clear error, no panic.
func TestParseProtoTrailingSlash(t *testing.T) {
	for _, src := range []string{"int f(int x) /", "/"} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%q: panic %v", src, r)
				}
			}()
			if _, err := ParseProto(src); err == nil {
				t.Errorf("%q: parsed", src)
			}
		}()
	}
}

// An enum with a negative enumerator is a signed enum (C11 6.7.2.2: its type can hold
// -1; BTF says so with kind_flag 1, which btf.Enum.Signed carries).
func TestParseProtoSignedEnum(t *testing.T) {
	for src, signed := range map[string]bool{
		"enum e { A = -1, B }; void f(enum e x)":     true,
		"enum e { A, B = 5, C }; void f(enum e x)":   false,
		"enum e { A = 3, B = -7 }; void f(enum e x)": true,
	} {
		fn, err := ParseProto(src)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		e, ok := fn.Type.(*btf.FuncProto).Params[0].Type.(*btf.Enum)
		if !ok {
			t.Fatalf("%q: parameter is %T", src, fn.Type.(*btf.FuncProto).Params[0].Type)
		}
		if e.Signed != signed {
			t.Errorf("%q: Signed = %v, want %v", src, e.Signed, signed)
		}
	}
}

// A qualifier cycle (BTF the kernel refuses as a loop, but a file can hold) still ends:
// CName bounds its recursion instead of running out of stack.
func TestCNameQualifierCycle(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(16 << 20))
	c := &btf.Const{}
	c.Type = c
	v := &btf.Volatile{}
	p := &btf.Pointer{Target: v}
	v.Type = &btf.Const{Type: p}
	for _, typ := range []btf.Type{c, p} {
		if got := CName(typ); !strings.Contains(got, "...") {
			t.Errorf("cycle: %q", got)
		}
	}
}
