package emu

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu/native"
	uc "github.com/trampjit/trampjit/emu/unicorn"
	"github.com/trampjit/trampjit/jit"
)

// The native engine (Options.Engine "native") runs x86-64 images on the host CPU, in a
// forked child (emu/native), with the same harness as Unicorn: prepare lays out the same
// traced function, stubs and checking caller, and builds the same script; only the
// sentinels differ (target x86's exit flavour: a call back to the child's exit routine
// instead of hlt). The harness's own memory (caller, stack, script) sits at the same low
// addresses as in the emulator. A run passes iff the caller's loop reached its done
// sentinel and the caller's frame is intact; anything else (a failed check, a signal, a
// timeout) is replayed under Unicorn with Go hooks at the same addresses, which names
// the check, as for an emulated failure.

// EngineNative and EngineUnicorn are the values of Options.Engine.
const (
	EngineUnicorn = "unicorn"
	EngineNative  = "native"
)

// NativeSupported says whether this host runs the native engine (x86_64 Linux).
const NativeSupported = native.Supported

// nativeBase is where NativeAddrs moves the synthetic layout's kernel text: the lower
// half, far from the Go heap (0xc000000000) and shared libraries (0x7fxx...).
const nativeBase = 0x7e0000000000

// NativeAddrs is jit.Synthetic's x86_64 layout moved into user space: image, programs'
// code, traced function and helpers keep their relative places (all within rel32 reach,
// ~1 GiB apart), struct bpf_prog and im get user-space values too (never dereferenced).
func NativeAddrs(k btfmodel.Kernel, nprogs int) *jit.Addrs {
	a := jit.Synthetic(btfmodel.AMD64, k, nprogs)
	text := func(x jit.Addr) jit.Addr { return x - 0xffffffff80000000 + nativeBase }
	a.Image, a.Func, a.IP = text(a.Image), text(a.Func), text(a.IP)
	a.IM = nativeBase - 0x100000000
	for i := range a.Progs {
		a.Progs[i] = jit.ProgAddrs{Prog: jit.Addr(nativeBase - 0x80000000 + uint64(i)*0x1000), BPFFunc: text(a.Progs[i].BPFFunc)}
	}
	for n, v := range a.Helpers {
		a.Helpers[n] = text(v)
	}
	return a
}

// nativeRequest gives req user-space addresses when it has none.
func nativeRequest(req *jit.Request) *jit.Request {
	if req.Addrs != nil {
		return req
	}
	r := *req
	r.Addrs = NativeAddrs(req.Kernel, len(req.Progs))
	if req.StructOps != nil {
		r.Addrs.Func, r.Addrs.IP, r.Addrs.IM = 0, 0, 0 // no traced function, no bpf_tramp_image
	}
	return &r
}

// checkNative refuses what the native engine cannot run.
func checkNative(req *jit.Request) error {
	if !native.Supported {
		_, err := native.Exec(nil)
		return err
	}
	if req.Arch != btfmodel.AMD64 {
		return fmt.Errorf("emu: the native engine runs x86_64 images only, not %s", req.Arch)
	}
	a := Addrs(req)
	all := []jit.Addr{a.Image}
	if req.StructOps == nil {
		all = append(all, a.Func, a.IP)
	}
	for _, p := range a.Progs {
		all = append(all, p.BPFFunc)
	}
	for _, v := range a.Helpers {
		all = append(all, v)
	}
	for _, v := range all {
		if v >= 0x800000000000 || v < 0x10000000 {
			return fmt.Errorf("emu: the native engine needs user-space addresses (above 0x10000000, below 0x800000000000); %#x is not (a kernel capture runs under unicorn only)", uint64(v))
		}
	}
	return nil
}

// nativeHarness is an engine-less harness whose target ends runs natively.
func nativeHarness() *Harness {
	return &Harness{arch: btfmodel.AMD64, tg: x86{exit: native.ExitAddr()}}
}

// nativePlan is the child's memory for l: the harness's caller, stack (the caller's frame
// at sp0, poison below it) and script, and every piece's page run.
func nativePlan(l *Loaded, pr *prepared) *native.Plan {
	stack := make([]byte, stackSize)
	copy(stack[sp0-stackBase:], l.frame)
	copy(stack[sp0-stackBase-poisonLen:], stackPoison[:])
	regions := []native.Region{
		{Addr: callerBase, Size: pageUp(len(pr.caller)), Data: pr.caller, Prot: native.ProtRX},
		{Addr: stackBase, Size: stackSize, Data: stack, Prot: native.ProtRW},
	}
	if len(pr.script) > 0 {
		regions = append(regions, native.Region{Addr: scriptBase, Size: scriptSize, Data: pr.script, Prot: native.ProtR})
	}
	for _, r := range pageRuns(pr.pieces) {
		data := make([]byte, r[1])
		for _, p := range pr.pieces {
			if p.addr >= r[0] && p.addr < r[0]+r[1] {
				copy(data[p.addr-r[0]:], p.code)
			}
		}
		regions = append(regions, native.Region{Addr: r[0], Size: r[1], Data: data, Prot: native.ProtRX})
	}
	return &native.Plan{Regions: regions, Readback: [2]uint64{sp0, frameLen}}
}

func pageUp(n int) uint64 { return (uint64(n) + 4095) &^ 4095 }

// canaryRegs are the caller's callee-saved registers at entry (rbx, rbp, r12..r15, as
// x86.calleeSaved orders them), the last one the loop counter.
func (l *Loaded) canaryRegs(n int) [6]uint64 {
	var r [6]uint64
	copy(r[:], l.canary)
	r[5] = uint64(n)
	return r
}

// nativeTick is the per-call budget natively, where no instruction is counted: a quarter
// second plus a nanosecond per instruction of Options.Budget (a correct call of a
// 38-program trampoline takes a few microseconds), whatever the count: the child's
// watchdog ends a run in which no call has returned for a whole tick.
func nativeTick(budget uint64) time.Duration {
	return 250*time.Millisecond + time.Duration(budget)
}

// nativeDeadline bounds the whole child: the parent kills it then (a backstop for an
// image that defeats the watchdog, e.g. by changing the loop counter). 20 µs per call is
// several times what the largest trampoline needs.
func nativeDeadline(n int, tick time.Duration) time.Duration {
	return 2*tick + time.Second + time.Duration(n)*20*time.Microsecond
}

// ErrUntrustedNative is RunImage's refusal of the native engine without
// Options.UntrustedNative.
var ErrUntrustedNative = errors.New("emu: refusing to run an image trampjit did not generate on this CPU without " +
	"Options.UntrustedNative (trampjit run --untrusted-native): it would run, confined (no descriptors, seccomp: no system calls), but natively")

// checkUntrusted refuses to run bytes trampjit did not generate natively unless
// opts.UntrustedNative says so: even confined, they run on this CPU. What the native
// engine cannot run at all (kernel addresses, arm64) is said first.
func checkUntrusted(req *jit.Request, opts Options) error {
	if opts.Engine != EngineNative {
		return nil
	}
	if err := checkNative(req); err != nil {
		return err
	}
	if !opts.UntrustedNative {
		return ErrUntrustedNative
	}
	return nil
}

// runNative runs code natively n = opts.Count times, checked in the generated code.
// The caller holds shared's lock (a failure is replayed on the shared Unicorn harness).
func runNative(req *jit.Request, m *btfmodel.FuncModel, code []byte, opts Options) (*Report, error) {
	if err := checkNative(req); err != nil {
		return nil, err
	}
	opts.Trace = false // the checks run in the generated code; Go hooks do not exist natively
	n := max(opts.Count, 1)
	h := nativeHarness()
	l, pr, err := h.prepare(req, m, Addrs(req), code, opts, make([]byte, scriptSize))
	if err != nil {
		return nil, err
	}
	plan := nativePlan(l, pr)
	plan.Phases = []native.Phase{{Regs: l.canaryRegs(n), SP: sp0, Entry: callerBase}}
	plan.Tick = nativeTick(l.opts.Budget)
	plan.Deadline = nativeDeadline(n, plan.Tick)
	res, err := native.Exec(plan)
	if err != nil {
		return nil, err
	}
	if res.Status == native.StatusSentinel && res.Sentinel == l.done && bytes.Equal(res.Readback, l.frame) {
		l.first = append([]event(nil), l.exp.events...)
		l.firstR, l.haveR, l.hits, l.count = l.exp.ret, true, uint64(n), n
		r := l.report(uc.Exit{}, nil)
		r.Engine = EngineNative
		setCheck(r, CheckBudget, fmt.Sprintf("every call returned within %v (native: a timeout, no instruction count)", plan.Tick))
		if ns := res.Nanos[0][0]; ns > 0 {
			r.HitsPerSec = float64(n) / (float64(ns) / 1e9)
		}
		return r, nil
	}
	// Which call failed: the loop counter counts down after each checked call.
	k := n
	if v := res.Regs[native.R15]; v >= 1 && v <= uint64(n) {
		k = n - int(v) + 1
	}
	what := nativeFailure(l, res)
	hu, err := harnessFor(btfmodel.AMD64)
	if err != nil {
		return nil, err
	}
	r, err := l.replay(hu, k, what)
	if err != nil {
		return nil, err
	}
	r.Engine = EngineNative
	if res.Status != native.StatusSentinel {
		nativeRunCheck(r, fmt.Sprintf("natively, call %d %s", k, what))
	}
	return r, nil
}

// nativeRunCheck makes r's run check one failure saying what the CPU did, then what the
// emulator's replay found wrong with the run, if anything (a replay that passed says
// nothing more).
func nativeRunCheck(r *Report, cpu string) {
	var checks []Check
	at := -1
	for _, c := range r.Checks {
		if c.Name != CheckRun {
			checks = append(checks, c)
			continue
		}
		if at < 0 {
			at = len(checks)
			checks = append(checks, Check{Name: CheckRun, Detail: cpu})
		}
		if !c.OK && !strings.Contains(c.Detail, "but its traced replay passed") {
			checks[at].Detail = joinDetail(checks[at].Detail, c.Detail)
		}
	}
	if at < 0 {
		checks = append(checks, Check{Name: CheckRun, Detail: cpu})
	}
	r.Checks, r.OK = checks, false
}

// nativeFailure says how a native run failed.
func nativeFailure(l *Loaded, res *native.Result) string {
	switch res.Status {
	case native.StatusSignal:
		return fmt.Sprintf("ended by %v (code %d, address %#x) at %s", res.Signal, res.Code, res.Addr, l.where(res.PC))
	case native.StatusTimeout:
		if res.Deadline {
			return "did not return (timeout: the child was killed at its deadline)"
		}
		return fmt.Sprintf("did not return (timeout, pc %s)", l.where(res.PC))
	case native.StatusSyscall:
		if res.Syscall < 0 {
			return "made a system call of another ABI (int 0x80 or x32): refused, the child was killed"
		}
		return fmt.Sprintf("made a system call (nr %d, %s): refused (at %s)", res.Syscall, native.SyscallName(res.Syscall), l.where(res.PC))
	case native.StatusKilled:
		return fmt.Sprintf("killed the child (%v) without a result: the image broke the harness", res.Signal)
	case native.StatusSentinel:
		if res.Sentinel == l.done {
			return "changed the caller's frame"
		}
		return "failed the check at " + l.where(res.Sentinel) + " natively"
	}
	return fmt.Sprintf("ended with status %d", res.Status)
}

func setCheck(r *Report, name, detail string) {
	for i := range r.Checks {
		if r.Checks[i].Name == name {
			r.Checks[i].Detail = detail
		}
	}
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
