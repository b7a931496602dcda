package verifier

import (
	"fmt"
	"math"

	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// checkReturn is check_return_code (kernel/bpf/verifier.c) at the main program's exit, with
// bpf_lsm_get_retval_range (kernel/bpf/bpf_lsm.c) for LSM on 6.12.
func (c *checker) checkReturn() error {
	at := c.prog.AttachType
	if at == btfmodel.StructOps {
		return c.structOpsReturn()
	}
	_, voidRet := c.proto.Return.(*btf.Void)
	if at == btfmodel.LSM && voidRet {
		return nil // void hook: R0 need not be set
	}
	if err := c.readReg(0); err != nil {
		return err
	}
	var lo, hi int64
	switch at {
	case btfmodel.Fentry, btfmodel.Fexit:
		lo, hi = 0, 0
	case btfmodel.ModRet, btfmodel.RawTP: // check_return_code: no range for either
		return nil
	case btfmodel.LSM:
		if !c.has(btfmodel.CapVerifierLSMRetRange) {
			return nil // 6.1: LSM programs may return any value
		}
		lo, hi = -4095, 0
		if boolLSMHooks[c.prog.Target] {
			lo, hi = 0, 1
		}
	}
	r0 := &c.st.regs[0]
	if r0.typ != scalarValue {
		c.logf("At program exit the register R0 is not a known value (%s)", regTypeStr(c.env.Kernel, r0))
		return reject("EINVAL")
	}
	v := r0.v
	if !c.has(btfmodel.CapVerifierRetvalRange) {
		// tnum_in(range, var_off), with the tnum form of verbose_invalid_scalar.
		rng := tnumRange(uint64(lo), uint64(hi))
		if rng.in(v.t) {
			return nil
		}
		msg := "At program exit the register R0 "
		if !v.t.isUnknown() {
			msg += "has value " + v.t.String()
		} else {
			msg += "has unknown scalar value"
		}
		c.logf("%s should have been in %s", msg, rng)
		return reject("EINVAL")
	}
	// 6.12 judges an LSM hook's int return by its 32-bit bounds (retval_range_within with
	// return_32bit), everything else by the 64-bit ones; the message shows the latter.
	if at == btfmodel.LSM {
		if int64(v.s32min) >= lo && int64(v.s32max) <= hi {
			return nil
		}
	} else if v.smin >= lo && v.smax <= hi {
		return nil
	}
	msg := "At program exit the register R0 has"
	unknown := true
	if v.smin > math.MinInt64 {
		msg += fmt.Sprintf(" smin=%d", v.smin)
		unknown = false
	}
	if v.smax < math.MaxInt64 {
		msg += fmt.Sprintf(" smax=%d", v.smax)
		unknown = false
	}
	if unknown {
		msg += " unknown scalar value"
	}
	c.logf("%s should have been in [%d, %d]", msg, lo, hi)
	return reject("EINVAL")
}
