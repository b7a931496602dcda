package verifier

import "github.com/trampjit/trampjit/btfmodel"

// Jumps, calls and exit: do_check's BPF_JMP cases, check_cond_jmp_op, is_branch_taken and
// reg_set_min_max (kernel/bpf/verifier.c).

func (c *checker) jmp(in *insn) (int, bool, error) {
	is32 := in.class() == clsJMP32
	op := jmpOps[in.op()>>4]
	switch op {
	case "call":
		if err := c.callUnderLock(in); err != nil { // helper_spinlock.go
			return 0, false, err
		}
		switch {
		case !in.isX() && in.dst == 0 && !is32 && in.src == pseudoCall:
			next, err := c.subprogCall(in)
			return next, false, err
		case !in.isX() && in.dst == 0 && !is32 && in.src == pseudoKfunc:
			return c.idx + 1, false, c.kfuncCall(in)
		}
		if in.isX() || in.off != 0 || in.src != 0 || in.dst != 0 || is32 {
			c.logf("BPF_CALL uses reserved fields")
			return 0, false, reject("EINVAL")
		}
		err := c.call(in)
		if next := c.cbNext; next != 0 {
			c.cbNext = 0 // a 6.1 callback is walked now
			return next, false, err
		}
		return c.idx + 1, false, err
	case "exit":
		if in.isX() || in.imm != 0 || in.src != 0 || in.dst != 0 || is32 {
			c.logf("BPF_EXIT uses reserved fields")
			return 0, false, reject("EINVAL")
		}
		if err := c.lockAtExit(); err != nil { // helper_spinlock.go
			return 0, false, err
		}
		if c.st.curframe() > 0 {
			// A subprogram's exit (prepare_func_exit); a callback's references are checked
			// there, a static subprogram's stay with the caller.
			next, err := c.funcExit()
			return next, false, err
		}
		if err := c.checkReferenceLeak(); err != nil {
			return 0, false, err
		}
		if c.st.subprog != 0 {
			return 0, true, c.globalExit()
		}
		return 0, true, c.checkReturn()
	case "jmp":
		if in.isX() || in.src != 0 || in.dst != 0 || (!is32 && in.imm != 0) || (is32 && in.off != 0) {
			c.logf("BPF_JA uses reserved fields")
			return 0, false, reject("EINVAL")
		}
		return in.target(c.idx), false, nil
	case "":
		c.logf("invalid BPF_JMP/JMP32 opcode %x", in.op())
		return 0, false, reject("EINVAL")
	}
	if err := c.readReg(in.dst); err != nil {
		return 0, false, err
	}
	var src reg
	if in.isX() {
		if in.imm != 0 {
			c.logf("BPF_JMP/JMP32 uses reserved fields")
			return 0, false, reject("EINVAL")
		}
		if err := c.readReg(in.src); err != nil {
			return 0, false, err
		}
		src = c.st.regs[in.src]
	} else {
		if in.src != 0 {
			c.logf("BPF_JMP/JMP32 uses reserved fields")
			return 0, false, reject("EINVAL")
		}
		v := uint64(int64(in.imm))
		if is32 {
			v = uint64(uint32(in.imm))
		}
		src = mkScalar(constScalar(v))
	}
	dst := c.st.regs[in.dst]
	target := in.target(c.idx)
	if in.isX() && in.src == in.dst && dst.typ == scalarValue && c.has(btfmodel.CapVerifierSameRegBranch) {
		switch op {
		case "==", ">=", "<=", "s>=", "s<=":
			return target, false, nil
		case "!=", ">", "<", "s>", "s<":
			return c.idx + 1, false, nil
		}
	}
	switch taken := c.branchTaken(&dst, &src, op, is32); taken {
	case 0, 1:
		c.demandBranchPrecise(in) // check_cond_jmp_op: mark_chain_precision (loopdump.go)
		if taken == 1 {
			return target, false, nil
		}
		return c.idx + 1, false, nil
	}
	defer c.syncLinked(in)
	other := c.st.clone()
	// Maybe-null pointer compared with 0: each edge learns which it is (mark_ptr_or_null_regs).
	if !is32 && !in.isX() && in.imm == 0 && (op == "==" || op == "!=") && dst.flags&flagMaybeNull != 0 && dst.isPtr() {
		markPtrOrNull(c.st, dst.id, op == "!=")
		markPtrOrNull(other, dst.id, op == "==")
	} else if dst.typ == scalarValue && src.typ == scalarValue {
		same, imm := in.isX() && in.dst == in.src, !in.isX()
		d0, s0 := c.refineEdge(dst.v, src.v, op, false, is32, imm, same)
		s1in := src.v
		if imm && c.has(btfmodel.CapVerifierRangeVsRange) {
			s1in = s0 // 6.12: the immediate is one fake register, refined by both edges
		}
		d1, s1 := c.refineEdge(dst.v, s1in, op, true, is32, imm, same)
		if c.has(btfmodel.CapVerifierRangeVsRange) {
			c.sanity(&d1, "true_reg1")
			if !same {
				c.sanity(&s1, "true_reg2")
			}
			c.sanity(&d0, "false_reg1")
			if !same && !imm {
				c.sanity(&s0, "false_reg2")
			}
			if same {
				s1, s0 = d1, d0
			}
		}
		other.regs[in.dst].v = d1
		c.st.regs[in.dst].v = d0
		if in.isX() {
			other.regs[in.src].v = s1
			c.st.regs[in.src].v = s0
		}
	}
	if err := c.push(other, target); err != nil {
		return 0, false, err
	}
	return c.idx + 1, false, nil
}

// markPtrOrNull turns every register (and spill) with this id into a scalar 0 (isNull) or
// drops PTR_MAYBE_NULL.
func markPtrOrNull(st *state, id uint32, isNull bool) {
	fix := func(r *reg) {
		if r.id != id || !r.isPtr() || r.flags&flagMaybeNull == 0 {
			return
		}
		if isNull {
			*r = mkScalar(constScalar(0))
			return
		}
		r.flags &^= flagMaybeNull
		if (r.typ == ptrToMapValue && r.flags&flagLockVal == 0) || (r.typ != ptrToMapValue && r.flags&flagTrusted == 0) {
			r.id = 0 // reg_may_point_to_spin_lock keeps it
		}
	}
	for n := 0; n <= st.curframe(); n++ { // every frame of the call stack
		f := st.frameAt(n)
		for i := range f.regs {
			fix(&f.regs[i])
		}
		for i := range f.spill {
			if f.stack[i*regSize] == stackSpill {
				fix(&f.spill[i])
			}
		}
	}
	if isNull {
		st.dropNullRef(id) // mark_ptr_or_null_regs releases a NULL acquired pointer's reference
	}
}

// regNotNull is reg_not_null (6.12) / reg_type_not_null (6.1).
func (c *checker) regNotNull(r *reg) bool {
	if r.flags&flagMaybeNull != 0 {
		return false
	}
	switch r.typ {
	case ptrToMapValue:
		return true
	case ptrToBTFID:
		return c.has(btfmodel.CapVerifierTrustedPtr) && r.isTrusted()
	case ptrToMem:
		// untrusted memory (7.2's walked pointer to a non-struct) may be NULL
		return c.has(btfmodel.CapVerifierRegNotNullMem) && r.flags&flagUntrusted == 0
	}
	return false
}

// branchTaken is is_branch_taken: 1 taken, 0 not taken, -1 unknown.
func (c *checker) branchTaken(dst, src *reg, op string, is32 bool) int {
	if dst.isPtr() || src.isPtr() {
		if is32 && c.has(btfmodel.CapVerifierRangeVsRange) {
			return -1 // 6.12 predicts no 32-bit comparison of a pointer (seen on 6.12.117)
		}
		p, s := dst, src
		if src.isPtr() && !dst.isPtr() {
			if !c.has(btfmodel.CapVerifierRangeVsRange) {
				return -1
			}
			p, s = src, dst
		}
		if s.typ != scalarValue || !s.v.isConst() || s.v.val() != 0 || !c.regNotNull(p) {
			return -1
		}
		switch op {
		case "==":
			return 0
		case "!=":
			return 1
		}
		return -1
	}
	a, b := bounds(dst.v, is32), bounds(src.v, is32)
	if !c.has(btfmodel.CapVerifierRangeVsRange) && !b.isConst() {
		return -1 // 6.1 predicts only against a constant source
	}
	switch op {
	case "==", "!=":
		eq := -1
		if a.isConst() && b.isConst() {
			eq = b2i(a.umin == b.umin)
		} else if !c.has(btfmodel.CapVerifierRangeVsRange) {
			// 6.1 decides equality only between constants
		} else if a.umin > b.umax || a.umax < b.umin || a.smin > b.smax || a.smax < b.smin || (a.t.v^b.t.v)&^(a.t.m|b.t.m) != 0 {
			eq = 0
		} else if !is32 && (dst.v.u32min > src.v.u32max || dst.v.u32max < src.v.u32min ||
			dst.v.s32min > src.v.s32max || dst.v.s32max < src.v.s32min) {
			eq = 0 // 6.12 also rules equality out by the 32-bit subranges
		}
		if eq < 0 || op == "==" {
			return eq
		}
		return 1 - eq
	case "&":
		if !b.isConst() && a.isConst() && c.has(btfmodel.CapVerifierRangeVsRange) {
			a, b = b, a
		}
		if b.isConst() {
			if a.t.v&b.umin != 0 {
				return 1
			}
			if (a.t.v|a.t.m)&b.umin == 0 {
				return 0
			}
		}
	case ">":
		return decide(a.umin > b.umax, a.umax <= b.umin)
	case ">=":
		return decide(a.umin >= b.umax, a.umax < b.umin)
	case "<":
		return decide(a.umax < b.umin, a.umin >= b.umax)
	case "<=":
		return decide(a.umax <= b.umin, a.umin > b.umax)
	case "s>":
		return decide(a.smin > b.smax, a.smax <= b.smin)
	case "s>=":
		return decide(a.smin >= b.smax, a.smax < b.smin)
	case "s<":
		return decide(a.smax < b.smin, a.smin >= b.smax)
	case "s<=":
		return decide(a.smax <= b.smin, a.smin > b.smax)
	}
	return -1
}

func decide(yes, no bool) int {
	switch {
	case yes:
		return 1
	case no:
		return 0
	}
	return -1
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rng is one width's view of a scalar: 64-bit, or the 32-bit subregister widened.
type rng struct {
	t          tnum
	umin, umax uint64
	smin, smax int64
}

func (r rng) isConst() bool { return r.umin == r.umax && r.t.isConst() }

func bounds(s scalar, is32 bool) rng {
	if is32 {
		return rng{s.t.subreg(), uint64(s.u32min), uint64(s.u32max), int64(s.s32min), int64(s.s32max)}
	}
	return rng{s.t, s.umin, s.umax, s.smin, s.smax}
}

// negate gives the condition that holds on the fall-through edge.
var negate = map[string]string{"==": "!=", "!=": "==", ">": "<=", ">=": "<", "<": ">=", "<=": ">",
	"s>": "s<=", "s>=": "s<", "s<": "s>=", "s<=": "s>", "&": "!&"}

// syncLinked is find_equal_scalars: registers sharing a scalar id get the refined bounds,
// on the path taken now and on the pushed one.
func (c *checker) syncLinked(in *insn) {
	sts := []*state{c.st}
	if n := len(c.stack); n > 0 && c.stack[n-1].prv == c.idx {
		sts = append(sts, c.stack[n-1].st)
	}
	for _, st := range sts {
		for _, r := range []uint8{in.dst, in.src} {
			src := st.regs[r]
			if src.typ != scalarValue || src.id == 0 {
				continue
			}
			for n := 0; n <= st.curframe(); n++ { // every frame, as the kernel does
				f := st.frameAt(n)
				for i := range f.regs {
					if f.regs[i].typ == scalarValue && f.regs[i].id == src.id {
						f.regs[i].v = src.v
					}
				}
				for i := range f.spill {
					if f.stack[i*regSize] == stackSpill && f.spill[i].typ == scalarValue && f.spill[i].id == src.id {
						f.spill[i].v = src.v
					}
				}
			}
		}
	}
}
