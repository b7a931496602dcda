package verifier

import (
	"fmt"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
)

// The "old state:" of is_state_visited's infinite-loop message (kernel/bpf/verifier.c),
// printed by print_verifier_state as the kernel holds that checkpoint when the loop is found:
//
//   - 6.12: every initialised register and stack slot, with its liveness marks
//     (print_liveness: "_r" read by a later path before it wrote it, mark_reg_read; "_w"
//     written in the segment that ended at the checkpoint, REG_LIVE_WRITTEN) and "P" on the
//     scalars that backtracking (__mark_chain_precision) marked precise in it.
//   - 7.2 (CapVerifierStaticLiveness): no liveness flags; the checkpoint keeps only the
//     registers live before its insn (compute_live_registers on the CFG whose constant
//     branches bpf_prune_dead_branches turned into jumps, kernel/bpf/const_fold.c) and the
//     stack slots read after it; scalar ids left on one register are dropped.
//
// Precision is replayed along the path from the checkpoint to the loop: each step records
// the registers its insn demanded precise (a branch decided by constants,
// check_cond_jmp_op), and a backward walk (backtrack_insn) carries them to the checkpoint.

// histStep is one insn of the path since the last checkpoint (the jmp_history the
// kernel's backtracking walks), with the registers it demanded precise.
type histStep struct {
	idx    int
	demand regset
}

// maxHist bounds a segment's recorded path; a longer one falls back to static precision.
const maxHist = 512

func (c *checker) recordStep() {
	if len(c.st.hist) >= maxHist {
		c.st.histLost = true
		return
	}
	c.st.hist = append(c.st.hist, histStep{idx: c.idx})
}

// demandPrecise records that the insn being walked needs register r precise.
func (c *checker) demandPrecise(r uint8) {
	if n := len(c.st.hist); n > 0 && c.st.hist[n-1].idx == c.idx && c.st.regs[r].typ == scalarValue {
		c.st.hist[n-1].demand |= bit(r)
	}
}

// markRegRead is mark_reg_read: the read reaches every checkpoint up the path until one
// whose segment wrote the register (screened by the current segment's own write).
func (c *checker) markRegRead(r uint8) {
	if r >= 10 || (c.fr != nil && c.fr != &c.st.frame) {
		return // R10 is read-only; callers' frames are compared whole
	}
	if c.st.regs[r].written {
		return
	}
	for v := c.st.parent; v != nil && v.regRead&bit(r) == 0; v = v.parent {
		v.regRead |= bit(r)
		if v.st.regs[r].written {
			break
		}
	}
}

// loopPrecise backtracks the path from checkpoint old to the current insn: the registers
// and stack slots (bit spi) of old that some later step needed precise.
func (c *checker) loopPrecise(old *visit) (regset, uint64, bool) {
	var segs [][]histStep
	segs = append(segs, c.st.hist)
	lost := c.st.histLost
	for v := c.st.parent; v != nil && v != old; v = v.parent {
		segs = append(segs, v.st.hist)
		lost = lost || v.st.histLost
	}
	if lost {
		return c.fi.prec[old.insn], 0, false
	}
	var m regset
	var sm uint64
	for _, seg := range segs { // newest segment first
		for k := len(seg) - 1; k >= 0; k-- {
			m |= seg[k].demand
			m, sm = c.backtrackInsn(seg[k].idx, m, sm)
		}
	}
	return m, sm, true
}

// backtrackInsn is backtrack_insn for the insns a loop body holds: what the insn's inputs
// must be for its outputs in m (registers) and sm (stack slots, fp-relative) to be known.
func (c *checker) backtrackInsn(i int, m regset, sm uint64) (regset, uint64) {
	in := &c.insns[i]
	d, s := bit(in.dst), bit(in.src)
	slot := func() (uint64, bool) {
		off := int(in.off)
		if off >= 0 || off < -stackSize || off%regSize != 0 {
			return 0, false
		}
		return 1 << uint((stackSize+off)/regSize), true
	}
	switch in.class() {
	case clsALU, clsALU64:
		if m&d == 0 {
			return m, sm
		}
		switch op := aluOpName(in); {
		case op == "=" && in.isX():
			return m&^d | s, sm
		case op == "=":
			return m &^ d, sm
		case in.isX():
			return m | s, sm
		}
	case clsLD:
		if in.isLdImm64() {
			return m &^ d, sm
		}
	case clsLDX:
		if m&d == 0 {
			return m, sm
		}
		m &^= d
		if b, ok := slot(); ok && in.src == 10 {
			sm |= b
		}
	case clsSTX, clsST:
		if b, ok := slot(); ok && in.dst == 10 && sm&b != 0 {
			sm &^= b
			if in.class() == clsSTX && in.mode() != modeATOMIC {
				m |= s
			}
		}
	case clsJMP, clsJMP32:
		if jmpOps[in.op()>>4] == "call" {
			m &^= argRegs | bit(0)
		}
	}
	return m, sm
}

// loopOldDump prints checkpoint old for the infinite-loop message.
func (c *checker) loopOldDump(old *visit) string {
	st := old.st
	prec, sprec, _ := c.loopPrecise(old)
	static := c.has(btfmodel.CapVerifierStaticLiveness)
	var live regset = ^regset(0)
	if static {
		live = c.foldedLive()[old.insn]
	}
	marks := func(r, w bool) string {
		if static || !r && !w {
			return ""
		}
		s := "_"
		if r {
			s += "r"
		}
		if w {
			s += "w"
		}
		return s
	}
	// 7.2 drops the ids no other shown register or slot shares.
	ids := map[uint32]int{}
	shownReg := func(i int) bool { return st.regs[i].typ != notInit && (i == 10 || live&bit(uint8(i)) != 0) }
	shownSlot := func(s int) bool { return !static || old.read&(1<<uint(s)) != 0 }
	for i := range st.regs {
		if shownReg(i) && st.regs[i].typ == scalarValue && st.regs[i].id != 0 {
			ids[st.regs[i].id]++
		}
	}
	for s := range st.spill {
		if shownSlot(s) && st.stack[s*regSize] == stackSpill && st.spill[s].typ == scalarValue && st.spill[s].id != 0 {
			ids[st.spill[s].id]++
		}
	}
	val := func(r *reg, precise bool) string {
		v := c.fmtReg(r)
		if r.typ != scalarValue {
			return v
		}
		if r.id != 0 && !r.v.isConst() && (!static || ids[r.id] > 1) {
			if strings.HasSuffix(v, "()") {
				v = strings.TrimSuffix(v, ")") + fmt.Sprintf("id=%d)", r.id)
			} else {
				v = strings.Replace(v, "(", fmt.Sprintf("(id=%d,", r.id), 1)
			}
		}
		if precise {
			v = "P" + v
		}
		return v
	}
	var b strings.Builder
	for i := range st.regs {
		if !shownReg(i) {
			continue
		}
		r := &st.regs[i]
		m := ""
		if i != 10 {
			m = marks(old.regRead&bit(uint8(i)) != 0, r.written)
		}
		fmt.Fprintf(&b, " R%d%s=%s", i, m, val(r, prec&bit(uint8(i)) != 0))
	}
	for s := len(st.spill) - 1; s >= 0; s-- {
		if !shownSlot(s) {
			continue
		}
		base := s * regSize
		off := base - stackSize
		m := marks(old.read&(1<<uint(s)) != 0, old.written&(1<<uint(s)) != 0)
		if st.stack[base] == stackSpill {
			fmt.Fprintf(&b, " fp%d%s=%s", off, m, val(&st.spill[s], sprec&(1<<uint(s)) != 0))
			continue
		}
		if t, ok := slotBytes(st, base); ok {
			fmt.Fprintf(&b, " fp%d%s=%s", off, m, t)
		}
	}
	if n := st.curframe(); n > 0 && b.Len() > 0 {
		return fmt.Sprintf(" frame%d:%s", n, b.String())
	}
	return b.String()
}

// demandBranchPrecise: a branch its operands decide needs the scalar ones precise; 7.2's
// folded branches are plain jumps there (constfold.go) and demand nothing.
func (c *checker) demandBranchPrecise(in *insn) {
	if c.has(btfmodel.CapVerifierStaticLiveness) {
		if _, folded := c.foldedBranchSet()[c.idx]; folded {
			return
		}
	}
	c.demandPrecise(in.dst)
	if in.isX() && in.src < 10 {
		c.demandPrecise(in.src)
	}
}
