package emu_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu"
	uc "github.com/trampjit/trampjit/emu/unicorn"
	"github.com/trampjit/trampjit/jit"
)

// profiles are the arch/kernel pairs with kernel-function targets; arm64 6.1 traces only
// BPF programs; riscv64 7.2 is here for its BPF-program targets (its kernel functions are
// in the corpus).
var profiles = []struct {
	arch   btfmodel.Arch
	kernel btfmodel.Kernel
	target string
}{
	{btfmodel.AMD64, btfmodel.Kernel612, ""},
	{btfmodel.AMD64, btfmodel.Kernel61, ""},
	{btfmodel.ARM64, btfmodel.Kernel612, ""},
	{btfmodel.ARM64, btfmodel.Kernel61, "bpf"},
	{btfmodel.RISCV64, btfmodel.Kernel612, ""},
	{btfmodel.RISCV64, btfmodel.Kernel72, "bpf"},
}

func req(arch btfmodel.Arch, k btfmodel.Kernel, target, proto string, progs ...jit.Prog) *jit.Request {
	return &jit.Request{Arch: arch, Kernel: k, Proto: proto, Progs: progs, Target: target}
}

// hash is the synthetic original's definition (emu's doc): h = h*31 + w from 0x1f2e3d4c,
// truncated to the return width.
func hash(ws []uint64, width int) uint64 {
	h := uint64(0x1f2e3d4c)
	for _, w := range ws {
		h = h*31 + w
	}
	if width < 8 {
		h &= 1<<(8*width) - 1
	}
	return h
}

// mustRun runs r checked in emulated code and traced by Go hooks: both must report the
// same.
func mustRun(t *testing.T, r *jit.Request, o emu.Options) *emu.Report {
	t.Helper()
	rep, err := emu.Run(r, o)
	if err != nil {
		t.Fatalf("%s %s: %v", r.Arch, r.Kernel, err)
	}
	o.Trace = true
	tr, err := emu.Run(r, o)
	if err != nil {
		t.Fatalf("%s %s traced: %v", r.Arch, r.Kernel, err)
	}
	a, b := *rep, *tr
	a.HitsPerSec, b.HitsPerSec = 0, 0
	if !reflect.DeepEqual(a, b) {
		t.Errorf("%s %s: checked in emulated code and traced differ:\n%+v\n%+v", r.Arch, r.Kernel, a, b)
	}
	return rep
}

// TestSemantics checks the observations against what the kernel's semantics say, written
// out by hand for each case: who runs, what each program sees, what the caller gets.
func TestSemantics(t *testing.T) {
	args := []uint64{0xffffffff80000001, 0x1234_5678_9abc_def0}
	for _, p := range profiles {
		name := fmt.Sprintf("%s-%s", p.arch, p.kernel)
		proto := "int f(int a, u64 b)"
		if p.target == "bpf" {
			proto = "int f(u64 a, u64 b)"
		}
		orig := hash(args, 4)
		t.Run(name+"/fentry-fexit", func(t *testing.T) {
			r := mustRun(t, req(p.arch, p.kernel, p.target, proto, jit.Prog{Kind: jit.Fentry, Cookie: 0x77}, jit.Prog{Kind: jit.Fexit, FuncIP: true}),
				emu.Options{Args: args, Clobber: true})
			want := []emu.ProgReport{
				{Kind: "fentry", Index: 0, Ran: true, Ctx: args, Cookie: 0x77},
				{Kind: "fexit", Index: 1, Ran: true, Ctx: append(append([]uint64{}, args...), orig)},
			}
			expectReport(t, r, orig, true, want)
		})
		if p.target == "bpf" {
			continue // BPF-program targets take no fmod_ret
		}
		t.Run(name+"/fmod_ret-short-circuit", func(t *testing.T) {
			// Attach order: fentry, fmod_ret A, fmod_ret B, fexit. Emission runs B before A
			// (newest first); B returns 7, so A, the original are skipped, and fexit sees 7.
			r := mustRun(t, req(p.arch, p.kernel, "", proto, jit.Prog{Kind: jit.Fentry}, jit.Prog{Kind: jit.ModRet},
				jit.Prog{Kind: jit.ModRet}, jit.Prog{Kind: jit.Fexit}), emu.Options{Args: args, RetValues: []uint64{5, 7}})
			want := []emu.ProgReport{
				{Kind: "fentry", Index: 0, Ran: true, Ctx: args},
				{Kind: "fmod_ret", Index: 1, Ran: false, Ctx: []uint64{}},
				{Kind: "fmod_ret", Index: 2, Ran: true, Ctx: append(append([]uint64{}, args...), 0)},
				{Kind: "fexit", Index: 3, Ran: true, Ctx: append(append([]uint64{}, args...), 7)},
			}
			expectReport(t, r, 7, false, want)
		})
		t.Run(name+"/fmod_ret-zero-then-miss", func(t *testing.T) {
			// B returns 0 (go on), A misses recursion (skipped): the original runs.
			r := mustRun(t, req(p.arch, p.kernel, "", proto, jit.Prog{Kind: jit.ModRet}, jit.Prog{Kind: jit.ModRet}, jit.Prog{Kind: jit.Fexit}),
				emu.Options{Args: args, RetValues: []uint64{9, 0}, Miss: []int{0}, Clobber: true})
			want := []emu.ProgReport{
				{Kind: "fmod_ret", Index: 0, Ran: false, Ctx: []uint64{}},
				{Kind: "fmod_ret", Index: 1, Ran: true, Ctx: append(append([]uint64{}, args...), 0)},
				{Kind: "fexit", Index: 2, Ran: true, Ctx: append(append([]uint64{}, args...), orig)},
			}
			expectReport(t, r, orig, true, want)
		})
	}
}

func expectReport(t *testing.T, r *emu.Report, ret uint64, orig bool, progs []emu.ProgReport) {
	t.Helper()
	if !r.OK {
		t.Errorf("oracle failed:%s", failures(r))
	}
	if r.Ret != ret || r.OriginalCalled != orig {
		t.Errorf("ret %#x original %v, want %#x %v", r.Ret, r.OriginalCalled, ret, orig)
	}
	for i := range r.Programs {
		r.Programs[i].NArgs, r.Programs[i].IP = 0, 0
	}
	if !reflect.DeepEqual(r.Programs, progs) {
		t.Errorf("programs:\n got %+v\nwant %+v", r.Programs, progs)
	}
}

// TestArgumentPassing covers stack arguments, two-register structs and narrow returns:
// programs see every slot, the original gets them all (its hash covers them) and the
// caller gets the value at the declared width.
func TestArgumentPassing(t *testing.T) {
	cases := []struct {
		arch   btfmodel.Arch
		kernel btfmodel.Kernel
		proto  string
		width  int
	}{
		// rdi, rsi:rdx (struct), rcx, r8, r9 full; q goes wholly to the stack, e after it.
		{btfmodel.AMD64, btfmodel.Kernel612, "struct pair { u64 a; u64 b; }; long f(long x, struct pair p, long c, long d, long e, struct pair q, long g)", 8},
		{btfmodel.AMD64, btfmodel.Kernel612, "unsigned char f(char a, short b, int c, long d, void *e, u64 f, u64 g, u64 h)", 1},
		{btfmodel.AMD64, btfmodel.Kernel61, "struct pair { u64 a; u32 b; }; short f(struct pair p, int x, u64 y, u64 z)", 2},
		{btfmodel.ARM64, btfmodel.Kernel612, "struct pair { u64 a; u64 b; }; u64 f(struct pair p, int a, int b, int c, int d, struct pair q)", 8},
		{btfmodel.ARM64, btfmodel.Kernel612, "unsigned int f(void)", 4},
	}
	for _, c := range cases {
		for _, progs := range [][]jit.Prog{{{Kind: jit.Fentry}}, {{Kind: jit.Fentry}, {Kind: jit.Fexit}}} {
			r := req(c.arch, c.kernel, "", c.proto, progs...)
			m, err := r.Model()
			if err != nil {
				t.Fatal(err)
			}
			args := emu.DefaultArgs(m.NrRegs())
			rep := mustRun(t, r, emu.Options{Clobber: true})
			seen := append([]uint64{}, args...)
			if !rep.OK {
				t.Errorf("%s %s %q %d progs:%s", c.arch, c.kernel, c.proto, len(progs), failures(rep))
				continue
			}
			if got := rep.Programs[0].Ctx; !reflect.DeepEqual(got, seen) {
				t.Errorf("%q: fentry ctx %#x, want %#x", c.proto, got, seen)
			}
			if want := hash(seen, c.width); rep.Ret != want {
				t.Errorf("%q: ret %#x, want %#x", c.proto, rep.Ret, want)
			}
		}
	}
}

// TestStackGarbage: x86-64 6.12 zeroes the upper half of a lone stack slot when the last
// argument is at most 4 bytes (clean_stack_garbage), in the programs' ctx and in the
// copy the original gets; a fentry-only trampoline returns into the original, which
// reads the caller's untouched slot.
func TestStackGarbage(t *testing.T) {
	proto := "int f(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f, int g)"
	args := emu.DefaultArgs(7)
	clean := append([]uint64{}, args...)
	clean[6] &= 0xffffffff
	for _, c := range []struct {
		progs []jit.Prog
		orig  []uint64
	}{
		{[]jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit}}, clean},
		{[]jit.Prog{{Kind: jit.Fentry}}, args},
	} {
		rep := mustRun(t, req(btfmodel.AMD64, btfmodel.Kernel612, "", proto, c.progs...), emu.Options{Args: args})
		if !rep.OK {
			t.Fatalf("%d progs:%s", len(c.progs), failures(rep))
		}
		if got := rep.Programs[0].Ctx; !reflect.DeepEqual(got, clean) {
			t.Errorf("ctx %#x, want %#x", got, clean)
		}
		if want := hash(c.orig, 4); rep.Ret != want {
			t.Errorf("%d progs: ret %#x, want %#x", len(c.progs), rep.Ret, want)
		}
	}
}

// TestOracleCatches runs the kernel's own image against requests it does not implement:
// the oracle must say precisely what differs.
func TestOracleCatches(t *testing.T) {
	c, code := kernelCase(t, "6.12-amd64", "bpf_fentry_test2-fentry-fexit")
	for _, tc := range []struct {
		edit  func(*jit.Request)
		check string
		says  string
	}{
		{func(r *jit.Request) { r.Progs[0].Cookie = 5 }, emu.CheckHelperArgs, "run_ctx cookie 0x0, expected 0x5"},
		{func(r *jit.Request) { r.Progs[1].Kind = jit.Fentry }, emu.CheckOrder, "expected __bpf_prog_enter_recur (fentry #1)"},
		{func(r *jit.Request) { r.Progs[1].FuncIP = true }, emu.CheckFuncIP, "expected func"},
		{func(r *jit.Request) { r.Addrs.IM++ }, emu.CheckHelperArgs, "__bpf_tramp_enter got im"},
		{func(r *jit.Request) { r.Proto, r.BTF, r.Func = "int f(int a, u64 b, u64 c)", "", "" }, emu.CheckCtx, "ctx[2] ="},
	} {
		r := *c.Request
		a := *r.Addrs
		r.Addrs = &a
		r.Progs = append([]jit.Prog{}, r.Progs...)
		tc.edit(&r)
		rep, err := emu.RunImage(&r, code, emu.Options{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range rep.Failed() {
			found = found || f.Name == tc.check && strings.Contains(f.Detail, tc.says)
		}
		if rep.OK || !found {
			t.Errorf("want %s failing with %q, got:%s", tc.check, tc.says, failures(rep))
		}
	}
}

// TestBatch: the caller loops in emulated code and every call is checked.
func TestBatch(t *testing.T) {
	for _, p := range profiles {
		r := mustRun(t, req(p.arch, p.kernel, p.target, "int f(u64 a, u64 b)", jit.Prog{Kind: jit.Fentry}, jit.Prog{Kind: jit.Fexit}),
			emu.Options{Count: 5000})
		if !r.OK || r.Hits != 5000 || r.HitsPerSec <= 0 {
			t.Errorf("%s %s: ok %v hits %d/s %.0f:%s", p.arch, p.kernel, r.OK, r.Hits, r.HitsPerSec, failures(r))
		}
	}
}

// TestReportJSON pins the public JSON contract's keys.
func TestReportJSON(t *testing.T) {
	r := mustRun(t, req(btfmodel.AMD64, btfmodel.Kernel612, "", "int f(int a)", jit.Prog{Kind: jit.Fentry}), emu.Options{})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	json.Unmarshal(b, &top)
	want := "args checks engine hits hits_per_sec libunicorn ok original_called programs ret"
	if got := keys(top); got != want {
		t.Errorf("report keys %q, want %q", got, want)
	}
	if v := string(top["libunicorn"]); v != `"`+uc.Version()+`"` {
		t.Errorf("libunicorn %s, the library says %s", v, uc.Version())
	}
	var progs []map[string]json.RawMessage
	json.Unmarshal(top["programs"], &progs)
	if got := keys(progs[0]); got != "cookie ctx index kind ran" {
		t.Errorf("program keys %q", got)
	}
	var checks []map[string]json.RawMessage
	json.Unmarshal(top["checks"], &checks)
	if got := keys(checks[0]); got != "detail name ok" {
		t.Errorf("check keys %q", got)
	}
}

func keys[V any](m map[string]V) string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return strings.Join(k, " ")
}

// TestFaults: an access outside the mapped regions and a runaway loop are reported with
// the instruction that caused them.
func TestFaults(t *testing.T) {
	r := req(btfmodel.AMD64, btfmodel.Kernel612, "", "int f(int a)", jit.Prog{Kind: jit.Fentry})
	r.Addrs = emu.Addrs(r)
	for _, c := range []struct {
		code        []byte
		check, says string
	}{
		// push rbp; mov rbp, rsp; mov rax, [0x1000]
		{[]byte{0x55, 0x48, 0x89, 0xe5, 0x48, 0x8b, 0x04, 0x25, 0x00, 0x10, 0x00, 0x00}, emu.CheckMemory, "read of 8 bytes at 0x1000 by the instruction at image+0x4"},
		// push rbp; jmp .
		{[]byte{0x55, 0xeb, 0xfe}, emu.CheckBudget, "more than 100000 instructions per call"},
	} {
		for _, trace := range []bool{false, true} {
			rep, err := emu.RunImage(r, c.code, emu.Options{Trace: trace})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range rep.Failed() {
				found = found || f.Name == c.check && strings.Contains(f.Detail, c.says)
			}
			if rep.OK || !found {
				t.Errorf("trace %v: want %s saying %q, got:%s", trace, c.check, c.says, failures(rep))
			}
		}
	}
}

// TestReportText: the readable report names the verdict, each program and each check.
func TestReportText(t *testing.T) {
	r := mustRun(t, req(btfmodel.ARM64, btfmodel.Kernel612, "", "int f(int a)", jit.Prog{Kind: jit.Fentry, Cookie: 9}, jit.Prog{Kind: jit.ModRet}),
		emu.Options{Args: []uint64{3}, RetValues: []uint64{4}})
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ok  (unicorn, 1 call(s)", ", libunicorn " + uc.Version() + ")", "returned  0x4  (original skipped)", "fentry    yes  0x9", "fmod_ret  yes  0x0                 [0x3 0x0]", "original      ok    skipped"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}
