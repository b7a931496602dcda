package arm64

import (
	"fmt"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// StackLayout is the trampoline's frame below the two frame records, as offsets from
// the final sp (prepare_trampoline in arch/arm64/net/bpf_jit_comp.c).
//
//	[sp+StackSize+16] caller fp, parent LR (x9)   frame 1 ("parent")
//	[sp+StackSize]    S-16, patched fn LR (x30)   frame 2, RetAddr = StackSize+8
//	[sp+Regs]         x19, x20 (then padding to 16)
//	[sp+Retval]       return value (save_ret only)
//	[sp+Args]         x0..x(NRegs-1), then the stack arguments' copies; the BPF ctx
//	[sp+NRegsOff]     argument slot count (ctx[-1], func_meta)
//	[sp+IP]           func_addr (IP_ARG only, ctx[-2])
//	[sp+Cookies]      fsession cookie slots, one per program calling bpf_session_cookie
//	[sp+RunCtx]       struct bpf_tramp_run_ctx: cookie, saved run_ctx
//	[sp+0]            outgoing stack arguments for the original (CALL_ORIG only)
type StackLayout struct {
	NRegs int // argument registers saved
	// NArgs is the argument slots, registers then stack (the count slot's value).
	NArgs int
	// StackMask is, per stack-passed slot, how many high bits its copy for BPF clears:
	// the unused bytes of an argument's last slot (0: the slot is used whole).
	StackMask []int
	HasIP     bool // IP_ARG: the IP slot is reserved
	SaveRet   bool // CALL_ORIG or RET_FENTRY_RET: the retval slot is reserved
	OArgs     int  // outgoing stack arguments; RunCtx-OArgs bytes are reserved
	RunCtx    int
	Cookies   int // session-cookie slot 0; slot k at Cookies+8k
	IP        int // equals NRegsOff when the slot is not reserved, as in the kernel
	NRegsOff  int
	Args      int
	Retval    int // equals Regs when the slot is not reserved
	Regs      int // x19; x20 at Regs+8
	StackSize int
	RetAddr   int // frame 2's saved x30: the traced function's body
}

// StackArgBase is where the caller's stack arguments start, from x29 after the two frame
// records (tracing trampolines; 16 with struct_ops' single frame).
const StackArgBase = 32

// runCtxSize is sizeof(struct bpf_tramp_run_ctx) rounded to 8: the cookie and the
// saved run_ctx pointer (struct bpf_run_ctx is empty).
const runCtxSize = 16

// SaveRet reports whether the frame has a retval slot.
func SaveRet(flags jit.Flags) bool {
	return flags&(jit.FlagCallOrig|jit.FlagRetFentryRet) != 0
}

// ArgRegs is the number of argument slots the trampoline saves for m. With struct arguments it
// counts slots (btf_func_model_nregs: a struct of 9..16 bytes takes two); without (6.1) it
// counts arguments and refuses struct arguments. Beyond Limits.MaxRegSlots is -ENOTSUPP.
func ArgRegs(p Profile, m *btfmodel.FuncModel) (int, error) {
	n, _, err := argSlots(p, m)
	return n, err
}

// argSlots splits m's arguments between x0..x7 and the stack as calc_arg_aux does (AAPCS64):
// an argument goes in registers while its slots fit; the first one that does not, and every
// later one, is on the stack. It returns the slot count and the stack slots' masks.
func argSlots(p Profile, m *btfmodel.FuncModel) (int, []int, error) {
	n := m.NrArgs()
	if !p.Limits.StructArgs {
		if n > p.Limits.ArgRegs {
			return 0, nil, reject(jit.ENOTSUPP, fmt.Sprintf("%s has %d arguments, the %s arm64 trampoline passes at most %d", m.Name, n, p.Kernel, p.Limits.ArgRegs))
		}
		if m.HasStructArg() {
			return 0, nil, reject(jit.ENOTSUPP, fmt.Sprintf("%s takes a struct by value, which the %s arm64 trampoline does not support", m.Name, p.Kernel))
		}
		return n, nil, nil
	}
	nregs, slots := 0, 0
	var stack []int
	for _, a := range m.Args {
		k := 1
		if a.Flags&btfmodel.StructArg != 0 {
			k = (a.Size + 7) / 8
		}
		slots += k
		if stack == nil && nregs+k <= p.Limits.ArgRegs {
			nregs += k
			continue
		}
		if !p.Limits.StackArgs {
			stack = append(stack, 0) // refused below
			continue
		}
		for i := 0; i < k; i++ {
			mask := 0
			if i == k-1 && a.Size%8 != 0 {
				mask = 64 - 8*(a.Size%8)
			}
			stack = append(stack, mask)
		}
	}
	if slots > p.Limits.MaxRegSlots {
		if p.Limits.StackArgs {
			return 0, nil, reject(jit.ENOTSUPP, fmt.Sprintf("%s needs %d argument slots, the %s arm64 trampoline takes at most %d (MAX_BPF_FUNC_ARGS)", m.Name, slots, p.Kernel, p.Limits.MaxRegSlots))
		}
		return 0, nil, reject(jit.ENOTSUPP, fmt.Sprintf("%s needs %d argument registers, the %s arm64 trampoline saves at most %d (no stack arguments before 6.16)", m.Name, slots, p.Kernel, p.Limits.MaxRegSlots))
	}
	return slots, stack, nil
}

// Layout computes the frame for m under flags, with cookies session-cookie slots.
func Layout(p Profile, m *btfmodel.FuncModel, flags jit.Flags, cookies int) (StackLayout, error) {
	n, stack, err := argSlots(p, m)
	if err != nil {
		return StackLayout{}, err
	}
	l := layoutFor(n-len(stack), len(stack), cookies, flags)
	l.StackMask = stack
	return l, nil
}

// layoutFor builds the frame from low addresses up, in the order the verifier's
// inlined helpers rely on (ip at ctx[-2], count at ctx[-1], retval at ctx[nargs]).
func layoutFor(nregs, nstack, cookies int, flags jit.Flags) StackLayout {
	l := StackLayout{NRegs: nregs, NArgs: nregs + nstack, HasIP: flags&jit.FlagIPArg != 0, SaveRet: SaveRet(flags)}
	off := 0
	if flags&jit.FlagCallOrig != 0 {
		off += 8 * nstack // the original reads its stack arguments at sp
	}
	l.RunCtx = off
	off += runCtxSize
	l.Cookies = off
	off += 8 * cookies
	l.IP = off
	if l.HasIP {
		off += 8
	}
	l.NRegsOff = off
	off += 8
	l.Args = off
	off += 8 * l.NArgs
	l.Retval = off
	if l.SaveRet {
		off += 8
	}
	l.Regs = off
	off += 16
	l.StackSize = (off + 15) &^ 15
	l.RetAddr = l.StackSize + 8
	return l
}

// ArgOff is the slot of argument slot i (a register's, then a stack argument's copy).
func (l StackLayout) ArgOff(i int) int { return l.Args + 8*i }

// NStack is the number of stack-passed argument slots.
func (l StackLayout) NStack() int { return len(l.StackMask) }

// Frames is which frame records an image builds above its locals.
type Frames int

const (
	// TracingFrames: x29/x9 (the parent) then x29/x30 (the traced function's body).
	TracingFrames Frames = iota
	// StructOpsOneFrame: a struct_ops image (is_struct_ops_tramp): the x29/x30 record only.
	StructOpsOneFrame
)

// Diagram draws the frame from the caller's stack arguments down to the final sp, one slot per
// line, as sp-relative offsets (the kernel's addressing).
func (l StackLayout) Diagram(f Frames) string {
	var b strings.Builder
	row := func(off int, what string) { fmt.Fprintf(&b, "  [sp+%3d]  %s\n", off, what) }
	top := l.StackSize + 32 // the caller's stack arguments, above the frame records
	if f == StructOpsOneFrame {
		top = l.StackSize + 16
	}
	for k := l.NStack() - 1; k >= 0; k-- {
		row(top+8*k, fmt.Sprintf("caller's stack argument, slot %d", l.NRegs+k))
	}
	switch f {
	case StructOpsOneFrame:
		row(l.StackSize+8, "x30: return into the indirect caller (ret x30)")
		row(l.StackSize, "x29: the caller's frame pointer  <- x29")
	default:
		row(l.StackSize+24, "x9: the parent's return address  (frame 1)")
		row(l.StackSize+16, "x29: the caller's frame pointer")
		row(l.StackSize+8, "x30: the traced function's body  (frame 2, retaddr_off)")
		row(l.StackSize, "x29: frame 1  <- x29")
	}
	if l.StackSize-16 > l.Regs {
		row(l.Regs+16, "padding to 16")
	}
	row(l.Regs+8, "saved x20")
	row(l.Regs, "saved x19")
	if l.SaveRet {
		row(l.Retval, fmt.Sprintf("return value, ctx[%d]", l.NArgs))
	}
	for i := l.NArgs - 1; i >= 0; i-- {
		row(l.ArgOff(i), fmt.Sprintf("argument slot %d, ctx[%d]", i, i))
	}
	row(l.NRegsOff, "argument slot count (func_meta), ctx[-1]")
	if l.HasIP {
		row(l.IP, "func_addr (IP_ARG), ctx[-2]")
	}
	for k := (l.IP-l.Cookies)/8 - 1; k >= 0; k-- {
		row(l.Cookies+8*k, fmt.Sprintf("session cookie %d, ctx[-%d]", k, (l.Args-l.Cookies)/8-k))
	}
	row(l.RunCtx+8, "bpf_tramp_run_ctx.saved_run_ctx")
	row(l.RunCtx, "bpf_tramp_run_ctx.bpf_cookie")
	for k := l.RunCtx/8 - 1; k >= 0; k-- {
		row(8*k, fmt.Sprintf("outgoing stack argument %d for the original", k))
	}
	fmt.Fprintf(&b, "  sp = x29-%d (stack_size %d)\n", l.StackSize, l.StackSize)
	return b.String()
}
