package jit

import (
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
)

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"arch":"amd64","kernel":"6.12","proto":"int f(int a, u64 b)","progs":[{"kind":"fentry"},{"kind":"fexit"}]}`,
		`{"arch":"arm64","kernel":"6.1","proto":"int f(void)","target":"bpf","progs":[{"kind":"fentry","cookie":"-1","func_ip":true}]}`,
		`{"arch":"amd64","kernel":"6.12","proto":"int f(int a)","progs":[{"kind":"fmod_ret"}],"flags":"0x6",
		  "addrs":{"image":"0xffffffffc0000000","func":"0xffffffff81000000","ip":"0xffffffff81000004","im":"0x1",
		  "progs":[{"prog":"0x2","bpf_func":"0x3"}],"helpers":{"__bpf_tramp_enter":"0x4"}}}`,
		`{"arch":"amd64","kernel":"6.12","btf":"x.btf","func":"f","progs":[{"kind":"lsm","sleepable":true}]}`,
		`{"arch":"amd64"`, `[]`, `{"progs":[{"kind":"fentry","cookie":1e400}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		req, err := ParseRequest(strings.NewReader(doc), "")
		if err != nil {
			return
		}
		// A request that parses is valid: it must stay valid and resolve when its model does.
		if err := req.Validate(); err != nil {
			t.Fatalf("parsed request fails Validate: %v", err)
		}
		if req.Proto == "" {
			return
		}
		m, err := req.Model()
		if err != nil {
			return
		}
		if _, err := Resolve(req, m); err != nil && len(req.Progs) <= btfmodel.MaxTrampLinks {
			t.Fatalf("resolve: %v", err)
		}
	})
}
