package arm64_test

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/arm64"
	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel"
)

// golden72Dir holds the annotated listings of what only 7.2 emits on arm64: stack arguments
// and fsession.
const golden72Dir = "testdata/golden-7.2"

// golden72 are synthetic requests, each of the shape of a captured case (shown), so that its
// listing is the kernel's image modulo addresses.
var golden72 = []struct {
	name, shapeOf, proto string
	progs                []jit.Prog
}{
	{"stack-args-9-fexit", "__bpf_sk_lookup-fexit",
		"struct sock *f(u64 a, u64 b, u32 c, u64 d, u32 e, u8 f, u64 g, u64 h, int i)",
		[]jit.Prog{{Kind: jit.Fexit}}},
	{"stack-args-12-fentry2-fexit2", "tcp_v4_send_ack-fentry2-fexit2",
		"void f(u64 a, u64 b, u32 c, u32 d, u32 e, u32 f, u32 g, int h, u64 i, int j, u8 k, u32 l)",
		[]jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fentry}, {Kind: jit.Fexit}, {Kind: jit.Fexit}}},
	{"stack-struct-fentry-fexit-func-ip", "bpf_log_attr_init-fentry-fexit-func-ip",
		"struct p16 { u64 a; u64 b; }; int f(u64 a, u64 b, u32 c, u32 d, u32 e, struct p16 u, u64 g, struct p16 v, u32 h)",
		[]jit.Prog{{Kind: jit.Fentry, FuncIP: true}, {Kind: jit.Fexit}}},
	{"fsession-cookie", "bpf_fentry_test2-fsession-cookie",
		"int f(int a, u64 b)",
		[]jit.Prog{{Kind: jit.Fsession, SessionCookie: true}}},
	{"fsession4-cookie3", "bpf_fentry_test2-fsession4-cookie3",
		"int f(int a, u64 b)",
		[]jit.Prog{{Kind: jit.Fsession, SessionCookie: true}, {Kind: jit.Fsession}, {Kind: jit.Fsession, SessionCookie: true}, {Kind: jit.Fsession, SessionCookie: true}}},
	{"fsession-cookie-func-ip", "bpf_fentry_test2-fsession-cookie-func-ip",
		"int f(int a, u64 b)",
		[]jit.Prog{{Kind: jit.Fsession, SessionCookie: true, FuncIP: true}, {Kind: jit.Fentry}}},
	{"fsession-cookie-fmod_ret-fexit", "bpf_modify_return_test-fsession-cookie-fmod_ret-fexit",
		"int f(int a, int *b)",
		[]jit.Prog{{Kind: jit.Fsession, SessionCookie: true}, {Kind: jit.ModRet}, {Kind: jit.Fexit}}},
}

// updating reports the -update flag golden_test.go defines (make golden sets it).
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// TestGolden72 keeps the listings (go test -run Golden72 -update rewrites them) and checks
// each image against the captured image it has the shape of.
func TestGolden72(t *testing.T) {
	cases, err := kernel.ReadCorpus(corpus72)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*kernel.CorpusCase{}
	for i := range cases {
		byID[cases[i].ID] = &cases[i]
	}
	for _, g := range golden72 {
		t.Run(g.name, func(t *testing.T) {
			req := jit.Request{Arch: btfmodel.ARM64, Kernel: btfmodel.Kernel72, Proto: g.proto, Progs: g.progs}
			m, err := req.Model()
			if err != nil {
				t.Fatal(err)
			}
			tr, err := jit.Resolve(&req, m)
			if err != nil {
				t.Fatal(err)
			}
			img, err := arm64.Backend{}.Generate(tr)
			if err != nil {
				t.Fatal(err)
			}
			c := byID[g.shapeOf]
			if c == nil || c.Image == "" {
				t.Fatalf("%s has no image in %s", g.shapeOf, corpus72)
			}
			if err := sameShape(c, &req, m); err != nil {
				t.Fatalf("%s: %v", g.shapeOf, err)
			}
			want, _ := hex.DecodeString(c.Image)
			if err := kernel.SameModuloAddresses(string(btfmodel.ARM64), img.Code, want); err != nil {
				t.Errorf("differs from the kernel's %s: %v", g.shapeOf, err)
			}
			var buf bytes.Buffer
			if err := jit.WriteImage(&buf, tr, img, arm64.Disassembler{}, jit.Palette{}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(golden72Dir, "7.2-"+g.name+".txt")
			if updating() {
				if err := os.MkdirAll(golden72Dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, buf.Bytes()) {
				t.Errorf("%s differs from the generated listing (%v); if intended, rerun with -update and review\n%s", path, err, buf.String())
			}
		})
	}
}

// sameShape checks that the synthetic request has the captured case's argument sizes, struct
// flags, return size and programs: what decides the bytes apart from addresses.
func sameShape(c *kernel.CorpusCase, req *jit.Request, m *btfmodel.FuncModel) error {
	cm, err := c.Request.Model()
	if err != nil {
		return err
	}
	shape := func(m *btfmodel.FuncModel, progs []jit.Prog) string {
		var b strings.Builder
		fmt.Fprintf(&b, "ret %d;", m.RetSize)
		for _, a := range m.Args {
			fmt.Fprintf(&b, " %d/%d", a.Size, a.Flags&btfmodel.StructArg)
		}
		fmt.Fprintf(&b, "; %+v", progs)
		return b.String()
	}
	if got, want := shape(m, req.Progs), shape(cm, c.Request.Progs); got != want {
		return fmt.Errorf("shape %s, the capture's %s", got, want)
	}
	return nil
}

// TestGolden72PassOracle runs each 7.2 golden request under Unicorn against the emulator's
// oracle (derived from the request alone): the stack arguments reach the programs' ctx and
// the original intact, fsession programs run on entry and on return.
func TestGolden72PassOracle(t *testing.T) {
	for _, g := range golden72 {
		req := jit.Request{Arch: btfmodel.ARM64, Kernel: btfmodel.Kernel72, Proto: g.proto, Progs: g.progs}
		m, err := req.Model()
		if err != nil {
			t.Fatal(err)
		}
		args := make([]uint64, m.NrRegs())
		for i := range args {
			args[i] = 0x0101010101010101 * uint64(i+1) // every byte set: masking shows
		}
		rep, err := emu.Run(&req, emu.Options{Clobber: true, Args: args})
		if err != nil {
			t.Fatalf("%s: %v", g.name, err)
		}
		for _, f := range rep.Failed() {
			t.Errorf("%s: %s: %s", g.name, f.Name, f.Detail)
		}
		if len(rep.Checks) < 4 {
			t.Errorf("%s: only %d checks ran", g.name, len(rep.Checks))
		}
	}
}
