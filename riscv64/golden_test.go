package riscv64

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/jit/jittest"
)

var update = flag.Bool("update", false, "rewrite the golden listings in testdata/golden*")

// TestGolden keeps an annotated listing of every curated case (jittest.Cases) with the
// synthetic layout. Regenerate with -update and review the diff; TestGoldenShapesCaptured
// checks each curated case that has a captured counterpart against the kernel's bytes.
func TestGolden(t *testing.T) {
	jittest.CheckGolden(t, btfmodel.RISCV64, Backend{}, Disassembler{},
		filepath.Join("testdata", "golden"), *update, nil)
}

// Cases72 are the 7.2 shapes jittest keeps for x86_64 only: fsession with session cookies
// (func_meta with the cookie index, is_return), with IP_ARG, with fmod_ret, and with twelve
// arguments (four on the stack).
func Cases72() []jittest.Case {
	s, sc := jit.Prog{Kind: jit.Fsession}, jit.Prog{Kind: jit.Fsession, SessionCookie: true}
	test2, modRet := "int bpf_fentry_test2(int a, u64 b)", "int bpf_modify_return_test(int a, int *b)"
	var out []jittest.Case
	add := func(name, proto string, progs ...jit.Prog) {
		out = append(out, jittest.Case{Name: "7.2-" + name, Req: jit.Request{Arch: btfmodel.RISCV64, Kernel: btfmodel.Kernel72, Proto: proto, Progs: progs}})
	}
	add("fsession-cookie-test2", test2, sc)
	add("fsession4-cookie3-test2", test2, sc, s, sc, sc)
	add("fsession-cookie-func-ip", test2, jit.Prog{Kind: jit.Fsession, SessionCookie: true, FuncIP: true}, jit.Prog{Kind: jit.Fentry})
	add("fsession-cookie-fmod_ret-fexit", modRet, sc, jit.Prog{Kind: jit.ModRet}, jit.Prog{Kind: jit.Fexit})
	add("fsession-cookie-args-12", "int f(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f, u64 g, u64 h, u64 i, u64 j, u64 k, u64 l)", sc)
	add("args-12-fmod_ret-fexit", "int f(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f, u64 g, u64 h, u64 i, u64 j, u64 k, u64 l)",
		jit.Prog{Kind: jit.ModRet}, jit.Prog{Kind: jit.Fexit})
	add("struct-straddle-stack", "struct pair { u64 a; u64 b; }; int f(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f, u64 g, struct pair p, u64 h)",
		jit.Prog{Kind: jit.Fentry}, jit.Prog{Kind: jit.Fexit})
	return out
}

// TestGolden72 keeps the listings of Cases72 in testdata/golden-7.2.
func TestGolden72(t *testing.T) {
	dir := filepath.Join("testdata", "golden-7.2")
	for _, c := range Cases72() {
		t.Run(c.Name, func(t *testing.T) {
			m, err := c.Req.Model()
			if err != nil {
				t.Fatal(err)
			}
			tr, err := jit.Resolve(&c.Req, m)
			if err != nil {
				t.Fatal(err)
			}
			img, err := Backend{}.Generate(tr)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := jit.WriteImage(&buf, tr, img, Disassembler{}, jit.Palette{}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, c.Name+".txt")
			if *update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want, err := os.ReadFile(path); err != nil || !bytes.Equal(want, buf.Bytes()) {
				t.Errorf("%s differs from the generated listing (%v); if intended, rerun with -update and review\n%s", path, err, buf.String())
			}
		})
	}
}
