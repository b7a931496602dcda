package btfmodel

import (
	"bytes"
	"testing"

	"github.com/cilium/ebpf/btf"
)

func FuzzParseProto(f *testing.F) {
	for _, c := range protoCases {
		f.Add(c.src)
	}
	for _, s := range []string{"int f(in a)", "struct s { int a:40; }; int f(struct s x)",
		"typedef struct { u32 v; } t; t f(t a, t *b)", "enum e { A = 0x10, B, C = -3 }; enum e f(void)",
		"void (*f(int x))(int)", "int f(int (*(*cb)(int))[4])", "struct a { struct b { union c { int x; } y; } z; }; int f(struct a v)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		fn, err := ParseProto(src)
		if err != nil {
			if _, ok := err.(*ProtoError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if _, ok := fn.Type.(*btf.FuncProto); !ok || fn.Name == "" {
			t.Fatalf("parsed %q into %v", src, fn)
		}
		for _, k := range Kernels {
			if m, err := Distill(fn, k); err == nil {
				_ = m.Prototype()
				if m.NrArgs() > MaxFuncArgs {
					t.Fatalf("%q: %d args accepted", src, m.NrArgs())
				}
			}
		}
	})
}

// marshal turns a prototype into raw BTF, the format of /sys/kernel/btf/vmlinux.
func marshal(t testing.TB, src string) []byte {
	fn, err := ParseProto(src)
	if err != nil {
		t.Fatal(err)
	}
	b, err := btf.NewBuilder([]btf.Type{fn}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestLoadRaw(t *testing.T) {
	raw := marshal(t, "struct pair { u64 a; u32 b; }; int f(struct pair p, int x)")
	spec, err := Load(bytes.NewReader(raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := FuncByName(spec, "f")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Distill(fn, Kernel612)
	if err != nil || m.NrRegs() != 3 {
		t.Fatalf("model %v, err %v", m, err)
	}
	for _, bad := range [][]byte{nil, {1, 2, 3}, []byte("hello world, not BTF"), raw[:len(raw)/2]} {
		if _, err := Load(bytes.NewReader(bad), nil); err == nil {
			t.Errorf("Load(%q...) succeeded", bad[:min(len(bad), 8)])
		}
	}
	if _, err := FuncByName(spec, "pair"); err == nil || err.Error() != "pair is a BTF STRUCT, not a function" {
		t.Errorf("FuncByName(struct): %v", err)
	}
}

func FuzzLoad(f *testing.F) {
	f.Add(marshal(f, "int f(int a, u64 b)"))
	f.Add(marshal(f, "struct pair { u64 a; u32 b; }; int f(struct pair p, int x)"))
	f.Add(marshal(f, "enum e { A, B }; void *f(enum e x, const char __user *p, kuid_t u)"))
	f.Add([]byte{0x9f, 0xeb, 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := Load(bytes.NewReader(data), nil)
		if err != nil {
			return
		}
		for typ, err := range spec.All() {
			if err != nil {
				return
			}
			if fn, ok := typ.(*btf.Func); ok {
				for _, k := range Kernels {
					if m, err := Distill(fn, k); err == nil {
						_ = m.Prototype()
					}
				}
			}
		}
	})
}
