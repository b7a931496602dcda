package arm64

import (
	"fmt"

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
//	[sp+Args]         x0..x(NRegs-1); the BPF ctx points here
//	[sp+NRegsOff]     register count (ctx[-1])
//	[sp+IP]           func_addr (IP_ARG only, ctx[-2])
//	[sp+RunCtx]       struct bpf_tramp_run_ctx: cookie, saved run_ctx
type StackLayout struct {
	NRegs     int  // argument registers saved, also the count slot's value
	HasIP     bool // IP_ARG: the IP slot is reserved
	SaveRet   bool // CALL_ORIG or RET_FENTRY_RET: the retval slot is reserved
	RunCtx    int
	IP        int // equals NRegsOff when the slot is not reserved, as in the kernel
	NRegsOff  int
	Args      int
	Retval    int // equals Regs when the slot is not reserved
	Regs      int // x19; x20 at Regs+8
	StackSize int
	RetAddr   int // frame 2's saved x30: the traced function's body
}

// runCtxSize is sizeof(struct bpf_tramp_run_ctx) rounded to 8: the cookie and the
// saved run_ctx pointer (struct bpf_run_ctx is empty).
const runCtxSize = 16

// SaveRet reports whether the frame has a retval slot.
func SaveRet(flags jit.Flags) bool {
	return flags&(jit.FlagCallOrig|jit.FlagRetFentryRet) != 0
}

// ArgRegs is the number of argument registers the trampoline saves for m. With struct arguments it
// counts registers (btf_func_model_nregs: a struct of 9..16 bytes takes two) and
// refuses more than 8; without (6.1) it counts arguments and refuses struct arguments.
func ArgRegs(p Profile, m *btfmodel.FuncModel) (int, error) {
	n := m.NrArgs()
	if !p.Limits.StructArgs {
		if n > p.Limits.ArgRegs {
			return 0, reject(jit.ENOTSUPP, fmt.Sprintf("%s has %d arguments, the %s arm64 trampoline passes at most %d", m.Name, n, p.Kernel, p.Limits.ArgRegs))
		}
		if m.HasStructArg() {
			return 0, reject(jit.ENOTSUPP, fmt.Sprintf("%s takes a struct by value, which the %s arm64 trampoline does not support", m.Name, p.Kernel))
		}
		return n, nil
	}
	for _, a := range m.Args {
		if a.Flags&btfmodel.StructArg != 0 {
			n += (a.Size+7)/8 - 1
		}
	}
	if n > p.Limits.MaxRegSlots {
		return 0, reject(jit.ENOTSUPP, fmt.Sprintf("%s needs %d argument registers, the %s arm64 trampoline saves at most %d (no stack arguments before 6.16)", m.Name, n, p.Kernel, p.Limits.MaxRegSlots))
	}
	return n, nil
}

// Layout computes the frame for m under flags.
func Layout(p Profile, m *btfmodel.FuncModel, flags jit.Flags) (StackLayout, error) {
	n, err := ArgRegs(p, m)
	if err != nil {
		return StackLayout{}, err
	}
	return layoutFor(n, flags), nil
}

// layoutFor builds the frame from low addresses up, in the order the verifier's
// inlined helpers rely on (ip at ctx[-2], count at ctx[-1], retval at ctx[nregs]).
func layoutFor(nregs int, flags jit.Flags) StackLayout {
	l := StackLayout{NRegs: nregs, HasIP: flags&jit.FlagIPArg != 0, SaveRet: SaveRet(flags)}
	off := runCtxSize
	l.IP = off
	if l.HasIP {
		off += 8
	}
	l.NRegsOff = off
	off += 8
	l.Args = off
	off += 8 * nregs
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

// ArgOff is the slot of argument register i.
func (l StackLayout) ArgOff(i int) int { return l.Args + 8*i }
