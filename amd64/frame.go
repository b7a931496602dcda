package amd64

import (
	"fmt"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// ArgLoc is where the traced function receives one argument (SysV placement as the JIT
// assumes it: an argument goes wholly into registers if they can hold it, else wholly on
// the caller's stack, without consuming registers).
type ArgLoc struct {
	Slots int // 8-byte slots: 1, or 2 for a 9..16-byte struct
	Reg   int // index into rdi, rsi, rdx, rcx, r8, r9 of its first slot; -1 when on the stack
	Stack int // index of its first caller stack slot ([rbp+0x18+8*Stack]) when Reg < 0
}

// StackLayout is the trampoline frame for one model, flag set and profile. Offsets are
// positive: the slot lives at rbp-Off.
type StackLayout struct {
	NrArgs     int  // C parameters
	NrRegs     int  // 8-byte argument slots (struct-expanded), stored at ctx-8
	UsedRegs   int  // slots passed in registers (get_nr_used_regs)
	StackSlots int  // slots passed on the caller's stack
	SaveRet    bool // CALL_ORIG or RET_FENTRY_RET: return value slot at rbp-8
	RegsOff    int  // ctx[0]; ctx[k] is at rbp-RegsOff+8k
	NregsOff   int  // slot count
	IPOff      int  // traced function's address, with IP_ARG
	// CookieOff is the deepest fsession cookie slot (7.0+): cookie k of the trampoline's
	// cookie users is at rbp-(CookieOff-8k); equal to IPOff without cookies.
	CookieOff int
	// StackArgsOff is where the caller's stack arguments start above rbp: 0x18 past the saved
	// rbp and two return addresses, 0x10 in jmp mode and, from CapX86IndirectArgs, for a
	// struct_ops image (one return address; 6.12 reads a struct_ops member's at 0x18).
	StackArgsOff int
	RBXOff       int // saved rbx: a frame slot (6.12) or where `push rbx` lands (6.1)
	RunCtxOff    int // struct bpf_tramp_run_ctx; the cookie is its first word
	// ArgStackOff is the outgoing stack-argument area for the original call (6.12, >6 slots,
	// CALL_ORIG): slot j at rbp-ArgStackOff+8j, which is rsp. Equal to StackSize otherwise.
	ArgStackOff int
	StackSize   int // the `sub rsp` immediate
	TailCallOff int // where `push rax` lands with TAIL_CALL_CTX, 0 otherwise
	// Indirect: a struct_ops image (BPF_TRAMP_F_INDIRECT), called through an ops table: the
	// return address above rbp is the ops caller's, and there is no traced function.
	Indirect bool
	// RBXPushed: rbx is pushed below the frame (6.1), not stored in a frame slot.
	RBXPushed bool
	Args      [btfmodel.MaxFuncArgs]ArgLoc
}

// Layout computes the frame the kernel's x86 JIT builds for m under flags on kernel k, with
// no fsession cookie, or the JIT's -ENOTSUPP when the model has more argument slots than the
// profile supports.
func Layout(m *btfmodel.FuncModel, flags jit.Flags, k btfmodel.Kernel) (StackLayout, error) {
	p, err := profileFor(k)
	if err != nil {
		return StackLayout{}, err
	}
	var l StackLayout
	err = l.compute(m, flags, p, 0)
	return l, err
}

// compute fills l for cookies fsession cookie slots; it follows the stack_size arithmetic at
// the top of __arch_prepare_bpf_trampoline (6.12+) / arch_prepare_bpf_trampoline (6.1).
func (l *StackLayout) compute(m *btfmodel.FuncModel, flags jit.Flags, p *profile, cookies int) error {
	*l = StackLayout{NrArgs: len(m.Args), StackArgsOff: 0x18, Indirect: flags&jit.FlagIndirect != 0, RBXPushed: !p.rbxInFrame}
	jmp := p.useJmp(flags)
	if jmp || (flags&jit.FlagIndirect != 0 && p.indirectArgs16) {
		// One return address below the arguments: entered by jmp, or called through an ops
		// table (save_args' stack_args_off).
		l.StackArgsOff = 0x10
	}
	for _, a := range m.Args {
		l.NrRegs += a.Slots()
	}
	if l.NrRegs > p.lim.MaxRegSlots || l.NrArgs > p.lim.MaxRegSlots {
		return fmt.Errorf("%s: %d argument slots, x86-64 on %s supports up to %d: %w",
			m.Name, l.NrRegs, p.kernel, p.lim.MaxRegSlots, jit.ENOTSUPP)
	}
	// Placement walk (save_args / get_nr_used_regs).
	used, stack := 0, 0
	for i, a := range m.Args {
		k := a.Slots()
		if used+k <= p.lim.ArgRegs {
			l.Args[i] = ArgLoc{Slots: k, Reg: used}
			used += k
		} else {
			l.Args[i] = ArgLoc{Slots: k, Reg: -1, Stack: stack}
			stack += k
		}
	}
	l.UsedRegs, l.StackSlots = used, stack

	s := 0
	if flags&(jit.FlagCallOrig|jit.FlagRetFentryRet) != 0 {
		l.SaveRet = true
		s += 8
	}
	s += 8 * l.NrRegs
	l.RegsOff = s
	s += 8
	l.NregsOff = s
	if flags&jit.FlagIPArg != 0 {
		s += 8
	}
	l.IPOff = s
	s += 8 * cookies
	l.CookieOff = s
	if p.rbxInFrame {
		s += 8
		l.RBXOff = s
	}
	s += 16 // struct bpf_tramp_run_ctx
	l.RunCtxOff = s
	if p.lim.StackArgs && l.NrRegs > p.lim.ArgRegs && flags&jit.FlagCallOrig != 0 {
		s += 8 * l.StackSlots
		// rsp 16-aligned at the original call: below the saved rbp lie two return addresses,
		// or one in jmp mode, so the pad goes to the other parity.
		if (s%16 == 0) != jmp {
			s += 8
		}
	}
	l.ArgStackOff = s
	l.StackSize = s
	below := s // pushes after `sub rsp`
	if flags&jit.FlagTailCallCtx != 0 {
		below += 8
		l.TailCallOff = below
	}
	if !p.rbxInFrame {
		l.RBXOff = below + 8
	}
	return nil
}

// Diagram draws the frame from the caller's stack arguments down to rsp, one slot per line,
// as rbp-relative offsets (the JIT's own addressing).
func (l StackLayout) Diagram() string {
	var b strings.Builder
	row := func(off int, what string) { fmt.Fprintf(&b, "  [rbp%+5d]  %s\n", off, what) }
	for j := l.StackSlots - 1; j >= 0; j-- {
		row(l.StackArgsOff+8*j, fmt.Sprintf("caller's stack argument, slot %d", l.UsedRegs+j))
	}
	switch {
	case l.Indirect:
		row(8, "return into the ops table's caller (the image was called indirectly)")
	case l.StackArgsOff == 0x10:
		row(8, "return into the traced function's caller (entered by jmp)")
	default:
		row(16, "return into the traced function's caller")
		row(8, "return into the traced function, past the patch site")
	}
	row(0, "the caller's rbp")
	if l.SaveRet {
		what := "return value of the original (CALL_ORIG) or of the programs (fmod_ret)"
		if l.Indirect {
			what = "the struct_ops program's return value (RET_FENTRY_RET), returned in rax"
		}
		row(-8, what)
	}
	for i := l.NrRegs - 1; i >= 0; i-- {
		row(-(l.RegsOff - 8*i), fmt.Sprintf("argument slot %d, ctx[%d]", i, i))
	}
	row(-l.NregsOff, "argument slot count (func_meta), ctx[-1]")
	if l.IPOff != l.NregsOff {
		row(-l.IPOff, "traced function's address (IP_ARG), ctx[-2]")
	}
	for off := l.CookieOff; off > l.IPOff; off -= 8 {
		row(-off, fmt.Sprintf("session cookie, ctx[-%d]", (off-l.RegsOff)/8))
	}
	if !l.RBXPushed {
		row(-l.RBXOff, "saved rbx")
	}
	row(-(l.RunCtxOff - 8), "bpf_tramp_run_ctx.saved_run_ctx")
	row(-l.RunCtxOff, "bpf_tramp_run_ctx.bpf_cookie")
	for off := l.ArgStackOff; off > l.RunCtxOff; off -= 8 {
		row(-off, "outgoing stack argument (or alignment pad) for the original")
	}
	if l.TailCallOff != 0 {
		row(-l.TailCallOff, "tail_call_cnt_ptr (push rax)")
	}
	if l.RBXPushed {
		row(-l.RBXOff, "saved rbx (push rbx)")
	}
	fmt.Fprintf(&b, "  rsp = rbp-%d (stack_size %d)\n", max(l.RBXOff, l.TailCallOff, l.StackSize), l.StackSize)
	return b.String()
}
