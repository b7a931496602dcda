package verifier

import "github.com/trampjit/trampjit/btfmodel"

// Open-coded iterator loops converge the way process_iter_next_call makes them
// (kernel/bpf/verifier.c): when next forks the active state, widen_imprecise_scalars
// compares it with the checkpoint of the previous iteration at the same next call
// (find_prev_entry) and forgets every imprecise scalar that changed (maybe_widen_reg), so
// that an accumulator (sum += *v) becomes unknown after two rounds and the next checkpoint
// covers it (RANGE_WITHIN at the forced checkpoint, prune.go).
//
// Precision is the model's static one (prune.go flow): a scalar the rest of the program
// may need precise (a branch, an address, a helper size, the return check) is kept.

// widenImprecise is widen_imprecise_scalars from the previous iteration's checkpoint at
// insn c.idx onto the active state.
func (c *checker) widenImprecise(active *state) {
	if c.st.parent == nil {
		return
	}
	var prev *visit
	for v := c.st.parent.parent; v != nil; v = v.parent {
		if v.insn == c.idx && len(v.st.callers) == len(active.callers) && v.st.callsite == active.callsite {
			prev = v
			break
		}
	}
	if prev == nil {
		return
	}
	prec := regset(0)
	if c.idx+1 < len(c.fi.prec) {
		prec = c.fi.prec[c.idx+1]
	}
	for r := 0; r < 10; r++ {
		o, n := &prev.st.regs[r], &active.regs[r]
		if o.typ != scalarValue || n.typ != scalarValue || prec&bit(uint8(r)) != 0 {
			continue
		}
		if o.v == n.v && o.id == n.id {
			continue // regs_exact
		}
		w := n.written
		*n = mkScalar(unknownScalar())
		n.written = w
	}
	keep := c.spillsKept()
	for sp := range active.spill {
		b := sp * regSize
		if keep[sp] || prev.st.stack[b] != stackSpill || active.stack[b] != stackSpill {
			continue
		}
		o, n := &prev.st.spill[sp], &active.spill[sp]
		if o.typ != scalarValue || n.typ != scalarValue || o.v == n.v && o.id == n.id {
			continue
		}
		*n = mkScalar(unknownScalar())
	}
}

// spillsKept are the stack slots (spi) whose spilled scalar widening may not forget: filled
// into a register the program may need precise (or filled in part), or reachable through
// a pointer the program derived from R10 (a helper or kfunc may read them). The model has
// no precision of stack slots of its own, so this is the static, program-wide answer.
func (c *checker) spillsKept() []bool {
	if c.iterKeep != nil {
		return c.iterKeep
	}
	keep := make([]bool, stackSize/regSize)
	all := func() {
		for i := range keep {
			keep[i] = true
		}
	}
	for i := range c.insns {
		in := &c.insns[i]
		switch in.class() {
		case clsLDX:
			if in.src != 10 {
				continue
			}
			off := int(in.off)
			if off >= 0 || off < -stackSize {
				continue
			}
			sp := (stackSize + off) / regSize
			var po regset
			for _, s := range c.succs(i) {
				if s >= 0 && s < len(c.fi.prec) {
					po |= c.fi.prec[s]
				}
			}
			if in.size() != regSize || off%regSize != 0 || po&bit(in.dst) != 0 {
				keep[sp] = true
			}
		case clsSTX, clsST:
			if in.dst == 10 && in.mode() == modeATOMIC {
				all()
			}
		default:
			if in.src != 10 || !in.isX() {
				continue
			}
			// rX = r10 (then rX += k): every slot from k up is within its reach
			lo := -stackSize
			if i+1 < len(c.insns) {
				nx := &c.insns[i+1]
				if nx.class() == clsALU64 && aluOpName(nx) == "+=" && !nx.isX() && nx.dst == in.dst && nx.imm < 0 {
					lo = int(nx.imm)
				}
			}
			for sp := range keep {
				if sp*regSize-stackSize+regSize > lo {
					keep[sp] = true
				}
			}
		}
	}
	c.iterKeep = keep
	return keep
}

// iterSlot is an iterator on the stack (STACK_ITER) with the reference its new took
// (mark_stack_slots_iter: acquire_reference_state), dropped by its destroy
// (unmark_stack_slots_iter), so that a missing destroy is a leak at the exit.
type iterSlot struct {
	frame, off int
	ref        uint32
}

// iterArg is the reference part of process_iter_arg for the iterator argument r.
func (c *checker) iterArg(d *kfuncDesc, r *reg) {
	if r.typ != ptrToStack || !r.v.isConst() {
		return
	}
	off := int(r.off) + int(int64(r.v.val()))
	switch {
	case d.kf.Has(btfmodel.KFIterNew):
		id := c.acquireRef()
		c.st.iters = append(c.st.iters, iterSlot{frame: int(r.frameno), off: off, ref: id})
	case d.kf.Has(btfmodel.KFIterDestroy):
		for i, it := range c.st.iters {
			if it.frame == int(r.frameno) && it.off == off {
				c.releaseRef(it.ref)
				c.st.iters = append(c.st.iters[:i:i], c.st.iters[i+1:]...)
				return
			}
		}
	}
}
