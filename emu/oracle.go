package emu

import (
	"fmt"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// The oracle says what one call through a trampoline must look like, from the request
// alone: the kernel's semantics (kernel/bpf/trampoline.c, arch/*/net/bpf_jit_comp.c, the
// enter/exit helpers' calling conventions), never from a
// backend's code. It re-derives on its own what jit.Resolve and jit.EnterExit compute
// (flags, emission order, helper choice), so that a mistake there shows up here.

// maxSlots is the most ctx argument slots a trampoline saves: riscv64 takes
// MAX_BPF_FUNC_ARGS arguments of up to 16 bytes each.
const maxSlots = btfmodel.MaxArgSlots

type evKind uint8

const (
	evTrampEnter evKind = iota // __bpf_tramp_enter(im)
	evEnter                    // __bpf_prog_enter*(prog, &run_ctx) -> start
	evProg                     // bpf_func(ctx, insnsi)
	evExit                     // __bpf_prog_exit*(prog, start, &run_ctx)
	evOrig                     // the traced function's body
	evTrampExit                // __bpf_tramp_exit(im)
	evStray                    // a call into a stub the kernel would not call here
)

var evNames = [...]string{"__bpf_tramp_enter", "enter", "prog", "exit", "original", "__bpf_tramp_exit", "stray call"}

// event is one call the trampoline made (observed) or must make (expected).
type event struct {
	kind   evKind
	name   string // helper symbol
	prog   int    // attach index (0-based), -1 if none or unknown
	ptr    uint64 // enter/exit: struct bpf_prog *; tramp: im; prog: ctx pointer
	start  uint64 // enter: the value returned; exit: the start passed
	runCtx uint64 // enter/exit: &run_ctx
	cookie uint64 // run_ctx->bpf_cookie (for a program: through the latest enter's run_ctx)
	n      int    // ctx words
	ctx    [maxSlots]uint64
	nargs  uint64 // prog: ctx[-1]
	ip     uint64 // prog: ctx[-2]
	ret    uint64 // prog: ctx[n], the return value slot
	hasRet bool   // expected prog: ctx[n] is checked (fexit, fmod_ret; fsession: zero on entry)
	exit   bool   // expected prog: an fsession program's exit run
	sess   uint64 // prog with a session cookie: its cookie slot as the program found it
	from   uint64 // return address of the call
}

// expProg is what one program (attach order) must see.
type expProg struct {
	kind    jit.Kind
	ran     bool
	retSlot bool // fexit/fmod_ret: ctx[nr_args] is the return value
	ctx     []uint64
	cookie  uint64
}

// expectation is the oracle's verdict for one call.
type expectation struct {
	events  []event
	ret     uint64
	orig    bool
	progs   []expProg
	nregs   int
	flags   jit.Flags
	seen    []uint64 // argument words as programs and the original see them
	ipArg   bool
	fn      uint64
	im      uint64
	retSlot bool        // the trampoline has a return value slot (CALL_ORIG or RET_FENTRY_RET)
	session bool        // an fsession program is attached: ctx[-1] is func_meta
	sessIdx map[int]int // cookie index of each bpf_session_cookie program
	// retMask are the bits of ret the caller must get (0: none, a void struct_ops member).
	retMask   uint64
	structOps bool // a struct_ops image (structops.go)
}

// listOf is the trampoline list a program joins first (bpf_attach_type_to_tramp): LSM
// programs modify the return value, unless the hook returns void; an fsession program
// joins the fentry list, and the fexit list too (emissionOrder).
func listOf(k jit.Kind, m *btfmodel.FuncModel) jit.Kind {
	if k == jit.Fsession {
		return jit.Fentry
	}
	if k == jit.LSM {
		if m.IsVoid() {
			return jit.Fexit
		}
		return jit.ModRet
	}
	return k
}

// block is one program block of the trampoline: an attach index and the list it runs in.
type block struct {
	prog int
	list jit.Kind
}

// emissionOrder lists the blocks as the trampoline runs them: fentry, fmod_ret, fexit;
// within a list the newest link first (hlist head insertion). An fsession program has a
// block in the fentry list and one in the fexit list (its second tramp node).
func emissionOrder(progs []jit.Prog, m *btfmodel.FuncModel) []block {
	var out []block
	for _, list := range []jit.Kind{jit.Fentry, jit.ModRet, jit.Fexit} {
		for i := len(progs) - 1; i >= 0; i-- {
			if listOf(progs[i].Kind, m) == list || progs[i].Kind == jit.Fsession && list == jit.Fexit {
				out = append(out, block{i, list})
			}
		}
	}
	return out
}

// trampFlags are bpf_trampoline_update's flags, or the request's override.
func trampFlags(req *jit.Request, m *btfmodel.FuncModel) jit.Flags {
	if req.Flags != nil {
		return jit.Flags(*req.Flags)
	}
	var f jit.Flags
	calls := false
	for _, p := range req.Progs {
		calls = calls || listOf(p.Kind, m) != jit.Fentry || p.Kind == jit.Fsession
		if p.FuncIP {
			f |= jit.FlagIPArg
		}
	}
	switch {
	case !calls:
		return f | jit.FlagRestoreRegs
	case req.Arch == btfmodel.AMD64 && req.Kernel.Has(btfmodel.CapX86JmpMode):
		// CONFIG_DYNAMIC_FTRACE_WITH_JMP: entered by a jump, there is no frame to skip.
		return f | jit.FlagCallOrig
	}
	return f | jit.FlagCallOrig | jit.FlagSkipFrame
}

// jmpEntry says whether the patch site jumps to the trampoline instead of calling it
// (bpf_trampoline_use_jmp: CALL_ORIG without SKIP_FRAME, on a kernel with jmp mode), so
// that the trampoline returns straight to the traced function's caller.
func jmpEntry(req *jit.Request, f jit.Flags) bool {
	return req.Arch == btfmodel.AMD64 && req.Kernel.Has(btfmodel.CapX86JmpMode) &&
		f&jit.FlagCallOrig != 0 && f&jit.FlagSkipFrame == 0
}

// callOpsEntry says whether the patch site reaches the trampoline through ftrace_caller
// and the ftrace_ops pointer before the function (btfmodel.CapRiscvCallOps; kernel
// functions only: a BPF program's site calls it directly).
func callOpsEntry(req *jit.Request) bool {
	return req.Arch == btfmodel.RISCV64 && req.Target != "bpf" && req.Kernel.Has(btfmodel.CapRiscvCallOps)
}

// helperNames is the enter/exit pair a program runs under (bpf_trampoline_enter): the
// _recur variants for tracing programs, the plain ones for LSM, each with a sleepable
// form. Upstream 6.1.0 had no _recur pair, but Debian's 6.1.176 calls it like 6.12 does
// (docs/kernel-facts.md; 6.1-amd64 bpf_fentry_test2-fentry-fexit).
func helperNames(p jit.Prog) (string, string) {
	suffix := ""
	if p.Sleepable {
		suffix = "_sleepable"
	}
	if p.Kind != jit.LSM {
		suffix += "_recur"
	}
	return "__bpf_prog_enter" + suffix, "__bpf_prog_exit" + suffix
}

// seenWords applies what the kernel does to argument words before anyone sees them, and
// returns what the programs see and what an original the trampoline calls sees.
// x86-64 clean_stack_garbage (CapX86CleanStack: 6.12, not 6.1) zeroes the upper half of a
// lone stack slot when the function's last argument is at most 4 bytes (even if that is
// not the stack argument), in the copy both see. arm64 with stack arguments
// (CapArm64StackArgs) clears the unused high bytes of the last slot of a stack-passed
// argument in the programs' copy only (lsl/lsr); the original gets the slots unmasked.
func seenWords(req *jit.Request, m *btfmodel.FuncModel, args []uint64) (progs, orig []uint64) {
	seen := append([]uint64(nil), args...)
	if len(m.Args) == 0 {
		return seen, seen
	}
	locs, nstack := placeSlots(req.Arch, m)
	switch {
	case req.Arch == btfmodel.AMD64 && req.Kernel.Has(btfmodel.CapX86CleanStack):
		if nstack != 1 || m.Args[len(m.Args)-1].Size > 4 {
			return seen, seen
		}
		for k, l := range locs {
			if l.reg < 0 {
				seen[k] &= 0xffffffff
			}
		}
		return seen, seen
	case req.Arch == btfmodel.ARM64 && req.Kernel.Has(btfmodel.CapArm64StackArgs):
		k := 0
		for _, a := range m.Args {
			last := k + a.Slots() - 1
			if locs[last].reg < 0 && a.Size%8 != 0 {
				seen[last] = widen(seen[last], a.Size%8)
			}
			k = last + 1
		}
		return seen, append([]uint64(nil), args...)
	}
	return seen, seen
}

// expect computes the oracle's expectation. On a recursion miss exit gets start 0: both
// arches copy enter's result (rbx, x20) before testing it (arm64 6.1.20 tested first, but
// Debian's 6.1.176 has "bpf, arm64: Fix incorrect runtime stats").
func expect(req *jit.Request, m *btfmodel.FuncModel, a *jit.Addrs, o *Options) (*expectation, error) {
	if req.StructOps != nil {
		return expectStructOps(req, m, a, o)
	}
	nregs := m.NrRegs()
	if len(o.Args) != nregs {
		return nil, fmt.Errorf("%d argument words for %d register slots", len(o.Args), nregs)
	}
	flags := trampFlags(req, m)
	progSees, calledSees := seenWords(req, m, o.Args)
	x := &expectation{nregs: nregs, flags: flags, seen: progSees, fn: uint64(a.Func),
		im: uint64(a.IM), ipArg: flags&jit.FlagIPArg != 0, retMask: ^uint64(0),
		retSlot: flags&(jit.FlagCallOrig|jit.FlagRetFentryRet) != 0}
	x.progs = make([]expProg, len(req.Progs))
	modIdx := map[int]int{} // attach index -> position among fmod_ret programs (attach order)
	for i, p := range req.Progs {
		l := listOf(p.Kind, m)
		x.progs[i] = expProg{kind: p.Kind, cookie: uint64(p.Cookie), retSlot: (l != jit.Fentry || p.Kind == jit.Fsession) && x.retSlot}
		if l == jit.ModRet {
			modIdx[i] = len(modIdx)
		}
	}
	if len(o.RetValues) > len(modIdx) {
		return nil, fmt.Errorf("%d return values for %d fmod_ret programs", len(o.RetValues), len(modIdx))
	}
	miss := map[int]bool{}
	for _, i := range o.Miss {
		if i < 0 || i >= len(req.Progs) {
			return nil, fmt.Errorf("miss: no program %d", i)
		}
		miss[i] = true
	}
	// The original sees the trampoline's copy of the stack arguments when the trampoline
	// calls it, the caller's own slots when the trampoline returns into it (fentry only).
	callOrig := flags&jit.FlagCallOrig != 0
	origSees := calledSees
	if !callOrig {
		origSees = o.Args
	}
	body := bodyHash(req.Arch, origSees, m.RetSize)
	if o.TargetRet != nil {
		body = *o.TargetRet
	}
	if callOrig {
		x.events = append(x.events, event{kind: evTrampEnter, name: jit.HelperTrampEnter, prog: -1, ptr: x.im})
	}
	sm := newSessionMeta(req, nregs, x.ipArg)
	x.session, x.sessIdx = sm.any, sm.index
	entered := map[int]bool{} // fsession programs whose entry run ran (and stored a cookie)
	var retval uint64
	short, modStarted := false, false
	for _, b := range emissionOrder(req.Progs, m) {
		i, l := b.prog, b.list
		p := req.Progs[i]
		if l == jit.Fexit && !x.orig && callOrig && !short {
			x.events = append(x.events, event{kind: evOrig, prog: -1})
			x.orig, retval = true, body
		}
		if l == jit.Fexit {
			sm.returning() // do_fexit: is_return, also after an fmod_ret short-circuit
		}
		if l == jit.ModRet {
			if short {
				continue
			}
			if !modStarted {
				modStarted, retval = true, 0 // the first fmod_ret program sees a zeroed slot
			}
		}
		exitRun := p.Kind == jit.Fsession && l == jit.Fexit
		sm.before(i, p)
		enter, exit := helperNames(p)
		c := uint64(p.Cookie)
		x.events = append(x.events, event{kind: evEnter, name: enter, prog: i, ptr: uint64(a.Progs[i].Prog), cookie: c})
		if !miss[i] {
			ev := event{kind: evProg, prog: i, ptr: uint64(a.Progs[i].BPFFunc), cookie: c, n: nregs, nargs: sm.meta, ret: retval,
				hasRet: x.progs[i].retSlot, exit: exitRun}
			if p.Kind == jit.Fsession && !exitRun {
				ev.ret = 0 // zeroed after __bpf_tramp_enter for fsession
			}
			if sm.cookie(p) && exitRun && entered[i] {
				ev.sess = sessionMark(i)
			}
			if x.ipArg {
				ev.ip = x.fn
			}
			copy(ev.ctx[:], x.seen)
			x.events = append(x.events, ev)
			if !exitRun {
				entered[i] = true
				x.progs[i].ran = true
				x.progs[i].ctx = append([]uint64(nil), x.seen...)
				if x.progs[i].retSlot && p.Kind != jit.Fsession {
					x.progs[i].ctx = append(x.progs[i].ctx, retval)
				}
			}
			switch {
			case l == jit.ModRet:
				if j := modIdx[i]; j < len(o.RetValues) {
					retval = o.RetValues[j]
				} else {
					retval = 0
				}
				if req.Arch == btfmodel.RISCV64 {
					// The trampoline keeps a0, which a riscv64 BPF program sets to
					// sext32(R0) (its epilogue's addiw a0, a5, 0), and tests that.
					retval = sext32(retval)
				}
			case l == jit.Fentry && flags&jit.FlagRetFentryRet != 0:
				retval = 0 // what the fentry stub returns
			}
		}
		x.events = append(x.events, event{kind: evExit, name: exit, prog: i, ptr: uint64(a.Progs[i].Prog), cookie: c})
		if l == jit.ModRet && retval != 0 {
			short = true // jne do_fexit: the remaining fmod_ret programs and the original are skipped
		}
	}
	if callOrig && !x.orig && !short {
		x.events = append(x.events, event{kind: evOrig, prog: -1})
		x.orig, retval = true, body
	}
	if callOrig {
		x.events = append(x.events, event{kind: evTrampExit, name: jit.HelperTrampExit, prog: -1, ptr: x.im})
	}
	if !callOrig {
		// fentry-only: the trampoline returns into the body, which runs with the arguments.
		x.events = append(x.events, event{kind: evOrig, prog: -1})
		x.orig = true
	}
	for i := range x.events {
		if x.events[i].kind == evOrig {
			x.events[i].n = len(origSees)
			copy(x.events[i].ctx[:], origSees)
		}
	}
	switch {
	case x.retSlot:
		x.ret = retval
	default:
		x.ret = body
	}
	return x, nil
}

// describe names an event for reports.
func (e *event) describe(progs []jit.Prog) string {
	var b strings.Builder
	switch e.kind {
	case evEnter, evExit, evStray:
		b.WriteString(e.name)
	default:
		b.WriteString(evNames[e.kind])
	}
	if e.prog >= 0 && e.prog < len(progs) {
		fmt.Fprintf(&b, " (%s #%d)", progs[e.prog].Kind, e.prog)
	}
	return b.String()
}
