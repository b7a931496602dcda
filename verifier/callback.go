package verifier

import (
	"fmt"
	"math"

	"github.com/trampjit/trampjit/btfmodel"
)

// Callbacks of bpf_loop (181) and bpf_for_each_map_elem (164): check_helper_call's
// ARG_PTR_TO_FUNC, push_callback_call (6.8 and later) or __check_func_call (6.1) with
// set_loop_callback_state / set_map_elem_callback_state, and prepare_func_exit's
// callback return range (kernel/bpf/verifier.c).

const (
	helperForEachMapElem = 164
	helperLoop           = 181
)

// funcReg is check_ld_imm's BPF_PSEUDO_FUNC: a static subprogram's address.
func (c *checker) funcReg(in *insn) (reg, error) {
	if !c.hasFuncInfo() {
		c.logf("missing btf func_info")
		return reg{}, reject("EINVAL")
	}
	k := c.subprogOf[c.idx+int(in.imm)+1]
	if c.subprogs[k].global {
		c.logf("callback function not static")
		return reg{}, reject("EINVAL")
	}
	return reg{typ: ptrToFunc, subprog: k, v: constScalar(0)}, nil
}

// callbackCall checks a callback-calling helper's arguments and enters the callback.
func (c *checker) callbackCall(in *insn, id int32) error {
	name := c.helperName(id)
	regs := &c.st.regs
	// check_func_arg, argument by argument: each register is read, then its type checked.
	if err := c.readReg(1); err != nil {
		return err
	}
	if id == helperForEachMapElem {
		r1 := regs[1]
		if err := c.argType(1, &r1, argConstMap, name); err != nil {
			return err
		}
	} else if regs[1].typ != scalarValue && c.has(btfmodel.CapVerifierCallbackIterate) {
		// bpf_loop's nr_loops: 6.12 on refuse a non-scalar (its umax bounds the
		// iterations); 6.1 takes anything there (the fuzz's captures).
		c.logf("R1 type=%s expected=scalar", regTypeStr(c.env.Kernel, &regs[1]))
		return reject("EACCES")
	}
	if err := c.readReg(2); err != nil {
		return err
	}
	if regs[2].typ != ptrToFunc {
		c.logf("R2 type=%s expected=func", regTypeStr(c.env.Kernel, &regs[2]))
		return reject("EACCES")
	}
	if err := c.readReg(3); err != nil {
		return err
	}
	if r3 := regs[3]; r3.typ != ptrToStack && !(r3.typ == scalarValue && r3.v.isConst() && r3.v.val() == 0) {
		c.logf("R3 type=%s expected=fp", regTypeStr(c.env.Kernel, &r3))
		return reject("EACCES")
	}
	if err := c.readReg(4); err != nil {
		return err
	}
	sp := regs[2].subprog
	cb := frame{callsite: c.idx, subprog: sp, callback: true, cbLo: 0, cbHi: 1, cbRefs: len(c.st.refs), helper: id}
	switch id {
	case helperLoop: // callback_fn(u32 index, void *callback_ctx)
		cb.regs[1] = mkScalar(unknownScalar())
		cb.regs[2] = regs[3]
	case helperForEachMapElem: // callback_fn(map, key, value, callback_ctx)
		m := regs[1].mapIdx
		cb.regs[1] = regs[1]
		cb.regs[2] = reg{typ: ptrToMapKey, mapIdx: m, v: constScalar(0)}
		cb.regs[3] = reg{typ: ptrToMapValue, mapIdx: m, v: constScalar(0)}
		cb.regs[4] = regs[3]
	}
	cb.regs[10] = reg{typ: ptrToStack, v: constScalar(0), frameno: uint8(c.st.curframe() + 1)}
	if c.st.curframe()+1 >= c.maxCallFrames() {
		c.logf("the call stack of %d frames is too deep", c.st.curframe()+2)
		return reject("E2BIG")
	}
	if !c.has(btfmodel.CapVerifierCallbackIterate) {
		// 6.1: the callback is walked once, now; the helper's R0 is already set when it
		// returns to the insn after the call.
		c.clobberCallerSaved()
		c.setReg(0, mkScalar(unknownScalar()))
		c.pushFrame(cb)
		c.cbNext = c.subprogs[sp].start
		return nil
	}
	// push_callback_call: the callback is a pushed branch (the caller's registers kept, to
	// walk the call again at its exit); bpf_loop stops after R1's umax visits.
	depth := c.st.cbDepth
	if id != helperLoop || uint64(depth) < c.st.regs[1].v.umax {
		st := c.st.clone()
		st.cbDepth = depth + 1
		st.callers = append(st.callers, st.frame)
		st.frame = cb
		if err := c.push(st, c.subprogs[sp].start); err != nil {
			return err
		}
	}
	c.st.cbDepth = 0
	c.clobberCallerSaved()
	c.setReg(0, mkScalar(unknownScalar()))
	return nil
}

// callbackExit is prepare_func_exit's callback case: R0 a scalar within the range.
func (c *checker) callbackExit(f *frame) error {
	r0 := &f.regs[0]
	// prepare_func_exit reads no register: an unset R0 is only "not a scalar value".
	if r0.typ != scalarValue {
		c.logf("R0 not a scalar value")
		return reject("EACCES")
	}
	out := r0.v.smin < f.cbLo || r0.v.smax > f.cbHi // retval_range_within
	if !c.has(btfmodel.CapVerifierCallbackIterate) {
		out = !tnumRange(uint64(f.cbLo), uint64(f.cbHi)).in(r0.v.t) // 6.1: tnum_in(tnum_range)
	}
	if out {
		c.logf("At callback return the register R0 %s should have been in %s", c.valueDesc(r0), c.rangeDesc(f.cbLo, f.cbHi))
		return reject("EINVAL")
	}
	if len(c.st.refs) > f.cbRefs && !c.has(btfmodel.CapVerifierRefsInState) {
		r := c.st.refs[len(c.st.refs)-1]
		c.logf("Unreleased reference id=%d alloc_insn=%d", r.id, r.insn)
		return reject("EINVAL")
	}
	return nil
}

// valueDesc and rangeDesc are verbose_invalid_scalar's words.
func (c *checker) valueDesc(r *reg) string {
	if c.has(btfmodel.CapVerifierCallbackIterate) {
		d := "has"
		if r.v.smin > math.MinInt64 {
			d += fmt.Sprintf(" smin=%d", r.v.smin)
		}
		if r.v.smax < math.MaxInt64 {
			d += fmt.Sprintf(" smax=%d", r.v.smax)
		}
		if d == "has" {
			d += " unknown scalar value"
		}
		return d
	}
	if !r.v.t.isUnknown() { // 6.1 prints the tnum
		return "has value " + r.v.t.String()
	}
	return "has unknown scalar value"
}

func (c *checker) rangeDesc(lo, hi int64) string {
	if c.has(btfmodel.CapVerifierCallbackIterate) {
		return fmt.Sprintf("[%d, %d]", lo, hi)
	}
	return tnumRange(uint64(lo), uint64(hi)).String()
}

// mapKeyAccess is check_mem_access for PTR_TO_MAP_KEY: read-only, key_size bytes.
func (c *checker) mapKeyAccess(regno uint8, r *reg, off, size int, write bool, value int) error {
	if write {
		c.logf("write to change key R%d not allowed", regno)
		return reject("EACCES")
	}
	if err := c.memRegion(regno, r, off, size, int(c.prog.Maps[r.mapIdx].KeySize), "map_key"); err != nil {
		return err
	}
	if value >= 0 {
		c.setReg(uint8(value), mkScalar(unknownScalar()))
	}
	return nil
}
