package verifier

import "github.com/trampjit/trampjit/btfmodel"

// The stack: check_stack_access_within_bounds, check_stack_write_fixed_off,
// check_stack_read_fixed_off (kernel/bpf/verifier.c) for a privileged program. A slot is
// 8 bytes; a register spilled into it marks its low `size` bytes STACK_SPILL and keeps the
// whole register state.

// stackBounds is check_stack_access_within_bounds; how is " read from", " write to" or
// " indirect access to".
func (c *checker) stackBounds(regno uint8, r *reg, off, size int, how string) (int, int, error) {
	lo, hi := r.v.smin+int64(off), r.v.smax+int64(off)+int64(size)
	if r.v.isConst() {
		lo = int64(r.v.val()) + int64(off)
		hi = lo + int64(size)
	}
	// The access reaches the stack of the frame the pointer was made in (func(env, reg)).
	c.frameNo = min(int(r.frameno), c.st.curframe())
	c.fr = c.st.frameAt(c.frameNo)
	minValid := int64(-stackSize)
	if !c.has(btfmodel.CapVerifierStackReadAll) && how == " read from" {
		minValid = int64(-c.fr.allocated) // 6.1: reads stay within allocated_stack
	}
	if lo < minValid || hi > 0 || (size == 0 && lo >= 0) {
		switch {
		case r.v.isConst():
			c.logf("invalid%s stack R%d off=%d size=%d", how, regno, off, size)
		case !c.has(btfmodel.CapLogVarOffStackOff):
			c.logf("invalid variable-offset%s stack R%d var_off=%s size=%d", how, regno, r.v.t, size)
		default:
			vt, voff := c.varOffMsg(r, off)
			c.logf("invalid variable-offset%s stack R%d var_off=%s off=%d size=%d", how, regno, vt, voff, size)
		}
		return 0, 0, reject("EACCES")
	}
	c.updateStackDepth(int(lo)) // update_stack_depth
	return int(lo), int(hi), nil
}

// markStackRead is mark_reg_read on a stack slot: the read reaches every checkpoint up the
// path until one whose segment wrote the slot.
func (c *checker) markStackRead(spi int) {
	if c.fr != nil && c.fr != &c.st.frame {
		return // a caller's slot: pruning compares callers' stacks whole (prune.go)
	}
	bit := uint64(1) << uint(spi)
	if c.st.written&bit != 0 {
		return
	}
	for v := c.st.parent; v != nil && v.read&bit == 0; v = v.parent {
		v.read |= bit
		if v.written&bit != 0 {
			break
		}
	}
}

// markStackReads marks the slots covering bytes [lo, hi) read.
func (c *checker) markStackReads(lo, hi int) {
	for b := lo; b < hi; b++ {
		c.markStackRead(slotIndex(b) / regSize)
	}
}

// growStack is grow_stack_state after a write reaching down to byte lo.
func (c *checker) growStack(lo int) {
	if n := (-lo + regSize - 1) / regSize * regSize; n > c.fr.allocated {
		c.fr.allocated = n
	}
}

// stackAccess is check_stack_read/check_stack_write.
func (c *checker) stackAccess(regno uint8, r *reg, off, size int, write bool, value int, stImm *int64) error {
	how := " read from"
	if write {
		how = " write to"
	}
	lo, hi, err := c.stackBounds(regno, r, off, size, how)
	if err != nil {
		return err
	}
	st := c.fr
	if err := c.dynptrStackAccess(int(r.frameno), lo, hi, write); err != nil { // dynptr.go
		return err
	}
	if write {
		c.growStack(lo)
	}
	if !r.v.isConst() {
		if !write {
			c.markStackReads(lo, hi)
		}
		// Variable offset: writes clobber the whole range, reads yield an unknown scalar.
		for b := lo; b < hi; b++ {
			c.clobberSlot(b)
		}
		if write {
			for b := lo; b < hi; b++ {
				st.stack[slotIndex(b)] = stackMisc
			}
		} else if value >= 0 {
			c.setReg(uint8(value), mkScalar(unknownScalar()))
		}
		return nil
	}
	spi := slotIndex(lo) / regSize
	c.scratch[100+spi] = true
	if write {
		if size == regSize && c.fr == &c.st.frame {
			c.st.written |= 1 << uint(spi)
		}
		return c.stackWrite(spi, lo, hi, size, value, stImm)
	}
	c.markStackRead(spi)
	return c.stackRead(spi, lo, hi, size, value)
}

func (c *checker) stackWrite(spi, lo, hi, size, value int, stImm *int64) error {
	st := c.fr
	var src *reg
	if value >= 0 {
		src = &c.st.regs[value]
	}
	aligned := lo%regSize == 0
	isZero := (src != nil && src.typ == scalarValue && src.v.isConst() && src.v.val() == 0) || (stImm != nil && *stImm == 0)
	switch {
	case src != nil && src.typ != scalarValue:
		if size != regSize {
			c.logf("invalid size of register spill")
			return reject("EACCES")
		}
		if src.typ == ptrToStack && c.fr != &c.st.frame {
			// A stack pointer may outlive its frame there (check_stack_write_fixed_off).
			c.logf("cannot spill pointers to stack into stack frame of the caller")
			return reject("EINVAL")
		}
		c.spillReg(spi, *src, size)
	case src != nil && aligned && (c.has(btfmodel.CapVerifierSpillAnyScalar) || (!isZero && !(src.v.isUnbounded() && src.v.t.isUnknown()))):
		// 6.12 spills every scalar; 6.1 only bounded, non-zero ones.
		if c.has(btfmodel.CapVerifierSpillAnyScalar) && src.id == 0 && !src.v.isConst() && (size == regSize || src.v.umax < 1<<(8*size)) {
			src.id = c.newID() // 6.12 links the spilled copy with its source
		}
		c.spillReg(spi, *src, size)
	case src == nil && stImm != nil && aligned && (c.has(btfmodel.CapVerifierSTImmSpill) ||
		(*stImm != 0 && c.has(btfmodel.CapVerifierSTImmSpillNonZero))):
		// BPF_ST as a spilled constant; 6.1 keeps a zero one STACK_ZERO (fuzzfix2.json)
		c.spillReg(spi, mkScalar(constScalar(uint64(*stImm))), size)
	default:
		c.clobberSlot(lo)
		kind := stackMisc
		if isZero {
			kind = stackZero
		}
		for b := lo; b < hi; b++ {
			st.stack[slotIndex(b)] = kind
		}
	}
	return nil
}

// spillReg is save_register_state: the low size bytes become STACK_SPILL, the others of the
// slot keep INVALID (and, on 6.12, ZERO) and otherwise become MISC.
func (c *checker) spillReg(spi int, r reg, size int) {
	r.written = false
	base := spi * regSize
	c.fr.spill[spi] = r
	for b := 0; b < regSize; b++ {
		k := &c.fr.stack[base+b]
		switch {
		case b < size:
			*k = stackSpill
		case *k == stackInvalid, *k == stackZero && c.has(btfmodel.CapVerifierStackZeroKept):
		default:
			*k = stackMisc
		}
	}
}

func (c *checker) stackRead(spi, lo, hi, size, value int) error {
	st := c.fr
	base := spi * regSize
	if st.stack[base] == stackSpill {
		sp := st.spill[spi]
		spillSize := 0
		for spillSize < regSize && st.stack[base+spillSize] == stackSpill {
			spillSize++
		}
		if size == regSize && spillSize == regSize {
			if value >= 0 {
				c.setReg(uint8(value), sp)
			}
			return nil
		}
		if sp.typ != scalarValue {
			c.logf("invalid size of register fill")
			return reject("EACCES")
		}
		if value < 0 {
			return nil
		}
		// A fill at the slot start of (6.12: at most) the spilled size keeps the value;
		// check_mem_access then narrows it.
		if lo%regSize == 0 && (size == spillSize || (c.has(btfmodel.CapVerifierNarrowFill) && size <= spillSize)) {
			sp.id = 0
			c.setReg(uint8(value), sp)
			return nil
		}
	}
	spills, zeros := 0, 0
	for b := lo; b < hi; b++ {
		switch st.stack[slotIndex(b)] {
		case stackZero:
			zeros++
		case stackSpill:
			spills++
		}
	}
	if value < 0 {
		return nil
	}
	sp := st.spill[spi]
	if zeros == size || (spills == size && c.has(btfmodel.CapVerifierStackZeroKept) && sp.v.isConst() && sp.v.val() == 0) {
		c.setReg(uint8(value), mkScalar(constScalar(0)))
	} else {
		c.setReg(uint8(value), mkScalar(unknownScalar()))
	}
	return nil
}

// clobberSlot turns a spilled register covering byte off into plain data (scrub_spilled_slot).
func (c *checker) clobberSlot(off int) {
	spi := slotIndex(off) / regSize
	base := spi * regSize
	if c.fr.stack[base] == stackSpill {
		for b := 0; b < regSize; b++ {
			if c.fr.stack[base+b] == stackSpill {
				c.fr.stack[base+b] = stackMisc
			}
		}
		c.fr.spill[spi] = reg{}
	}
}

// updateStackDepth is update_stack_depth: the subprogram owning the accessed frame needs
// at least -lo bytes of stack.
func (c *checker) updateStackDepth(lo int) {
	sp := c.fr.subprog
	if sp >= 0 && sp < len(c.subprogs) && -lo > c.subprogs[sp].depth {
		c.subprogs[sp].depth = -lo
	}
}
