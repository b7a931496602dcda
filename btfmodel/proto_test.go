package btfmodel

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Expected models follow the SysV/AAPCS64 C layout rules (natural alignment, size rounded to
// the largest member's alignment), worked out by hand, and the kernel's distill rules.
var protoCases = []struct {
	src   string
	model string // sig notation of distill_test.go, for profile 6.12
	err   string // or the kernel's rejection
}{
	{src: "struct pair { u64 a; u32 b; }; int f(struct pair p, int x)", model: "16S 4s ; 4s"},
	{src: "struct s { char c; int i; }; void f(struct s v)", model: "8S ; void"},
	{src: "struct s { u8 a; u16 b; }; void f(struct s v)", model: "4S ; void"},
	{src: "struct s { u32 a[3]; }; void f(struct s v)", model: "12S ; void"},
	{src: "struct s { int a:3; int b:5; }; void f(struct s v)", model: "4S ; void"},
	{src: "struct s { u8 a; u64 b:4; }; void f(struct s v)", model: "8S ; void"},
	{src: "struct s { char c; struct { u64 x; } in; }; void f(struct s v)", model: "16S ; void"},
	{src: "typedef struct { u32 v; } myid_t; int f(myid_t id)", model: "4S ; 4s"},
	{src: "typedef unsigned short port_t; port_t f(port_t p)", model: "2 ; 2"},
	{src: "enum e { A, B }; int f(enum e x)", model: "4 ; 4s"},
	{src: "enum e { A = -1 }; int f(enum e x)", model: "4 ; 4s"},
	{src: "int f(void)", model: " ; 4s"},
	{src: "int f()", model: " ; 4s"},
	{src: "static inline __must_check int f(void)", model: " ; 4s"},
	{src: "void *f(const char __user *p, size_t n)", model: "8 8 ; 8"},
	{src: "int f(int (*cb)(void *), void **pp, struct sk_buff *const *skbs)", model: "8 8 8 ; 4s"},
	{src: "long f(s8 a, s16 b, s32 c, s64 d, u8 e, bool f2, unsigned long long g, char h)", model: "1s 2s 4s 8s 1 1 8 1 ; 8s"},
	{src: "unsigned f(short unsigned a, long long b, signed char c, long unsigned int d)", model: "2 8s 1s 8 ; 4"},
	{src: "int f(int a[4], char b[2][3])", model: "8 8 ; 4s"},
	{src: "int f(kuid_t u, kgid_t g, sockptr_t opt, struct timespec64 ts)", model: "4S 4S 16S 16S ; 4s"},
	{src: "ssize_t f(loff_t pos, pid_t pid, umode_t mode, gfp_t gfp, __be32 addr)", model: "8s 4s 2 4 4 ; 8s"},
	{src: "int f(int a, /* comment */ int b) // trailing", model: "4s 4s ; 4s"},
	{src: "int f(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f2, u64 g, u64 h, u64 i, u64 j, u64 k, u64 l)", model: "8x12 ; 4s"},
	{src: "struct s { char c; u64 x; char d; }; void f(struct s v)", err: "The function f arg0 type STRUCT is unsupported."},
	{src: "union u { u64 a; u32 b; }; void f(union u v)", err: "The function f arg0 type UNION is unsupported."},
	{src: "int f(float x)", err: "The function f arg0 type FLOAT is unsupported."},
	{src: "int f(double x)", err: "The function f arg0 type FLOAT is unsupported."},
	{src: "int f(int, ...)", err: "The function f with variable args is unsupported."},
	{src: "struct pair { u64 a; u32 b; }; struct pair f(int x)", err: "The function f return type STRUCT is unsupported."},
	{src: "union u { int a; }; union u f(int x)", err: "The function f return type UNION is unsupported."},
	{src: "float f(int x)", err: "The function f return type FLOAT is unsupported."},
	{src: "int f(int a, int b, int c, int d, int e, int g, int h, int i, int j, int k, int l, int m, int n)", err: "The function f has 13 arguments. Too many."},
}

func TestParseProto(t *testing.T) {
	for _, c := range protoCases {
		t.Run(c.src, func(t *testing.T) {
			fn, err := ParseProto(c.src)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			m, err := Distill(fn, Kernel612)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("got %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			args, ret := parseSig(t, c.model, Kernel612)
			var got []wantArg
			for _, a := range m.Args {
				got = append(got, wantArg{a.Size, a.Flags})
			}
			if fmt.Sprint(got) != fmt.Sprint(args) || m.RetSize != ret.size || m.RetFlags != ret.flags {
				t.Errorf("%s: got %v ret %d %v, want %v ret %d %v", m.Prototype(), got, m.RetSize, m.RetFlags, args, ret.size, ret.flags)
			}
		})
	}
}

func TestParseProtoErrors(t *testing.T) {
	for _, c := range []struct {
		src string
		col int
		msg string
	}{
		{"int f(in a)", 7, "unknown type name 'in'"},
		{"int f(int a", 12, "expected ',', found end of input"},
		{"int f(struct opaque o)", 7, "parameter has incomplete type 'struct opaque'"},
		{"struct s { int a; int a; }; int f(struct s x)", 23, "duplicate member 'a'"},
		{"int x", 5, "'x' is not a function (variables are not traced)"},
		{"", 1, "no function prototype found"},
		{"int f(int a) int g(void)", 14, "unexpected 'int' after the function prototype"},
		{"int f(unsigned signed a)", 7, "invalid combination of type specifiers"},
		{"int f(int a) @", 14, "unexpected character '@'"},
		{"struct s { int a:40; }; int f(struct s x)", 18, "invalid bit-field width 40 for 'a'"},
		{"struct s { int a; }; struct s { int b; }; int f(void)", 29, "redefinition of 'struct s'"},
		{"int f(void x)", 7, "'void' must be the only parameter"},
		{"int f(int a[0])", 13, "array size 0 out of range"},
		{"int f(int a) /* open", 14, "unterminated comment"},
		{"int (int a)", 5, "expected a name in the declaration"},
		{"int f(struct x { int a; ) ", 25, "expected a type, found ')'"},
		// Columns count from the start of the line the error is on.
		{"struct s {\n\tu64 a;\n\tu32 b;\n};\nint f(struct s p, in x)", 19, "unknown type name 'in'"},
	} {
		_, err := ParseProto(c.src)
		var pe *ProtoError
		if !errors.As(err, &pe) {
			t.Errorf("%q: got %v, want a ProtoError", c.src, err)
			continue
		}
		wantLine := 1 + strings.Count(c.src, "\n")
		if pe.Col != c.col || pe.Msg != c.msg || pe.Line != wantLine {
			t.Errorf("%q: got line %d column %d %q, want line %d column %d %q", c.src, pe.Line, pe.Col, pe.Msg, wantLine, c.col, c.msg)
			continue
		}
		if want := fmt.Sprintf("line %d, column %d: %s", wantLine, c.col, c.msg); err.Error() != want {
			t.Errorf("%q: message %q, want %q", c.src, err, want)
		}
		if pe.Col != c.col || pe.Msg != c.msg {
			t.Errorf("%q: got column %d %q, want column %d %q", c.src, pe.Col, pe.Msg, c.col, c.msg)
		}
	}
}

// The prototype parser and the BTF file's view of the same C declaration must agree.
func TestParseProtoMatchesVmlinux(t *testing.T) {
	spec := loadSpec(t, "6.12-amd64")
	for _, c := range []struct{ name, proto string }{
		{"bpf_fentry_test2", "int bpf_fentry_test2(int a, u64 b)"},
		{"tcp_v4_connect", "int tcp_v4_connect(struct sock *sk, struct sockaddr *uaddr, int addr_len)"},
		{"from_kuid", "uid_t from_kuid(struct user_namespace *targ, kuid_t kuid)"},
		{"sock_setsockopt", "int sock_setsockopt(struct socket *sock, int level, int optname, sockptr_t optval, unsigned int optlen)"},
		{"__audit_tk_injoffset", "void __audit_tk_injoffset(struct timespec64 offset)"},
		{"vfs_read", "ssize_t vfs_read(struct file *file, char __user *buf, size_t count, loff_t *pos)"},
	} {
		fn, err := FuncByName(spec, c.name)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Distill(fn, Kernel612)
		if err != nil {
			t.Fatal(err)
		}
		pfn, err := ParseProto(c.proto)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Distill(pfn, Kernel612)
		if err != nil {
			t.Fatal(err)
		}
		if got.NrArgs() != want.NrArgs() || got.RetSize != want.RetSize || got.RetFlags != want.RetFlags {
			t.Errorf("%s: proto %s vs BTF %s", c.name, got.Prototype(), want.Prototype())
			continue
		}
		for i := range got.Args {
			if got.Args[i].Size != want.Args[i].Size || got.Args[i].Flags != want.Args[i].Flags || got.Args[i].Name != want.Args[i].Name {
				t.Errorf("%s arg%d: proto %+v vs BTF %+v", c.name, i, got.Args[i], want.Args[i])
			}
		}
	}
}
