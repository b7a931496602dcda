package riscv64

import (
	"fmt"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// StackLayout is the trampoline's frame as __arch_prepare_bpf_trampoline in
// arch/riscv/net/bpf_jit_comp64.c lays it out: every slot is addressed from the trampoline's
// s0 (FP) with a negative offset, so each field below is the distance FP - slot. Above FP
// are the two frame records the prologue pushes:
//
//	[FP+8]            ra   the traced function's return address (into its caller)
//	[FP+0]            s0   the caller's frame pointer             frame 1 (FP+16 = entry sp)
//	[FP-8]            t0   the return address into the traced function (entry+8)
//	[FP-16]           s0   frame 1's FP                           frame 2
//	[FP-RetvalOff]    a0 after the call (ctx[NArgs]); a5, BPF R0, at FP-RetvalOff+8 (SaveRet)
//	[FP-ArgsOff]      argument slots 0..NArgs-1, upwards: the BPF ctx
//	[FP-NRegsOff]     argument slot count, ctx[-1] (func_meta from 7.0)
//	[FP-IPOff]        func_addr, ctx[-2] (IP_ARG only)
//	[FP-CookieOff]    fsession cookie slots, slot k at FP-CookieOff+8k (7.x)
//	[FP-RunCtxOff]    struct bpf_tramp_run_ctx: cookie, saved run_ctx
//	[FP-SRegOff]      saved s1 (the enter helper's start time)
//	[FP-StkArgOff]    outgoing stack arguments for the original, = sp (CALL_ORIG, > 8 slots)
//
// Stack arguments of the traced function are read at FP+16+8j, past frame 1.
//
// A struct_ops image (INDIRECT) is called through a function pointer and pushes only the
// second record, ra at FP-8 and the caller's s0 at FP-16, with FP the entry sp; the rest is
// laid out the same. store_args still reads stack arguments at FP+16+8j although the
// caller's are at FP+8j: the kernel's offsets are modelled, not the ABI's.
type StackLayout struct {
	// StructOps: the one-frame form (BPF_TRAMP_F_INDIRECT).
	StructOps bool
	// NArgs is nr_arg_slots: an argument of up to 8 bytes takes one slot, a 9..16-byte
	// struct two (round_up(arg_size, 8) / 8; the struct flag is not consulted).
	NArgs int
	// NRegs is how many of the slots arrive in a0..a7 (the rest on the stack).
	NRegs     int
	HasIP     bool // IP_ARG: the ip slot is reserved
	SaveRet   bool // CALL_ORIG or RET_FENTRY_RET: the two return-value slots are reserved
	Cookies   int  // fsession cookie slots (bpf_fsession_cookie_cnt)
	RetvalOff int
	ArgsOff   int
	NRegsOff  int
	IPOff     int // equals NRegsOff when the slot is not reserved
	CookieOff int // equals IPOff when there are no cookie slots
	RunCtxOff int
	SRegOff   int
	// OArgs is the outgoing stack-argument slots below SRegOff (CALL_ORIG only).
	OArgs     int
	StackSize int // round_up(stack_size, STACK_ALIGN = 16)
	StkArgOff int // = StackSize: the outgoing arguments start at the final sp
}

// MaxRegArgs is RV_MAX_REG_ARGS: a0..a7.
const MaxRegArgs = 8

// StackArgBase is where the traced function's stack arguments start, from FP (past the
// caller's ra and s0 that frame 1 holds).
const StackArgBase = 16

// runCtxSize is sizeof(struct bpf_tramp_run_ctx) rounded to 8: the cookie and the saved
// run_ctx pointer (struct bpf_run_ctx is empty).
const runCtxSize = 16

// SaveRet reports whether the frame has the return-value slots.
func SaveRet(flags jit.Flags) bool {
	return flags&(jit.FlagCallOrig|jit.FlagRetFentryRet) != 0
}

// ArgSlots is nr_arg_slots for m, or the JIT's refusal: more than MAX_BPF_FUNC_ARGS
// arguments is -ENOTSUPP (m->nr_args is checked, not the slots).
func ArgSlots(p Profile, m *btfmodel.FuncModel) (int, error) {
	if n := m.NrArgs(); n > p.Limits.MaxArgs {
		return 0, reject(jit.ENOTSUPP, fmt.Sprintf("%s has %d arguments, the %s riscv64 trampoline takes at most %d (MAX_BPF_FUNC_ARGS)", m.Name, n, p.Kernel, p.Limits.MaxArgs))
	}
	slots := 0
	for _, a := range m.Args {
		slots += (a.Size + 7) / 8
	}
	return slots, nil
}

// Layout computes the frame for m under flags, with cookies session-cookie slots.
func Layout(p Profile, m *btfmodel.FuncModel, flags jit.Flags, cookies int) (StackLayout, error) {
	n, err := ArgSlots(p, m)
	if err != nil {
		return StackLayout{}, err
	}
	return layoutFor(n, cookies, flags), nil
}

// layoutFor adds up the frame from FP downwards in the kernel's order.
func layoutFor(nslots, cookies int, flags jit.Flags) StackLayout {
	l := StackLayout{NArgs: nslots, NRegs: min(nslots, MaxRegArgs), HasIP: flags&jit.FlagIPArg != 0, SaveRet: SaveRet(flags), Cookies: cookies,
		StructOps: flags&jit.FlagIndirect != 0}
	off := 16 // frame 2's record: t0 (or ra) and s0
	if l.SaveRet {
		off += 16 // a0 and a5
	}
	l.RetvalOff = off
	off += 8 * nslots
	l.ArgsOff = off
	off += 8
	l.NRegsOff = off
	l.IPOff = off
	if l.HasIP {
		off += 8
		l.IPOff = off
	}
	off += 8 * cookies
	l.CookieOff = off
	off += runCtxSize
	l.RunCtxOff = off
	off += 8
	l.SRegOff = off
	if flags&jit.FlagCallOrig != 0 && nslots > MaxRegArgs {
		l.OArgs = nslots - MaxRegArgs
		off += 8 * l.OArgs
	}
	l.StackSize = (off + 15) &^ 15
	l.StkArgOff = l.StackSize
	return l
}

// ArgOff is FP's distance to argument slot i.
func (l StackLayout) ArgOff(i int) int { return l.ArgsOff - 8*i }

// CookieSlotOff is FP's distance to session-cookie slot k.
func (l StackLayout) CookieSlotOff(k int) int { return l.CookieOff - 8*k }

// NStack is the number of argument slots passed on the stack.
func (l StackLayout) NStack() int { return l.NArgs - l.NRegs }

// Diagram draws the frame from the caller's stack arguments down to the final sp, one slot
// per line, as FP-relative offsets (the kernel's own addressing).
func (l StackLayout) Diagram() string {
	var b strings.Builder
	row := func(off int, what string) { fmt.Fprintf(&b, "  [s0%+5d]  %s\n", off, what) }
	if l.StructOps {
		for j := l.NStack() - 1; j >= 0; j-- {
			row(StackArgBase+8*j, fmt.Sprintf("read as stack argument slot %d (the caller's is at s0%+d)", MaxRegArgs+j, 8*j))
		}
		row(-8, "ra: return into the ops table's caller  (the one frame)")
		row(-16, "s0: the caller's frame pointer")
	} else {
		for j := l.NStack() - 1; j >= 0; j-- {
			row(StackArgBase+8*j, fmt.Sprintf("caller's stack argument, slot %d", MaxRegArgs+j))
		}
		row(8, "ra: return into the traced function's caller  (frame 1)")
		row(0, "s0: the caller's frame pointer")
		row(-8, "t0: return into the traced function, past the patch site  (frame 2)")
		row(-16, "s0: frame 1")
	}
	switch {
	case l.StructOps && l.SaveRet:
		row(-(l.RetvalOff - 8), "a5 after the program (BPF R0): the member's return value")
		row(-l.RetvalOff, "a0 after the program")
	case l.SaveRet:
		row(-(l.RetvalOff - 8), "a5 after a program or the original (BPF R0)")
		row(-l.RetvalOff, fmt.Sprintf("a0 after the original: the return value, ctx[%d]", l.NArgs))
	}
	for i := l.NArgs - 1; i >= 0; i-- {
		row(-l.ArgOff(i), fmt.Sprintf("argument slot %d, ctx[%d]", i, i))
	}
	row(-l.NRegsOff, "argument slot count (func_meta), ctx[-1]")
	if l.HasIP {
		row(-l.IPOff, "func_addr (IP_ARG), ctx[-2]")
	}
	for k := l.Cookies - 1; k >= 0; k-- {
		row(-l.CookieSlotOff(k), fmt.Sprintf("session cookie %d, ctx[-%d]", k, (l.CookieSlotOff(k)-l.ArgsOff)/8))
	}
	row(-(l.RunCtxOff - 8), "bpf_tramp_run_ctx.saved_run_ctx")
	row(-l.RunCtxOff, "bpf_tramp_run_ctx.bpf_cookie")
	row(-l.SRegOff, "saved s1")
	for j := l.OArgs - 1; j >= 0; j-- {
		row(-(l.StkArgOff - 8*j), fmt.Sprintf("outgoing stack argument %d for the original", j))
	}
	fmt.Fprintf(&b, "  sp = s0-%d (stack_size %d)\n", l.StackSize, l.StackSize)
	return b.String()
}
