package emu_test

import (
	"encoding/hex"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/kernel/wire"
)

func needNative(t *testing.T) {
	if !emu.NativeSupported {
		t.Skip("the native engine needs an x86_64 Linux host")
	}
}

// atNative is r with the native engine's user-space addresses, for both engines.
func atNative(r *jit.Request) *jit.Request {
	c := *r
	c.Addrs = emu.NativeAddrs(r.Kernel, len(r.Progs))
	if r.StructOps != nil {
		c.Addrs.Func, c.Addrs.IP, c.Addrs.IM = 0, 0, 0 // no traced function, no bpf_tramp_image
	}
	return &c
}

// normal drops what legitimately differs between engines: the engine's name, the rate,
// and the budget check's wording (an instruction count vs a timeout).
func normal(r *emu.Report) emu.Report {
	c := *r
	c.Engine, c.HitsPerSec = "", 0
	c.Checks = append([]emu.Check{}, r.Checks...)
	for i := range c.Checks {
		if c.Checks[i].Name == emu.CheckBudget || c.Checks[i].Name == emu.CheckRun {
			c.Checks[i].Detail = ""
		}
	}
	return c
}

// both runs code (nil: trampjit's image) for r under Unicorn and natively.
func both(t *testing.T, r *jit.Request, code []byte, o emu.Options) (u, n *emu.Report) {
	t.Helper()
	run := func(engine string) *emu.Report {
		o.Engine = engine
		o.UntrustedNative = code != nil // mutants and hand-made images are not trampjit's
		var rep *emu.Report
		var err error
		if code == nil {
			rep, err = emu.Run(r, o)
		} else {
			rep, err = emu.RunImage(r, code, o)
		}
		if err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		if rep.Engine != engine {
			t.Fatalf("report says engine %q, ran %q", rep.Engine, engine)
		}
		return rep
	}
	return run(emu.EngineUnicorn), run(emu.EngineNative)
}

// TestNativeEquivalence: on a spread of requests (both x86 profiles, 0..12 arguments with
// stack and struct arguments, fentry/fexit/fmod_ret/LSM mixes, cookies, func_ip,
// sleepable programs, recursion misses, clobbering stubs, fmod_ret short-circuits) the
// native engine's report equals the Unicorn engine's, and both pass: the images are
// trampjit's, which the corpus shows byte-identical to the kernel's.
func TestNativeEquivalence(t *testing.T) {
	needNative(t)
	protos := []string{
		"int f(void)",
		"int f(int a, u64 b)",
		"void f(u64 a, int b)",
		"long f(long a, long b, long c, long d, long e, long g)",
		"struct pair { u64 a; u64 b; }; long f(long x, struct pair p, long c, long d, long e, struct pair q, long g)",
		"unsigned char f(char a, short b, int c, long d, void *e, u64 f, u64 g, u64 h)",
		"int f(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f, int g)",
		"u64 f(u64 a1, u64 a2, u64 a3, u64 a4, u64 a5, u64 a6, u64 a7, u64 a8, u64 a9, u64 a10, u64 a11, u64 a12)",
	}
	fe, fx, mr, lsm := jit.Fentry, jit.Fexit, jit.ModRet, jit.LSM
	mixes := [][]jit.Prog{
		{{Kind: fe}},
		{{Kind: fx, FuncIP: true}},
		{{Kind: fe, Cookie: 0x77}, {Kind: fx, Cookie: 0xffffffffffffffff}},
		{{Kind: fe, Sleepable: true, Cookie: 3}, {Kind: mr}, {Kind: mr, Cookie: 9}, {Kind: fx, FuncIP: true}},
		{{Kind: lsm}, {Kind: lsm, Cookie: 5}},
		{{Kind: fe}, {Kind: fe, FuncIP: true}, {Kind: fx}, {Kind: fx}, {Kind: mr}, {Kind: fe}},
	}
	var cases, shorts int
	for _, k := range []btfmodel.Kernel{btfmodel.Kernel612, btfmodel.Kernel61} {
		for _, proto := range protos {
			for mi, mix := range mixes {
				r := atNative(req(btfmodel.AMD64, k, "", proto, mix...))
				if _, _, err := emu.Generate(r); err != nil {
					continue // refused (6.1 takes no stack arguments; fmod_ret on void)
				}
				nmod := 0
				for _, p := range mix {
					if p.Kind == mr || (p.Kind == lsm && !strings.HasPrefix(proto, "void")) {
						nmod++
					}
				}
				opts := []emu.Options{{Count: 3}, {Clobber: true, Miss: []int{0}}}
				if nmod > 0 {
					rv := make([]uint64, nmod)
					rv[nmod-1] = 7 // the newest runs first: it short-circuits
					opts = append(opts, emu.Options{RetValues: rv, Clobber: true})
				}
				if len(mix) > 2 {
					opts = append(opts, emu.Options{Miss: []int{len(mix) - 1, 1}, Count: 2})
				}
				for oi, o := range opts {
					u, n := both(t, r, nil, o)
					name := fmt.Sprintf("%s %q mix %d opts %d", k, proto, mi, oi)
					if !u.OK || !n.OK {
						t.Errorf("%s: unicorn ok %v, native ok %v:%s%s", name, u.OK, n.OK, failures(u), failures(n))
					}
					if a, b := normal(u), normal(n); !reflect.DeepEqual(a, b) {
						t.Errorf("%s: reports differ:\nunicorn %+v\nnative  %+v", name, a, b)
					}
					if !n.OriginalCalled {
						shorts++
					}
					cases++
				}
			}
		}
	}
	t.Logf("%d runs, identical reports on both engines (%d with the original short-circuited)", cases, shorts)
	if cases < 100 || shorts == 0 {
		t.Errorf("only %d runs, %d short-circuits: the spread is too small", cases, shorts)
	}
}

// TestNativeMutants: mutants of trampjit's images must get the same verdict natively as
// under Unicorn (pass or fail, and the same failing checks: a native failure is explained
// by a Unicorn replay, so the names are compared to catch a native run that fails where
// the emulated one passed, or the reverse).
func TestNativeMutants(t *testing.T) {
	needNative(t)
	var same, total, killed int
	for _, k := range []btfmodel.Kernel{btfmodel.Kernel612, btfmodel.Kernel61} {
		r := atNative(req(btfmodel.AMD64, k, "", "long f(int a, u64 b, u64 c)",
			jit.Prog{Kind: jit.Fentry, Cookie: 0x1234567, FuncIP: true}, jit.Prog{Kind: jit.ModRet}, jit.Prog{Kind: jit.Fexit, Cookie: 3}))
		img, _, err := emu.Generate(r)
		if err != nil {
			t.Fatal(err)
		}
		inputs := []emu.Options{{}, {Clobber: true, Miss: []int{2}, RetValues: []uint64{7}}}
		for i, m := range emu.Mutants(btfmodel.AMD64, img.Code) {
			for _, o := range inputs[i%2 : i%2+1] { // alternate inputs: half the time, the same spread
				o.Budget = 20000
				u, n := both(t, r, m.Code, o)
				total++
				if !u.OK {
					killed++
				}
				if u.OK == n.OK && failedNames(u) == failedNames(n) {
					same++
					continue
				}
				t.Errorf("%s mutant at +%#x (%s): unicorn %v%s\nnative %v%s", k, m.Offset, m.Desc, u.OK, failures(u), n.OK, failures(n))
			}
		}
	}
	t.Logf("%d/%d mutant runs get the same verdict on both engines (%d fail the oracle)", same, total, killed)
	if total < 120 || killed < total/2 {
		t.Errorf("%d mutant runs, %d failing: too few to compare", total, killed)
	}
}

func failedNames(r *emu.Report) string {
	var s []string
	for _, c := range r.Failed() {
		if c.Name != emu.CheckRun { // the native run adds what the CPU did to "run"
			s = append(s, c.Name)
		}
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

// TestNativeContained: a fault, a privileged instruction, an undefined opcode and an
// endless loop in generated code end the child, and the report says what happened.
func TestNativeContained(t *testing.T) {
	needNative(t)
	r := atNative(req(btfmodel.AMD64, btfmodel.Kernel612, "", "int f(int a)", jit.Prog{Kind: jit.Fentry}))
	for _, c := range []struct {
		code []byte
		says string
	}{
		{[]byte{0x55, 0x48, 0x89, 0xe5, 0x48, 0x8b, 0x04, 0x25, 0x00, 0x10, 0x00, 0x00}, "segmentation fault (code 1, address 0x1000) at image+0x4"},
		{[]byte{0x55, 0xf4}, "segmentation fault (code 128, address 0x0) at image+0x1"}, // hlt: #GP
		{[]byte{0x0f, 0x0b}, "illegal instruction"},
		{[]byte{0x55, 0xeb, 0xfe}, "did not return (timeout, pc image+0x1)"},
	} {
		rep, err := emu.RunImage(r, c.code, emu.Options{Engine: emu.EngineNative, Budget: 1000, UntrustedNative: true})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range rep.Failed() {
			found = found || f.Name == emu.CheckRun && strings.Contains(f.Detail, "natively, call 1 ") && strings.Contains(f.Detail, c.says)
		}
		if rep.OK || !found {
			t.Errorf("% x: want a failed run check saying %q, got:%s", c.code, c.says, failures(rep))
		}
	}
}

// TestNativeRefuses: kernel addresses, arm64 images, and bytes trampjit did not generate
// without Options.UntrustedNative are not run natively.
func TestNativeRefuses(t *testing.T) {
	needNative(t)
	u := atNative(req(btfmodel.AMD64, btfmodel.Kernel612, "", "int f(int a)", jit.Prog{Kind: jit.Fentry}))
	img, _, err := emu.Generate(u)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := emu.RunImage(u, img.Code, emu.Options{Engine: emu.EngineNative}); err == nil || !strings.Contains(err.Error(), "UntrustedNative") {
		t.Errorf("foreign bytes without UntrustedNative: %v", err)
	}
	if rep, err := emu.RunImage(u, img.Code, emu.Options{Engine: emu.EngineNative, UntrustedNative: true}); err != nil || !rep.OK {
		t.Errorf("with UntrustedNative: %v %v", err, rep)
	}
	r := req(btfmodel.AMD64, btfmodel.Kernel612, "", "int f(int a)", jit.Prog{Kind: jit.Fentry})
	r.Addrs = emu.Addrs(r)
	if _, err := emu.Run(r, emu.Options{Engine: emu.EngineNative}); err == nil || !strings.Contains(err.Error(), "user-space addresses") {
		t.Errorf("kernel addresses: %v", err)
	}
	r = req(btfmodel.ARM64, btfmodel.Kernel612, "", "int f(int a)", jit.Prog{Kind: jit.Fentry})
	if _, err := emu.Run(r, emu.Options{Engine: emu.EngineNative}); err == nil || !strings.Contains(err.Error(), "x86_64 images only") {
		t.Errorf("arm64: %v", err)
	}
}

// TestNativeCorpus: trampjit's image for every x86_64 corpus request, moved to user-space
// addresses, passes the oracle natively with clobbering stubs, with the same report as
// under Unicorn, and reproduces the run recordings where the corpus has them.
func TestNativeCorpus(t *testing.T) {
	needNative(t)
	for _, dir := range corpora(t) {
		if !strings.HasSuffix(dir, "amd64") {
			continue
		}
		cases, err := kernel.ReadCorpus(dir)
		if err != nil {
			t.Fatal(err)
		}
		var ours, runs int
		for _, c := range cases {
			if c.Image == "" {
				continue
			}
			if _, err := hex.DecodeString(c.Image); err != nil {
				t.Fatal(err)
			}
			opts := emu.Options{Clobber: true, Engine: emu.EngineNative}
			recorded := c.Run != nil && c.Run.Error == ""
			if recorded {
				opts = reproduce(c.Run, opts)
			}
			r := atNative(c.Request)
			rep, err := emu.Run(r, opts)
			if err != nil {
				t.Errorf("%s: %v", c.ID, err)
				continue
			}
			if !rep.OK {
				t.Errorf("%s/%s: fails natively:%s", filepath.Base(dir), c.ID, failures(rep))
				continue
			}
			uo := opts
			uo.Engine = emu.EngineUnicorn
			if u, err := emu.Run(r, uo); err != nil || !reflect.DeepEqual(normal(u), normal(rep)) {
				t.Errorf("%s/%s: unicorn's report differs (%v)", filepath.Base(dir), c.ID, err)
			}
			ours++
			if recorded {
				// The function moved to user space: so did the IP the kernel recorded.
				run := *c.Run
				run.Progs = append([]wire.RunProg{}, run.Progs...)
				for i := range run.Progs {
					if run.Progs[i].IP != 0 {
						run.Progs[i].IP += uint64(r.Addrs.Func) - uint64(c.Request.Addrs.Func)
					}
				}
				if d := matchRun(r, &run, rep); d != "" {
					t.Errorf("%s/%s: native run does not reproduce the kernel's: %s", filepath.Base(dir), c.ID, d)
				}
				runs++
			}
		}
		t.Logf("%s: %d trampjit images pass natively, reports identical to unicorn's; %d run recordings reproduced", filepath.Base(dir), ours, runs)
	}
}
