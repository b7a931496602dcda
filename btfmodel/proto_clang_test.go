package btfmodel

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// The prototype parser against clang: the same C text through ParseProto and through
// clang's BTF (clang -target bpf -g) must give the same layouts (sizes, member offsets,
// bit-fields) and the same function model. clang is the independent C compiler here.

// clangPrelude gives clang the kernel typedefs the parser knows without being told, with
// the chains Debian 6.12's vmlinux BTF has (testdata/kernel/6.12-amd64: uint8_t -> u8 ->
// __u8, size_t -> __kernel_size_t -> __kernel_ulong_t, ...).
const clangPrelude = `typedef unsigned char __u8; typedef unsigned short __u16; typedef unsigned int __u32;
typedef unsigned long long __u64; typedef signed char __s8; typedef short __s16; typedef int __s32;
typedef long long __s64; typedef __u8 u8; typedef __u16 u16; typedef __u32 u32; typedef __u64 u64;
typedef __s8 s8; typedef __s16 s16; typedef __s32 s32; typedef __s64 s64; typedef _Bool bool;
typedef unsigned long __kernel_ulong_t; typedef long __kernel_long_t;
typedef __kernel_ulong_t __kernel_size_t; typedef __kernel_long_t __kernel_ssize_t;
typedef __kernel_size_t size_t; typedef __kernel_ssize_t ssize_t;
#define __user __attribute__((btf_type_tag("user")))
#define __must_check
typedef unsigned int __kernel_uid32_t; typedef unsigned int __kernel_gid32_t;
typedef __kernel_uid32_t uid_t; typedef __kernel_gid32_t gid_t;
typedef struct { uid_t val; } kuid_t; typedef struct { gid_t val; } kgid_t;
typedef struct { union { void *kernel; void __user *user; }; bool is_kernel : 1; } sockptr_t;
typedef __s64 time64_t; struct timespec64 { time64_t tv_sec; long tv_nsec; };
typedef long long __kernel_loff_t; typedef __kernel_loff_t loff_t;
typedef int __kernel_pid_t; typedef __kernel_pid_t pid_t; typedef unsigned short umode_t;
typedef unsigned int gfp_t; typedef __u16 __le16; typedef __u16 __be16; typedef __u32 __le32;
typedef __u32 __be32; typedef __u64 __le64; typedef __u64 __be64;
typedef u8 uint8_t; typedef u16 uint16_t; typedef u32 uint32_t; typedef u64 uint64_t;
typedef s8 int8_t; typedef s16 int16_t; typedef s32 int32_t; typedef s64 int64_t;
typedef unsigned long uintptr_t; typedef u64 phys_addr_t; typedef u32 __kernel_dev_t;
typedef __kernel_dev_t dev_t; typedef unsigned int slab_flags_t; typedef unsigned int fmode_t;
typedef __u32 blk_opf_t; typedef u64 sector_t;
`

// layoutCases add layouts the hand-worked protoCases do not reach.
var layoutCases = []string{
	"struct s { char a; short b; char c; int d; char e[3]; }; void f(struct s *p)",
	"struct s { u8 a:3; u8 b:6; u16 c:9; u32 d:20; u32 e:13; }; void f(struct s *p)",
	"struct s { int a:3; char b; int c:30; }; void f(struct s *p)",
	"struct s { u64 a:1; u64 b:63; u8 c; }; void f(struct s *p)",
	"struct s { char a; u16 b:4; }; void f(struct s v)",
	"struct s { char a; u32 b:31; u32 c:2; }; void f(struct s v)",
	"union u { char c[5]; int i; short s; }; void f(union u *p)",
	"union u { u64 a:4; u32 b:31; char c; }; void f(union u *p)",
	"struct s { char c; union { int i; char d; } u; struct { char x; long y; } in; char z[2][3]; }; void f(struct s *p)",
	"struct s { long a; char b; }; struct t { struct s x; char y; }; void f(struct t *p)",
	"struct s { char a; int b; }; struct t { struct s arr[3]; char c; }; u16 f(struct t *p, struct s v)",
	"struct s { void *p; int (*fn)(int); const char *name; }; void f(struct s *p)",
	"enum e { A = 1, B = 2 }; enum e f(enum e *p, enum e x)",
	"struct s { short a; char b; }; struct s2 { struct s x; short y; }; int f(struct s2 v, struct s w, u8 z)",
	"struct s { u8 a; u8 b; u8 c; }; void f(struct s v, u64 *out, const struct s *in)",
	"union u { u16 a; u8 b[3]; }; void f(union u *p, long l, unsigned long long q)",
	"struct s { char c; struct { u64 x; } in; }; void f(struct s v)",
	"s64 f(s8 a, s16 b, s32 c, u8 d, u16 e, u32 g)",
	"bool f(bool a, char b, signed char c, unsigned char d, short e, unsigned short g, long h)",
	"int f(long double x)",
	"int f(__int128 x, unsigned __int128 y)",
	"long long f(long long unsigned a, long int b, short int c, unsigned long int d)",
	"const volatile u32 *f(volatile u64 *const p, const struct opaque *q)",
	"union uo; void f(union uo *u, const union uo *v)",
}

func TestParseProtoMatchesClang(t *testing.T) {
	clang, err := exec.LookPath("clang")
	if err != nil {
		t.Skip("clang not found (install clang); the prototype parser is not checked against it")
	}
	srcs := append([]string{}, layoutCases...)
	// Every kernel typedef the parser knows, as the kernel's headers define it.
	for _, td := range []string{"bool", "_Bool", "__u8", "__u16", "__u32", "__u64", "__s8", "__s16", "__s32",
		"__s64", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "__le16", "__be16", "__le32",
		"__be32", "__le64", "__be64", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "int8_t",
		"int16_t", "int32_t", "int64_t", "__kernel_ulong_t", "__kernel_long_t", "size_t",
		"__kernel_size_t", "ssize_t", "__kernel_ssize_t", "loff_t", "__kernel_loff_t", "uintptr_t",
		"phys_addr_t", "time64_t", "uid_t", "__kernel_uid32_t", "gid_t", "__kernel_gid32_t", "pid_t",
		"__kernel_pid_t", "umode_t", "dev_t", "__kernel_dev_t", "gfp_t", "slab_flags_t", "fmode_t",
		"blk_opf_t", "sector_t", "kuid_t", "kgid_t", "sockptr_t"} {
		srcs = append(srcs, fmt.Sprintf("%s f(%s a, const %s *b)", td, td, td))
	}
	for _, c := range protoCases {
		srcs = append(srcs, c.src)
	}
	dir := t.TempDir()
	compared := 0
	for i, src := range srcs {
		pfn, perr := ParseProto(src)
		cfn, cerr := clangFunc(clang, dir, i, src)
		if cerr != nil {
			t.Logf("%q: clang: %v (not compared)", src, cerr)
			continue
		}
		if perr != nil {
			t.Errorf("%q: clang compiles it, ParseProto: %v", src, perr)
			continue
		}
		compared++
		gotP, wantP := protoLayout(pfn), protoLayout(cfn)
		if gotP != wantP {
			t.Errorf("%q:\n parser %s\n clang  %s", src, gotP, wantP)
		}
		for _, k := range Kernels {
			pm, perr := Distill(pfn, k)
			cm, cerr := Distill(cfn, k)
			if fmt.Sprint(perr) != fmt.Sprint(cerr) {
				t.Errorf("%q %s: distill: parser %v, clang %v", src, k, perr, cerr)
				continue
			}
			if perr == nil && modelKey(pm) != modelKey(cm) {
				t.Errorf("%q %s: model: parser %s, clang %s", src, k, modelKey(pm), modelKey(cm))
			}
		}
	}
	if compared < 30 {
		t.Errorf("only %d declarations compared with clang", compared)
	}
}

// clangFunc compiles src and returns f's prototype as clang's BTF has it: through a
// pointer variable of f's type, so that no code is generated (the BPF back end refuses
// definitions with more than five arguments, varargs and struct returns). -funsigned-char:
// the kernel builds with it (6.2+, and arm64 always), and the parser follows the kernel;
// -std=gnu2x: "int f()" is "int f(void)", as the parser reads it.
func clangFunc(clang, dir string, i int, src string) (*btf.Func, error) {
	c := filepath.Join(dir, fmt.Sprintf("p%d.c", i))
	o := strings.TrimSuffix(c, ".c") + ".o"
	// An empty list in a definition declares no parameters (C17 6.7.6.3p14), as the
	// kernel's own BTF shows; clang 14 reads a bare declaration's () as unprototyped.
	src = strings.ReplaceAll(src, "f()", "f(void)")
	body := clangPrelude + src + "\n;\n__typeof__(f) *trampjit_keep;\n"
	if err := os.WriteFile(c, []byte(body), 0o644); err != nil {
		return nil, err
	}
	out, err := exec.Command(clang, "-target", "bpf", "-g", "-O2", "-w", "-std=gnu2x", "-funsigned-char", "-c", c, "-o", o).CombinedOutput()
	if err != nil {
		line, _, _ := strings.Cut(string(out), "\n")
		return nil, fmt.Errorf("%v: %s", err, line)
	}
	spec, err := LoadFile(o, nil)
	if err != nil {
		return nil, err
	}
	var v *btf.Var
	if err := spec.TypeByName("trampjit_keep", &v); err != nil {
		return nil, err
	}
	ptr, ok := v.Type.(*btf.Pointer)
	if !ok {
		return nil, fmt.Errorf("trampjit_keep is %T", v.Type)
	}
	fp, ok := ptr.Target.(*btf.FuncProto)
	if !ok {
		return nil, fmt.Errorf("trampjit_keep points to %T", ptr.Target)
	}
	return &btf.Func{Name: "f", Type: fp}, nil
}

func modelKey(m *FuncModel) string {
	var b strings.Builder
	for _, a := range m.Args {
		fmt.Fprintf(&b, "%d/%v ", a.Size, a.Flags)
	}
	fmt.Fprintf(&b, "; %d/%v regs %d", m.RetSize, m.RetFlags, m.NrRegs())
	return b.String()
}

// protoLayout describes a prototype's types by size, signedness and layout, not by the
// integer names (clang says "unsigned long", the kernel's BTF "long unsigned int") nor by
// parameter names (a function type has none); typedef names and qualifiers count.
func protoLayout(fn *btf.Func) string {
	fp := fn.Type.(*btf.FuncProto)
	var parts []string
	for _, p := range fp.Params {
		parts = append(parts, layout(p.Type, 0))
	}
	return layout(fp.Return, 0) + " (" + strings.Join(parts, ", ") + ")"
}

func layout(t btf.Type, depth int) string {
	if depth > 6 {
		return "..."
	}
	switch x := t.(type) {
	case *btf.Typedef:
		return x.Name + "=" + layout(x.Type, depth+1)
	case *btf.Const, *btf.Volatile, *btf.Restrict:
		// A run of qualifiers in either order is the same C type.
		var qs []string
		for {
			switch q := t.(type) {
			case *btf.Const:
				qs, t = append(qs, "const"), q.Type
				continue
			case *btf.Volatile:
				qs, t = append(qs, "volatile"), q.Type
				continue
			case *btf.Restrict:
				qs, t = append(qs, "restrict"), q.Type
				continue
			}
			break
		}
		sort.Strings(qs)
		return strings.Join(qs, " ") + " " + layout(t, depth+1)
	case *btf.TypeTag:
		// clang 14 drops type tags inside function types (cname_rules_test.go checks
		// them on definitions).
		return layout(x.Type, depth+1)
	}
	switch x := SkipModifiers(t).(type) {
	case nil, *btf.Void:
		return "void"
	case *btf.Int:
		return fmt.Sprintf("i%d%s", x.Size, map[bool]string{true: "s", false: "u"}[x.Encoding&btf.Signed != 0])
	case *btf.Enum:
		return fmt.Sprintf("enum%d", x.Size)
	case *btf.Pointer:
		return "*" + layout(x.Target, depth+1)
	case *btf.Array:
		return fmt.Sprintf("[%d]%s", x.Nelems, layout(x.Type, depth+1))
	case *btf.FuncProto:
		var ps []string
		for _, p := range x.Params {
			ps = append(ps, layout(p.Type, depth+1))
		}
		return "fn(" + strings.Join(ps, ",") + ")" + layout(x.Return, depth+1)
	case *btf.Struct:
		return record("struct", x.Size, x.Members, depth)
	case *btf.Union:
		return record("union", x.Size, x.Members, depth)
	case *btf.Fwd:
		return "fwd " + x.Name
	}
	return KindName(t)
}

func record(kw string, size uint32, ms []btf.Member, depth int) string {
	var parts []string
	for _, m := range ms {
		parts = append(parts, fmt.Sprintf("%s@%d:%d=%s", m.Name, m.Offset, m.BitfieldSize, layout(m.Type, depth+1)))
	}
	return fmt.Sprintf("%s%d{%s}", kw, size, strings.Join(parts, " "))
}
