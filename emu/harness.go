package emu

import (
	"errors"
	"fmt"
	"time"

	"github.com/trampjit/trampjit/btfmodel"
	uc "github.com/trampjit/trampjit/emu/unicorn"
	"github.com/trampjit/trampjit/jit"
)

// Guest layout of the harness's own memory, below every kernel address.
const (
	// callerBase's page bits put the caller's blocks in a jump-cache slot range of
	// their own (page bits xor-fold into the slot, jmpcache_test.go): at 0x10000 the
	// arm64 caller's return point evicted bpf_func#1 on every hit.
	callerBase = 0xa8000
	stackBase  = 0x100000
	stackSize  = 0x10000
	sp0        = stackBase + 0xe000 // sp at the caller's call instruction
	frameLen   = 0x200              // caller frame above sp0 (stack args, then canaries)
	poisonLen  = 0x1000             // below sp0, refilled before every Call
	startValue = 0x57a7_0000_0001   // what enter helpers return: non-zero, recognisable
)

// Harness is one Unicorn engine with the harness's caller and stack mapped; Load maps a
// trampoline and its surroundings, Call runs it. Not safe for concurrent use.
type Harness struct {
	e     *uc.Engine
	arch  btfmodel.Arch
	tg    target
	stack []byte // host view of [stackBase, stackBase+stackSize)

	maps      [][2]uint64
	hooks     []uc.Hook
	sentinels []uint64
	script    []byte // host view of the native checks' script
	cur       *Loaded
}

// NewHarness opens an engine for arch.
func NewHarness(arch btfmodel.Arch) (*Harness, error) {
	tg, err := targetFor(arch)
	if err != nil {
		return nil, err
	}
	e, err := uc.Open(tg.ucArch())
	if err != nil {
		return nil, err
	}
	h := &Harness{e: e, arch: arch, tg: tg}
	if err := e.Map(callerBase, uc.PageSize, uc.ProtRead|uc.ProtExec); err != nil {
		e.Close()
		return nil, err
	}
	if h.stack, err = e.MapHost(stackBase, stackSize, uc.ProtRead|uc.ProtWrite); err != nil {
		e.Close()
		return nil, err
	}
	// Pushes and stack stores are most of a trampoline's emulated time.
	if err := e.FastStores(stackBase, stackBase+stackSize); err != nil {
		e.Close()
		return nil, err
	}
	if h.script, err = e.MapHost(scriptBase, scriptSize, uc.ProtRead); err != nil {
		e.Close()
		return nil, err
	}
	return h, nil
}

// Close frees the engine.
func (h *Harness) Close() error { return h.e.Close() }

// Loaded is a trampoline mapped in a harness with everything it calls, and the oracle's
// expectation for a call.
type Loaded struct {
	h      *Harness
	req    *jit.Request
	m      *btfmodel.FuncModel
	addrs  *jit.Addrs
	opts   Options
	exp    *expectation
	image  uint64
	code   []byte
	entry  uint64
	body   uint64
	after  uint64
	done   uint64
	locs   []slotLoc
	nstack int
	canary []uint64
	frame  []byte // the caller's frame above sp0, as written

	progByPtr map[uint64]int
	// per-call state, reset by each hit
	ev       []event
	runCtx   uint64 // the latest enter's run_ctx: what current->bpf_ctx points at
	count    int
	hits     uint64
	first    []event
	firstR   uint64
	haveR    bool
	fail     *checker
	regsBuf  []uint64
	outRegs  []uc.Reg
	hookRegs [][]uc.Reg // hookRegs[n]: n argument registers, then rsp or x30
	chk      checker    // reused by every call's check
	okRep    *Report    // the report of a passing natively checked run
	inRegs   []uc.Reg   // written before each Call: callee-saved, then sp
	inVals   []uint64
	faulted  bool // the last traced run ended on a memory fault
	// landing are a struct_ops image's entry problems (structOpsLanding): the indirect
	// call would fault there.
	landing []string
}

// Load maps code (the image bytes, at addrs.Image) for req with the given model and
// options, and computes the oracle's expectation.
func (h *Harness) Load(req *jit.Request, m *btfmodel.FuncModel, addrs *jit.Addrs, code []byte, o Options) (*Loaded, error) {
	if err := h.unload(); err != nil {
		return nil, err
	}
	l, pr, err := h.prepare(req, m, addrs, code, o, h.script)
	if err != nil {
		return nil, err
	}
	if err := h.mapPieces(pr.pieces); err != nil {
		return nil, err
	}
	if l.opts.Trace {
		if err := h.installHooks(l, pr.pieces); err != nil {
			return nil, err
		}
	}
	if err := h.e.Write(callerBase, pr.caller); err != nil {
		return nil, err
	}
	for _, a := range append(pr.fails, l.done) {
		// Halt sentinels: a code hook would be visited by every counted instruction.
		if err := h.e.AddSentinel(a, uc.SentinelHalt); err != nil {
			return nil, err
		}
		h.sentinels = append(h.sentinels, a)
	}
	if l.opts.Trace {
		if err := h.hook(l.after, l.afterHook); err != nil {
			return nil, err
		}
	}
	h.cur = l
	return l, nil
}

// prepared is the code a Loaded needs mapped: what Load gives Unicorn and the native
// engine gives a child process.
type prepared struct {
	pieces []piece
	fails  []uint64 // fail addresses of the checks (checked mode)
	caller []byte   // at callerBase
	script []byte   // the checks' script, at scriptBase (checked mode)
}

// prepare computes the oracle's expectation and lays out everything around the image,
// without touching an engine (h.tg only). script receives the checks' script unless
// o.Trace.
func (h *Harness) prepare(req *jit.Request, m *btfmodel.FuncModel, addrs *jit.Addrs, code []byte, o Options, script []byte) (*Loaded, *prepared, error) {
	if len(addrs.Progs) != len(req.Progs) {
		return nil, nil, fmt.Errorf("emu: %d program addresses for %d programs", len(addrs.Progs), len(req.Progs))
	}
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	nregs := m.NrRegs()
	if len(o.Args) == 0 {
		o.Args = DefaultArgs(nregs)
	}
	l := &Loaded{h: h, req: req, m: m, addrs: addrs, opts: o, image: uint64(addrs.Image), code: code,
		progByPtr: map[uint64]int{}}
	l.locs, l.nstack = placeSlots(req.Arch, m)
	for i := range l.locs {
		if l.locs[i].reg >= len(h.tg.argRegs()) {
			return nil, nil, fmt.Errorf("emu: argument slot %d has no register", i)
		}
	}
	if 8*l.nstack+64 > frameLen {
		return nil, nil, fmt.Errorf("emu: %d stack slots do not fit the caller's frame", l.nstack)
	}
	cs := h.tg.calleeSaved()
	l.canary = make([]uint64, len(cs))
	for i := range cs {
		l.canary[i] = 0xca11ee5a00000000 | uint64(i+1)<<8
	}
	var err error
	if l.exp, err = expect(req, m, addrs, &o); err != nil {
		return nil, nil, fmt.Errorf("emu: %w", err)
	}
	for i, p := range addrs.Progs {
		l.progByPtr[uint64(p.Prog)] = i
	}
	var nc *nativeCfg
	if !o.Trace {
		nc = &nativeCfg{nregs: nregs, ipArg: l.exp.ipArg, locs: l.locs, sessIdx: l.exp.sessIdx}
		for _, p := range l.exp.progs {
			nc.retSlot = append(nc.retSlot, p.retSlot)
		}
	}
	pr := &prepared{}
	var ids map[string]int
	if pr.pieces, ids, pr.fails, err = h.layOut(l, nc); err != nil {
		return nil, nil, fmt.Errorf("emu: %w", err)
	}
	for _, r := range pageRuns(pr.pieces) {
		if r[0] < stackBase+stackSize {
			return nil, nil, fmt.Errorf("emu: code at %#x collides with the harness's own memory", r[0])
		}
	}
	var regs []uint64
	for k, loc := range l.locs {
		if loc.reg >= 0 {
			regs = append(regs, o.Args[k])
		}
	}
	// Registers are loaded in slot order: placeSlots hands them out in order.
	var after, done int
	if nc != nil {
		n, err := buildScript(script, l.exp, ids)
		if err != nil {
			return nil, nil, err
		}
		pr.script = script[:n]
		cc := &callerCheck{scriptEnd: scriptBase + uint64(n), ret: l.exp.ret, retMask: l.exp.retMask, canaries: map[uc.Reg]uint64{}}
		for i, r := range cs {
			cc.canaries[r] = l.canary[i]
		}
		var fail int
		pr.caller, after, done, fail = h.tg.nativeCaller(callerBase, l.entry, regs, cc)
		pr.fails = append(pr.fails, callerBase+uint64(fail))
	} else {
		pr.caller, after, done = h.tg.caller(callerBase, l.entry, regs)
	}
	l.after = callerBase + uint64(after)
	l.done = callerBase + uint64(done)
	// The caller's frame: stack arguments, then canaries the callee must not touch.
	l.frame = make([]byte, frameLen)
	for i := range l.frame {
		l.frame[i] = byte(0x5a ^ i)
	}
	for k, loc := range l.locs {
		if loc.reg < 0 {
			putU64(l.frame[8*loc.stack:], o.Args[k])
		}
	}
	l.outRegs = append([]uc.Reg{h.tg.retReg(), h.tg.spReg()}, cs...)
	l.regsBuf = make([]uint64, len(l.outRegs))
	l.inRegs = append(append([]uc.Reg{}, cs...), h.tg.spReg())
	l.inVals = make([]uint64, len(l.inRegs))
	l.inVals[len(cs)] = sp0
	l.chk.l = l
	link := h.tg.linkReg()
	if link == 0 {
		link = h.tg.spReg()
	}
	for n := 0; n <= len(h.tg.argRegs()); n++ {
		l.hookRegs = append(l.hookRegs, append(append([]uc.Reg{}, h.tg.argRegs()[:n]...), link))
	}
	l.ev = make([]event, 0, len(l.exp.events)+8)
	return l, pr, nil
}

// unload removes the previous trampoline's mappings and hooks.
func (h *Harness) unload() error {
	for _, hk := range h.hooks {
		if err := h.e.Unhook(hk); err != nil {
			return err
		}
	}
	h.hooks = h.hooks[:0]
	for _, a := range h.sentinels {
		if err := h.e.RemoveSentinel(a); err != nil {
			return err
		}
	}
	h.sentinels = h.sentinels[:0]
	for _, m := range h.maps {
		if err := h.e.Unmap(m[0], m[1]); err != nil {
			return err
		}
	}
	h.maps = h.maps[:0]
	h.cur = nil
	return nil
}

func (h *Harness) mapPieces(ps []piece) error {
	for _, r := range pageRuns(ps) {
		if err := h.e.Map(r[0], r[1], uc.ProtRead|uc.ProtExec); err != nil {
			return err
		}
		h.maps = append(h.maps, r)
	}
	for _, p := range ps {
		if err := h.e.Write(p.addr, p.code); err != nil {
			return err
		}
	}
	return nil
}

func (h *Harness) hook(at uint64, fn func()) error {
	hk, err := h.e.HookCode(at, at, func(uint64, uint32) { fn() })
	if err != nil {
		return err
	}
	h.hooks = append(h.hooks, hk)
	return nil
}

// SetImage replaces the image bytes (same length), e.g. with a mutant.
func (l *Loaded) SetImage(code []byte) error {
	if len(code) != len(l.code) {
		return fmt.Errorf("emu: image of %d bytes replaced by %d", len(l.code), len(code))
	}
	l.code = code
	return l.h.e.Write(l.image, code)
}

// Call runs n calls (n > 1: the caller loops in emulated code) and reports what the
// oracle found; it stops at the first call that fails a check.
func (l *Loaded) Call(n int) (*Report, error) {
	h := l.h
	if h.cur != l {
		if err := l.reload(); err != nil {
			return nil, err
		}
	}
	n = max(n, 1)
	r, err := l.call(n)
	if err != nil || !l.opts.Trace || !l.faulted {
		return r, err
	}
	// Unicorn reports a fault at the start of its block; replay it with the exact pc.
	if err := h.e.SetPreciseFaults(true); err != nil {
		return nil, err
	}
	defer h.e.SetPreciseFaults(false)
	return l.call(n)
}

func (l *Loaded) call(n int) (*Report, error) {
	h := l.h
	l.faulted = false
	copy(h.stack[sp0-stackBase:], l.frame)
	// Poison the trampoline's future frame: a slot it forgets to write must not still
	// hold the previous call's value.
	copy(h.stack[sp0-stackBase-poisonLen:], stackPoison[:])
	l.count, l.hits, l.first, l.haveR, l.fail = n, 0, nil, false, nil
	l.resetHit()
	copy(l.inVals, l.canary)
	l.inVals[len(l.canary)-1] = uint64(n) // the loop counter
	if err := h.e.WriteRegs(l.inRegs, l.inVals); err != nil {
		return nil, err
	}
	begin := time.Now()
	x, err := h.run(uint64(n) * l.opts.Budget)
	elapsed := time.Since(begin)
	if !l.opts.Trace {
		return l.nativeResult(n, x, err, elapsed)
	}
	var ue *uc.Error
	l.faulted = errors.As(err, &ue) && ue.Fault != nil
	r := l.report(x, err)
	if r.Hits > 0 && elapsed > 0 {
		r.HitsPerSec = float64(r.Hits) / elapsed.Seconds()
	}
	return r, nil
}

// nativeResult turns a run checked in emulated code into a report: the expectation when
// every call passed, else the traced replay of the first failing call.
func (l *Loaded) nativeResult(n int, x uc.Exit, err error, elapsed time.Duration) (*Report, error) {
	h := l.h
	if err == nil && x.Reason == uc.ReasonSentinel && x.Sentinel == l.done &&
		string(h.stack[sp0-stackBase:sp0-stackBase+frameLen]) == string(l.frame) {
		if l.okRep == nil {
			l.first = append([]event(nil), l.exp.events...)
			l.firstR, l.haveR, l.hits, l.fail = l.exp.ret, true, uint64(n), nil
			l.okRep = l.report(x, nil)
		}
		r := *l.okRep
		r.Hits = uint64(n)
		if elapsed > 0 {
			r.HitsPerSec = float64(n) / elapsed.Seconds()
		}
		return &r, nil
	}
	// Which call failed: the loop counter counts down after each checked call.
	k := n
	cs := h.tg.calleeSaved()
	if v, rerr := h.e.Reg(cs[len(cs)-1]); rerr == nil && v >= 1 && v <= uint64(n) {
		k = n - int(v) + 1
	}
	where := "an error"
	if err == nil {
		where = "the check at " + l.where(x.Sentinel)
	}
	r, terr := l.replay(h, k, "failed "+where+" in emulated code")
	if terr != nil {
		return nil, terr
	}
	if err := l.reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// replay runs calls 1..k again in hu under Unicorn, traced by Go hooks, to say what the
// failing call k did; what says how it failed. A replay that passes is reported as a
// failure, never a pass.
func (l *Loaded) replay(hu *Harness, k int, what string) (*Report, error) {
	o := l.opts
	o.Trace, o.Count, o.Engine = true, k, ""
	tl, err := hu.Load(l.req, l.m, l.addrs, l.code, o)
	if err != nil {
		return nil, err
	}
	r, err := tl.Call(k)
	if err != nil {
		return nil, err
	}
	if r.OK {
		r.OK = false
		r.Checks = append(r.Checks, Check{Name: CheckRun, Detail: fmt.Sprintf(
			"call %d %s, but its traced replay passed", k, what)})
	}
	return r, nil
}

// reload maps this (natively checked) trampoline again after another one was loaded.
func (l *Loaded) reload() error {
	if l.opts.Trace {
		return fmt.Errorf("emu: this trampoline is no longer loaded")
	}
	nl, err := l.h.Load(l.req, l.m, l.addrs, l.code, l.opts)
	if err != nil {
		return err
	}
	*l = *nl
	l.chk.l = l
	l.h.cur = l
	return nil
}

// run starts at the caller, bounded by an instruction count. (A timeout would cost a
// thread per run that wakes every 2 µs, which slows the emulation itself several times
// on a busy machine.)
func (h *Harness) run(budget uint64) (uc.Exit, error) {
	return h.e.Run(callerBase, budget)
}

func (l *Loaded) resetHit() {
	l.ev = l.ev[:0]
	l.runCtx = 0
}

var stackPoison = func() (p [poisonLen]byte) {
	for i := range p {
		p[i] = 0xee
	}
	return
}()

func putU64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}
