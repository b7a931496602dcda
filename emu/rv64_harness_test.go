package emu_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/jit"
)

// Addresses in the shape of a Debian riscv64 (Sv39) boot: the image in the BPF region
// below kernel text, the function and helpers in kernel text, struct bpf_prog in vmalloc.
var rvAddrs = func() *jit.Addrs {
	a := &jit.Addrs{Image: 0xffffffff7800e000, Func: 0xffffffff80a1b2c0, IP: 0xffffffff80a1b2c0,
		IM: 0xffffffd80a3b4c00, Helpers: map[string]jit.Addr{
			jit.HelperTrampEnter: 0xffffffff801f0a10, jit.HelperTrampExit: 0xffffffff801f0a90,
			"__bpf_prog_enter_recur": 0xffffffff801f0600, "__bpf_prog_exit_recur": 0xffffffff801f0700,
			"__bpf_prog_enter": 0xffffffff801f0580, "__bpf_prog_exit": 0xffffffff801f0680,
		}}
	for i := 0; i < 4; i++ {
		a.Progs = append(a.Progs, jit.ProgAddrs{Prog: jit.Addr(0xffffffc6000a1000 + 0x2000*uint64(i)),
			BPFFunc: jit.Addr(0xffffffff7800c000 + 0x200*uint64(i))})
	}
	return a
}()

// rvTramp writes a trampoline the way arch/riscv/net/bpf_jit_comp64.c's
// __arch_prepare_bpf_trampoline lays it out on 6.12 (frames from s0, slots, run_ctx and
// s1 at their offsets, invoke_bpf_prog's blocks), as GNU assembler source. Calls are
// auipc t1 + jalr ra, as emit_call's, resolved by the linker at the image's address.
type rvTramp struct {
	slots  int
	progs  []jit.Prog // fentry, fexit, fmod_ret; in attach order
	ipArg  bool
	breaks string // "clobber-s2", "ctx-slot", "skip-prog": the broken variants
	target string // "bpf": a BPF program's entry, patched by bpf_arch_text_poke
}

// rvBPFTarget is a traced BPF program's bpf_func, in the BPF region next to the image.
const rvBPFTarget = 0xffffffff7800d000

func (p *rvTramp) asm(a *jit.Addrs) string {
	var b strings.Builder
	e := func(f string, a ...any) { fmt.Fprintf(&b, "\t"+f+"\n", a...) }
	callOrig := false
	for _, pr := range p.progs {
		callOrig = callOrig || pr.Kind != jit.Fentry
	}
	// Layout, arch/riscv/net/bpf_jit_comp64.c.
	st := 16
	retval := 0
	if callOrig {
		st += 16
		retval = st
	}
	st += 8 * p.slots
	args := st
	st += 8
	nregs := st
	ip := 0
	if p.ipArg {
		st += 8
		ip = st
	}
	st += 16
	runCtx := st
	st += 8
	sreg := st
	if callOrig && p.slots > 8 {
		st += 8 * (p.slots - 8)
	}
	S := (st + 15) &^ 15
	call := func(sym string) {
		fmt.Fprintf(&b, "1:\tauipc t1, %%pcrel_hi(%s)\n\tjalr ra, %%pcrel_lo(1b)(t1)\n", sym)
	}
	e("addi sp, sp, -16")
	e("sd ra, 8(sp)")
	e("sd s0, 0(sp)")
	e("addi s0, sp, 16")
	e("addi sp, sp, -%d", S)
	e("sd t0, %d(sp)", S-8)
	e("sd s0, %d(sp)", S-16)
	e("addi s0, sp, %d", S)
	e("sd s1, -%d(s0)", sreg)
	if p.ipArg {
		e("li t1, %#x", uint64(a.Func))
		e("sd t1, -%d(s0)", ip)
	}
	e("li t1, %d", p.slots)
	e("sd t1, -%d(s0)", nregs)
	for k := 0; k < p.slots; k++ {
		off := args - 8*k
		if p.breaks == "ctx-slot" && k == 1 {
			off -= 8 // slot 1 written over slot 2's place
		}
		if k < 8 {
			e("sd a%d, -%d(s0)", k, off)
		} else {
			e("ld t1, %d(s0)", 16+8*(k-8))
			e("sd t1, -%d(s0)", off)
		}
	}
	if callOrig {
		e("li a0, %#x", uint64(a.IM))
		call("TRAMP_ENTER")
	}
	block := func(i int, save bool) {
		pr := p.progs[i]
		if pr.Cookie != 0 {
			e("li t1, %d", pr.Cookie)
			e("sd t1, -%d(s0)", runCtx)
		} else {
			e("sd zero, -%d(s0)", runCtx)
		}
		e("li a0, %#x", uint64(a.Progs[i].Prog))
		e("addi a1, s0, -%d", runCtx)
		call("ENTER")
		e("mv s1, a0")
		e("beqz a0, 2f")
		e("addi a0, s0, -%d", args)
		if p.breaks != "skip-prog" || i != 0 {
			call(fmt.Sprintf("BPF_FUNC%d", i))
		}
		if save {
			e("sd a0, -%d(s0)", retval)
			e("sd a5, -%d(s0)", retval-8)
		}
		fmt.Fprintf(&b, "2:\tli a0, %#x\n", uint64(a.Progs[i].Prog))
		e("mv a1, s1")
		e("addi a2, s0, -%d", runCtx)
		call("EXIT")
	}
	for _, kind := range []jit.Kind{jit.Fentry, jit.ModRet, jit.Fexit} {
		if kind == jit.ModRet && hasKind(p.progs, kind) {
			e("sd zero, -%d(s0)", retval)
		}
		for i := len(p.progs) - 1; i >= 0; i-- {
			if p.progs[i].Kind != kind {
				continue
			}
			block(i, kind == jit.ModRet)
			if kind == jit.ModRet {
				e("ld t1, -%d(s0)", retval)
				e("bnez t1, 3f")
			}
		}
		if kind == jit.ModRet && callOrig {
			for k := 0; k < min(p.slots, 8); k++ {
				e("ld a%d, -%d(s0)", k, args-8*k)
			}
			for j := 0; j < p.slots-8; j++ {
				e("ld t1, -%d(s0)", args-64-8*j)
				e("sd t1, -%d(s0)", S-8*j)
			}
			call("FUNC+8")
			e("sd a0, -%d(s0)", retval)
			e("sd a5, -%d(s0)", retval-8)
			e("nop")
			e("nop")
			b.WriteString("3:\n")
		}
	}
	if callOrig {
		e("li a0, %#x", uint64(a.IM))
		call("TRAMP_EXIT")
	} else {
		for k := 0; k < min(p.slots, 8); k++ {
			e("ld a%d, -%d(s0)", k, args-8*k)
		}
	}
	if callOrig {
		e("ld a0, -%d(s0)", retval)
		e("ld a5, -%d(s0)", retval-8)
	}
	if p.breaks == "clobber-s2" {
		e("li s2, 0")
	}
	e("ld s1, -%d(s0)", sreg)
	e("ld t0, %d(sp)", S-8)
	e("ld s0, %d(sp)", S-16)
	e("addi sp, sp, %d", S)
	e("ld ra, 8(sp)")
	e("ld s0, 0(sp)")
	e("addi sp, sp, 16")
	if callOrig {
		e("jr ra")
	} else {
		e("jr t0")
	}
	return b.String()
}

func hasKind(ps []jit.Prog, k jit.Kind) bool {
	for _, p := range ps {
		if p.Kind == k {
			return true
		}
	}
	return false
}

// link assembles src with GNU as (rv64gc: compressed forms wherever as chooses them) and
// links it at a's image address with the symbols it calls.
func (p *rvTramp) link(t *testing.T, a *jit.Addrs) []byte {
	t.Helper()
	as, err := exec.LookPath("riscv64-linux-gnu-as")
	if err != nil {
		t.Skip("riscv64-linux-gnu-as not installed (binutils-riscv64-linux-gnu)")
	}
	dir := t.TempDir()
	s, o, elf, bin := filepath.Join(dir, "t.s"), filepath.Join(dir, "t.o"), filepath.Join(dir, "t.elf"), filepath.Join(dir, "t.bin")
	if err := os.WriteFile(s, []byte(".text\n"+p.asm(a)), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s\n%s", name, err, out, p.asm(a))
		}
	}
	run(as, "-march=rv64gc", "-mno-relax", "-o", o, s)
	sym := func(n string, v jit.Addr) string { return fmt.Sprintf("--defsym=%s=%#x", n, uint64(v)) }
	largs := []string{"--no-relax", "-Ttext=" + fmt.Sprintf("%#x", uint64(a.Image)), "-o", elf,
		sym("FUNC", a.Func), sym("IM", a.IM),
		sym("TRAMP_ENTER", a.Helpers[jit.HelperTrampEnter]), sym("TRAMP_EXIT", a.Helpers[jit.HelperTrampExit]),
		sym("ENTER", a.Helpers["__bpf_prog_enter_recur"]), sym("EXIT", a.Helpers["__bpf_prog_exit_recur"])}
	for i, pa := range a.Progs {
		largs = append(largs, sym(fmt.Sprintf("PROG%d", i), pa.Prog), sym(fmt.Sprintf("BPF_FUNC%d", i), pa.BPFFunc))
	}
	run("riscv64-linux-gnu-ld", append(largs, o)...)
	run("riscv64-linux-gnu-objcopy", "-O", "binary", "-j", ".text", elf, bin)
	code, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func rvRequest(proto string, a *jit.Addrs, progs ...jit.Prog) *jit.Request {
	aa := *a
	aa.Progs = a.Progs[:len(progs)]
	return &jit.Request{Arch: btfmodel.RISCV64, Kernel: btfmodel.Kernel612, Proto: proto, Progs: progs, Addrs: &aa}
}

// rvRun runs code checked in emulated code and traced by Go hooks; both must agree.
func rvRun(t *testing.T, r *jit.Request, code []byte, o emu.Options) *emu.Report {
	t.Helper()
	rep, err := emu.RunImage(r, code, o)
	if err != nil {
		t.Fatal(err)
	}
	o.Trace = true
	tr, err := emu.RunImage(r, code, o)
	if err != nil {
		t.Fatal(err)
	}
	a, b := *rep, *tr
	a.HitsPerSec, b.HitsPerSec = 0, 0
	if !reflect.DeepEqual(a, b) {
		t.Errorf("checked in emulated code and traced differ:\n%+v\n%+v", a, b)
	}
	return rep
}

func failed(r *emu.Report) []string {
	var out []string
	for _, c := range r.Checks {
		if !c.OK {
			out = append(out, c.Name+": "+c.Detail)
		}
	}
	return out
}

// TestRV64Harness runs GNU-assembled trampolines in the kernel's riscv64 shape through
// the harness: they pass the oracle, and each broken variant fails the check it breaks.
func TestRV64Harness(t *testing.T) {
	ten := "u64 f(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f, u64 g, u64 h, u64 i, u64 j)"
	cases := []struct {
		name  string
		proto string
		tr    rvTramp
		o     emu.Options
		fail  string // the check that must fail; "" passes
	}{
		{"fentry-fexit", "int f(int a, u64 b)", rvTramp{slots: 2, progs: []jit.Prog{{Kind: jit.Fentry, Cookie: 0x77}, {Kind: jit.Fexit}}}, emu.Options{Count: 3}, ""},
		{"fentry-only", "int f(int a, u64 b)", rvTramp{slots: 2, progs: []jit.Prog{{Kind: jit.Fentry}}}, emu.Options{Clobber: true}, ""},
		{"fexit-ip", "u64 f(u64 a)", rvTramp{slots: 1, ipArg: true, progs: []jit.Prog{{Kind: jit.Fexit, FuncIP: true}}}, emu.Options{Clobber: true}, ""},
		{"fmod_ret-skips", "int f(int a, u64 b)", rvTramp{slots: 2, progs: []jit.Prog{{Kind: jit.ModRet}, {Kind: jit.ModRet}, {Kind: jit.Fexit}}},
			emu.Options{RetValues: []uint64{0, 0x1_0000_0007}}, ""},
		{"fmod_ret-runs", "int f(int a, u64 b)", rvTramp{slots: 2, progs: []jit.Prog{{Kind: jit.ModRet}, {Kind: jit.Fexit}}},
			emu.Options{RetValues: []uint64{0x1_0000_0000}}, ""}, // a0 = sext32(R0) = 0: the original runs
		{"stack-args", ten, rvTramp{slots: 10, progs: []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit}}}, emu.Options{Clobber: true, Count: 2}, ""},
		{"stack-args-fentry", ten, rvTramp{slots: 10, progs: []jit.Prog{{Kind: jit.Fentry}}}, emu.Options{}, ""},
		{"struct-split", "u64 f(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f, u64 g, struct { u64 x; u64 y; } s)",
			rvTramp{slots: 9, progs: []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit}}}, emu.Options{}, ""},
		{"24-slots", "u64 f(" + strings.Repeat("struct { u64 x; u64 y; } s, ", 11) + "struct { u64 x; u64 y; } l)",
			rvTramp{slots: 24, progs: []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit}}}, emu.Options{Clobber: true}, ""},
		{"miss", "int f(int a, u64 b)", rvTramp{slots: 2, progs: []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit}}}, emu.Options{Miss: []int{0}}, ""},
		{"bpf-target", "int f(u64 a, u64 b)", rvTramp{slots: 2, progs: []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit}}, target: "bpf"}, emu.Options{Clobber: true}, ""},
		{"bpf-target-fentry", "int f(u64 a, u64 b)", rvTramp{slots: 2, progs: []jit.Prog{{Kind: jit.Fentry}}, target: "bpf"}, emu.Options{}, ""},
		{"clobbered-s2", "int f(int a, u64 b)", rvTramp{slots: 2, breaks: "clobber-s2", progs: []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit}}}, emu.Options{}, emu.CheckCalleeSaved},
		{"wrong-ctx-slot", "int f(int a, u64 b, u64 c)", rvTramp{slots: 3, breaks: "ctx-slot", progs: []jit.Prog{{Kind: jit.Fentry}}}, emu.Options{}, emu.CheckCtx},
		{"skipped-prog", "int f(int a, u64 b)", rvTramp{slots: 2, breaks: "skip-prog", progs: []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit}}}, emu.Options{}, emu.CheckOrder},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := rvAddrs
			if c.tr.target == "bpf" {
				aa := *rvAddrs
				aa.Func, aa.IP = rvBPFTarget, rvBPFTarget
				a = &aa
			}
			code := c.tr.link(t, a)
			r := rvRequest(c.proto, a, c.tr.progs...)
			r.Target = c.tr.target
			rep := rvRun(t, r, code, c.o)
			fails := failed(rep)
			if c.fail == "" {
				if !rep.OK {
					t.Fatalf("failed: %v", fails)
				}
				if rep.Hits != uint64(max(c.o.Count, 1)) {
					t.Errorf("%d hits", rep.Hits)
				}
				return
			}
			if rep.OK || len(fails) == 0 || !strings.HasPrefix(fails[0], c.fail+":") {
				t.Fatalf("want %s to fail first, got %v", c.fail, fails)
			}
			t.Logf("%v", fails)
		})
	}
}

// TestRV64Mutants measures what the oracle catches on riscv64: the immediates and
// offsets of GNU-assembled kernel-shaped trampolines, flipped one at a time (92% when
// written). The survivors seen are equivalent for these requests: the first frame's s0
// (a frame-record pointer only an unwinder reads), the t0 and s0 saves the epilogue
// reloads and then overwrites or never uses (SKIP_FRAME returns through ra), the a5
// reload before `jr ra` (a5 matters only to struct_ops), a branch landing on the nops or
// the a5 store just before its target, and a5 stored over the a0 slot, which only a
// program returning a0 != a5 (a value wider than 32 bits) shows.
func TestRV64Mutants(t *testing.T) {
	proto := "long f(int a, u64 b, u64 c)"
	trs := []rvTramp{
		{slots: 3, ipArg: true, progs: []jit.Prog{{Kind: jit.Fentry, Cookie: 0x1234567, FuncIP: true}, {Kind: jit.ModRet}, {Kind: jit.Fexit, Cookie: 3}}},
		{slots: 3, progs: []jit.Prog{{Kind: jit.Fentry, Cookie: 5}}},
		{slots: 10, progs: []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit, Cookie: 9}}},
	}
	protos := []string{proto, proto, "u64 f(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f, u64 g, u64 h, u64 i, u64 j)"}
	for _, trace := range []bool{false, true} {
		var killed, total int
		for i, tr := range trs {
			code := tr.link(t, rvAddrs)
			r := rvRequest(protos[i], rvAddrs, tr.progs...)
			k, n := killRate(t, fmt.Sprintf("riscv64 %d", i), r, code, trace)
			killed, total = killed+k, total+n
		}
		rate := float64(killed) / float64(total)
		t.Logf("trace=%v: kill rate %d/%d = %.1f%%", trace, killed, total, 100*rate)
		if total < 150 || rate < 0.9 {
			t.Errorf("kill rate %d/%d too low", killed, total)
		}
	}
}
