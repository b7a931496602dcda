package verifier

import "github.com/trampjit/trampjit/btfmodel"

// State pruning, kept simple: is_state_visited compares the new state with the states
// recorded at the same prune point. A recorded state covers a new one when every register
// that is live there (static liveness) is covered: scalars whose value can still matter
// (static precision: they may reach a branch, an address, a helper argument, a store or the
// return check) by range inclusion, other scalars by type, pointers exactly (ids up to
// renaming). The stack is compared slot by slot. This mirrors states_equal/regsafe/stacksafe
// (kernel/bpf/verifier.c) with liveness and precision computed statically rather than by
// backtracking, which is coarser (prunes less) but sound.

type regset uint16

func bit(r uint8) regset { return 1 << r }

const argRegs = regset(0x3e) // R1-R5

// flowInfo is per-insn live-in and precise-in register sets.
type flowInfo struct{ live, prec []regset }

func (c *checker) succs(i int) []int {
	in := &c.insns[i]
	switch {
	case in.filler:
		return nil
	case in.class() == clsJMP && in.op() == 0x90:
		return nil
	case in.isJA():
		return []int{in.target(i)}
	case in.isJump():
		return []int{i + 1, in.target(i)}
	case in.isLdImm64():
		return []int{i + 2}
	}
	return []int{i + 1}
}

// transfer gives (live-in, precise-in) from (live-out, precise-out).
func (c *checker) transfer(i int, lo, po regset) (regset, regset) {
	in := &c.insns[i]
	d, s := bit(in.dst), bit(in.src)
	switch in.class() {
	case clsALU, clsALU64:
		op := aluOpName(in)
		switch {
		case op == "=" && in.isX():
			li, pi := lo&^d|s, po&^d
			if po&d != 0 {
				pi |= s
			}
			return li, pi
		case op == "=":
			return lo &^ d, po &^ d
		case op == "neg" || op == "endian" || !in.isX():
			return lo | d, po
		}
		pi := po
		if po&d != 0 {
			pi |= s
		}
		return lo | d | s, pi
	case clsLDX:
		return lo&^d | s, po&^d | s
	case clsSTX:
		u := d | s
		if in.mode() == modeATOMIC {
			if in.imm == 0xf1 {
				u |= bit(0)
			}
			return lo | u, po | u
		}
		// A stored value needs no precision of its own: memory loads come back unknown and
		// spilled slots are compared exactly (frameCovers), as backtrack_insn tracks a
		// spill's precision through the slot.
		return lo | u, po | d
	case clsST:
		return lo | d, po | d
	case clsLD:
		if in.isLdImm64() {
			return lo &^ d, po &^ d
		}
		return lo, po
	case clsJMP, clsJMP32:
		switch jmpOps[in.op()>>4] {
		case "call":
			args := argRegs
			if p, ok := helperProtos[in.imm]; ok && in.src == 0 {
				args = 0
				for j := range p.args {
					args |= bit(uint8(j + 1))
				}
			} else if d := c.kfuncs[i]; d != nil && d.proto != nil { // a kfunc: its BTF prototype's
				args = 0
				for j := range d.proto.Params {
					args |= bit(uint8(j + 1))
				}
			}
			clob := argRegs | bit(0)
			return lo&^clob | args, po&^clob | args
		case "exit":
			r0 := bit(0)
			if c.subprogOf != nil && c.subprogOf[i] != 0 {
				return r0, r0 // a subprogram's R0 may decide anything in its caller
			}
			// 6.1's check_return_code does not mark R0 precise (6.8 began to), so a state
			// with any R0 at the exit prunes another there.
			if c.prog.AttachType == btfmodel.ModRet || !c.has(btfmodel.CapVerifierExitR0Precise) {
				return r0, 0
			}
			return r0, r0
		case "jmp":
			return lo, po
		}
		u := d
		if in.isX() {
			u |= s
		}
		return lo | u, po | u
	}
	return lo, po
}

// flow computes live-in and precise-in sets to a fixpoint (backward).
func (c *checker) flow() flowInfo { return c.flowWith(c.succs, nil) }

// flowWith is flow over the given successors; an insn in asJA (7.2's folded branches) uses
// no register.
func (c *checker) flowWith(succs func(int) []int, asJA func(int) bool) flowInfo {
	n := len(c.insns)
	f := flowInfo{live: make([]regset, n), prec: make([]regset, n)}
	for changed := true; changed; {
		changed = false
		for i := n - 1; i >= 0; i-- {
			var lo, po regset
			for _, s := range succs(i) {
				if s >= 0 && s < n {
					lo |= f.live[s]
					po |= f.prec[s]
				}
			}
			li, pi := lo, po
			if asJA == nil || !asJA(i) {
				li, pi = c.transfer(i, lo, po)
			}
			li |= bit(10)
			if li != f.live[i] || pi != f.prec[i] {
				f.live[i], f.prec[i] = li, pi
				changed = true
			}
		}
	}
	return f
}

// covers reports whether the state recorded at insn i covers cur.
func (c *checker) covers(ov *visit, cur *state, i int) bool {
	old := ov.st
	ids := map[uint32]uint32{}
	// states_equal: the same call stack (frames and callsites); the callers' frames are
	// compared whole (their liveness is not tracked here), then the current one.
	if len(old.callers) != len(cur.callers) || old.callsite != cur.callsite || old.subprog != cur.subprog {
		return false
	}
	for n := range old.callers {
		if old.callers[n].callsite != cur.callers[n].callsite || !c.frameCovers(&old.callers[n], &cur.callers[n], ^regset(0), ^regset(0), ^uint64(0), ids) {
			return false
		}
	}
	live, prec, read := c.fi.live[i], c.fi.prec[i], ov.read
	if c.rangeWithin && !c.iterNextAt(i) { // an iterator's next keeps liveness and precision
		live, prec = ^regset(0), ^regset(0) // RANGE_WITHIN: every register, by range
	}
	if c.rangeWithin || len(c.subprogs) > 1 {
		read = ^uint64(0) // stack liveness is per frame in the kernel; here: every slot
	}
	if !c.frameCovers(&old.frame, &cur.frame, live, prec, read, ids) {
		return false
	}
	return refsafe(old, cur, ids) && locksafe(old, cur, ids) && dynptrsafe(old, cur) // locksafe: helper_spinlock.go; dynptrsafe: dynptr.go
}

// frameCovers is func_states_equal for one frame: registers in live (by range when in
// prec), stack slots in read.
func (c *checker) frameCovers(old, cur *frame, live, prec regset, read uint64, ids map[uint32]uint32) bool {
	for r := range old.regs {
		if live&bit(uint8(r)) == 0 {
			continue
		}
		if !c.regCovers(&old.regs[r], &cur.regs[r], prec&bit(uint8(r)) != 0, ids) {
			return false
		}
	}
	// stacksafe: only slots a later path read matter; uninitialised or (privileged) misc
	// bytes of the old state accept anything.
	for b := 0; b < stackSize; b++ {
		spi := b / regSize
		if read&(1<<uint(spi)) == 0 {
			continue
		}
		o, n := old.stack[b], cur.stack[b]
		switch {
		case o == stackInvalid || o == stackMisc:
		case stackSize-b > cur.allocated:
			return false
		case o != n:
			return false
		}
	}
	for s := range old.spill {
		if read&(1<<uint(s)) != 0 && old.stack[s*regSize] == stackSpill && !c.regCovers(&old.spill[s], &cur.spill[s], true, ids) {
			return false
		}
	}
	return true
}

func (c *checker) regCovers(o, n *reg, precise bool, ids map[uint32]uint32) bool {
	if o.typ == notInit {
		return true
	}
	if o.typ != n.typ {
		return false
	}
	if o.typ == scalarValue {
		if !precise {
			return true
		}
		if c.has(btfmodel.CapVerifierPruneScalarIDs) && !c.scalarIDs(o.id, n.id, ids) { // 6.1 ignores scalar ids here
			return false
		}
		a, b := o.v, n.v
		return a.smin <= b.smin && a.smax >= b.smax && a.umin <= b.umin && a.umax >= b.umax &&
			a.s32min <= b.s32min && a.s32max >= b.s32max && a.u32min <= b.u32min && a.u32max >= b.u32max &&
			a.t.in(b.t)
	}
	if o.flags != n.flags || o.off != n.off || o.v != n.v || o.btfType != n.btfType || o.mapIdx != n.mapIdx || o.memSize != n.memSize ||
		o.frameno != n.frameno || o.subprog != n.subprog {
		return false
	}
	if (o.id == 0) != (n.id == 0) {
		return false
	}
	return o.id == 0 || sameID(o.id, n.id, ids)
}

// scalarIDs is 6.12's check_scalar_ids: a missing id on either side is a fresh one, so
// registers linked in the new state but not in the old do not match.
func (c *checker) scalarIDs(o, n uint32, ids map[uint32]uint32) bool {
	if o == 0 {
		c.tmpID++
		o = 1<<31 | c.tmpID
	}
	if n == 0 {
		c.tmpID++
		n = 1<<31 | c.tmpID
	}
	if m, ok := ids[o]; ok {
		return m == n
	}
	for _, v := range ids {
		if v == n {
			return false
		}
	}
	ids[o] = n
	return true
}

// sameID is check_ids: old ids map consistently onto new ones.
func sameID(o, n uint32, ids map[uint32]uint32) bool {
	if n == 0 {
		return false
	}
	if m, ok := ids[o]; ok {
		return m == n
	}
	ids[o] = n
	return true
}
