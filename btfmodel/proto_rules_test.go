package btfmodel

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// Input cut short anywhere is an error naming the problem, never a panic (the parser reads
// untrusted --proto text).
func TestParseProtoTruncated(t *testing.T) {
	full := "struct s { u64 a:3; char b[2]; }; const char *f(struct s *p, int (*cb)(void *), ...)"
	for i := range len(full) {
		src := full[:i]
		_, err := ParseProto(src)
		if err == nil {
			t.Errorf("%q: parsed", src)
		}
	}
	for _, src := range []string{"int f(int a, ..", "int f(int a, .", "int f(int a, . . .)"} {
		if _, err := ParseProto(src); err == nil {
			t.Errorf("%q: parsed", src)
		}
	}
}

// An anonymous aggregate has no tag to print: its C spelling is more than the keyword.
func TestCNameAnonymous(t *testing.T) {
	for _, typ := range []btf.Type{&btf.Struct{}, &btf.Union{}, &btf.Enum{Size: 4}} {
		got := CName(typ)
		kw := strings.TrimSuffix(strings.ToLower(KindName(typ)), "64")
		if !strings.HasPrefix(got, kw+" ") || strings.TrimSpace(got) == kw {
			t.Errorf("anonymous %s: %q", kw, got)
		}
	}
}
