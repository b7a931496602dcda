package emu

import (
	"fmt"
	"sort"
	"time"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu/native"
	"github.com/trampjit/trampjit/jit"
)

// Cost per hit, measured natively (native flavour of the harness, without checks). One
// child runs, per repetition, three phases on the same mapped code, each a batch of calls
// through the caller's loop (movabs the register arguments, call the traced function,
// dec r15, jnz):
//
//	plain  the patch site is the kernel's unpatched nop5: a plain call of the function
//	stubs  the patch site calls, at the image's address, a replay of the calls the
//	       trampoline makes (call stub; ... ret), the oracle's event list minus the
//	       original: what the stubs and the calls to them cost, without the trampoline
//	tramp  the patch site calls the image
//
// The stubs do the minimum: enter returns a non-zero start, exit and the void helpers
// set eax, programs return 0 (fmod_ret: so every program and the original run). Phases
// interleave so that a slow stretch of the shared host hits all three; medians are taken
// over repetitions, of per-repetition differences for the overheads.

// CostSample is one repetition: cycles (rdtsc) and ns per hit of each phase.
type CostSample struct {
	PlainCyc, StubsCyc, TrampCyc float64
	PlainNs, StubsNs, TrampNs    float64
}

// Cost is the medians over repetitions, per hit.
type Cost struct {
	Calls, Reps int
	Samples     []CostSample
	// Medians of the phases, and of the per-repetition differences.
	PlainCyc, StubsCyc, TrampCyc float64
	OverheadCyc                  float64 // tramp - plain: what attaching costs per hit
	StubCyc                      float64 // stubs - plain: the stubs' share of it
	OwnCyc                       float64 // tramp - stubs: the trampoline's own instructions
	PlainNs, TrampNs, OverheadNs float64
}

// NativeCost measures req's trampoline (trampjit's image at NativeAddrs) natively: reps
// repetitions of calls hits per phase.
func NativeCost(req *jit.Request, calls, reps int) (*Cost, error) {
	req = nativeRequest(req)
	if err := checkNative(req); err != nil {
		return nil, err
	}
	img, m, err := Generate(req)
	if err != nil {
		return nil, err
	}
	h := nativeHarness()
	l, pr, err := h.prepare(req, m, Addrs(req), img.Code, Options{Trace: true}, nil)
	if err != nil {
		return nil, err
	}
	ip, fn := uint64(l.addrs.IP), uint64(l.addrs.Func)
	if ip == 0 {
		ip = fn
	}
	var call []byte
	for _, p := range pr.pieces {
		if p.addr == fn && p.name == "traced function" {
			call = p.code[ip-fn : ip-fn+5]
		}
	}
	if len(call) != 5 || call[0] != 0xe8 {
		return nil, fmt.Errorf("emu: no patched call at %#x", ip)
	}
	replay, err := stubReplay(l)
	if err != nil {
		return nil, err
	}
	if len(replay) > len(img.Code) {
		return nil, fmt.Errorf("emu: the stubs' replay (%d bytes) is longer than the image (%d)", len(replay), len(img.Code))
	}
	plan := nativePlan(l, pr)
	regs := l.canaryRegs(calls)
	nop5 := []byte{0x0f, 0x1f, 0x44, 0x00, 0x00}
	plan.Phases = []native.Phase{
		{Regs: regs, SP: sp0, Entry: callerBase, Patches: []native.Patch{{Addr: ip, Data: nop5}}},
		{Regs: regs, SP: sp0, Entry: callerBase, Patches: []native.Patch{{Addr: ip, Data: call}, {Addr: l.image, Data: replay}}},
		{Regs: regs, SP: sp0, Entry: callerBase, Patches: []native.Patch{{Addr: l.image, Data: img.Code}}},
	}
	plan.Reps, plan.Pin = reps, true
	plan.Tick = time.Second // a phase's calls take ~100 ns each
	plan.Deadline = 10*time.Second + time.Duration(reps*calls)*3*time.Microsecond
	res, err := native.Exec(plan)
	if err != nil {
		return nil, err
	}
	if res.Status != native.StatusSentinel || res.Sentinel != l.done || res.Reps != reps {
		return nil, fmt.Errorf("emu: cost run of %s ended %s after %d repetitions", req.Proto, nativeFailure(l, res), res.Reps)
	}
	c := &Cost{Calls: calls, Reps: reps}
	n := float64(calls)
	for r := range res.Cycles {
		cy, ns := res.Cycles[r], res.Nanos[r]
		c.Samples = append(c.Samples, CostSample{float64(cy[0]) / n, float64(cy[1]) / n, float64(cy[2]) / n,
			float64(ns[0]) / n, float64(ns[1]) / n, float64(ns[2]) / n})
	}
	med := func(f func(s CostSample) float64) float64 { return Median(c.Samples, f) }
	c.PlainCyc = med(func(s CostSample) float64 { return s.PlainCyc })
	c.StubsCyc = med(func(s CostSample) float64 { return s.StubsCyc })
	c.TrampCyc = med(func(s CostSample) float64 { return s.TrampCyc })
	c.OverheadCyc = med(func(s CostSample) float64 { return s.TrampCyc - s.PlainCyc })
	c.StubCyc = med(func(s CostSample) float64 { return s.StubsCyc - s.PlainCyc })
	c.OwnCyc = med(func(s CostSample) float64 { return s.TrampCyc - s.StubsCyc })
	c.PlainNs = med(func(s CostSample) float64 { return s.PlainNs })
	c.TrampNs = med(func(s CostSample) float64 { return s.TrampNs })
	c.OverheadNs = med(func(s CostSample) float64 { return s.TrampNs - s.PlainNs })
	return c, nil
}

// Median of f over the samples (the mean of the middle two for an even count).
func Median[T any](s []T, f func(T) float64) float64 {
	if len(s) == 0 {
		return 0
	}
	v := make([]float64, len(s))
	for i := range s {
		v[i] = f(s[i])
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// stubReplay is code for the image's address that calls every stub the trampoline calls,
// in the oracle's order (the original excepted: the replay returns into it), then returns.
func stubReplay(l *Loaded) ([]byte, error) {
	var a x86asm
	for _, e := range l.exp.events {
		var to uint64
		switch e.kind {
		case evOrig:
			continue
		case evProg:
			to = uint64(l.addrs.Progs[e.prog].BPFFunc)
		default:
			to = uint64(l.addrs.Helpers[e.name])
		}
		var err error
		if a, err = a.rel32(0xe8, l.image+uint64(len(a)), to); err != nil {
			return nil, err
		}
	}
	return append(a, 0xc3), nil
}

// CostRequest is the request the cost benchmarks measure: n programs of one kind (or
// "fentry+fexit": n/2 of each) on a vfs_read-shaped function, x86_64, the default profile.
func CostRequest(kind string, n int) (*jit.Request, error) {
	r := &jit.Request{Arch: btfmodel.AMD64, Kernel: btfmodel.DefaultKernel,
		Proto: "long vfs_read(void *file, char *buf, unsigned long count, long *pos)"}
	for i := 0; i < n; i++ {
		k := jit.Kind(kind)
		if kind == "fentry+fexit" {
			k = jit.Fentry
			if i%2 == 1 {
				k = jit.Fexit
			}
		}
		switch k {
		case jit.Fentry, jit.Fexit, jit.ModRet:
		default:
			return nil, fmt.Errorf("emu: no cost request for %q", kind)
		}
		r.Progs = append(r.Progs, jit.Prog{Kind: k})
	}
	return r, nil
}
