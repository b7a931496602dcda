package verifier

// 7.2's constant folding ahead of the walk (kernel/bpf/const_fold.c): a forward dataflow
// finds the registers R0-R9 that hold one known constant at every insn
// (bpf_compute_const_regs), and bpf_prune_dead_branches turns each conditional jump those
// constants decide into an unconditional one, so that compute_live_registers does not see
// the dead edge nor the compared registers. The model uses it for the liveness 7.2's
// checkpoints keep (loopdump.go).

type constVal struct {
	known, unknown bool // neither: not reached yet
	val            uint64
}

// constRegs is bpf_compute_const_regs without the map-value cases (read-only map loads
// and map pointers count as unknown here).
func (c *checker) constRegs() [][10]constVal {
	n := len(c.insns)
	in := make([][10]constVal, n)
	unk := constVal{unknown: true}
	entry := func(s int) {
		if s >= 0 && s < n {
			for r := range in[s] {
				in[s][r] = unk
			}
		}
	}
	entry(0)
	for _, sp := range c.subprogs {
		entry(sp.start)
	}
	for changed := true; changed; {
		changed = false
		for i := 0; i < n; i++ {
			out := in[i]
			c.constXfer(i, &out)
			for _, s := range c.succs(i) {
				if s < 0 || s >= n {
					continue
				}
				for r := range out {
					o, nw := &in[s][r], out[r]
					switch {
					case !o.known && !o.unknown && (nw.known || nw.unknown):
						*o = nw
						changed = true
					case o.known && (!nw.known || nw.val != o.val):
						*o = unk
						changed = true
					}
				}
			}
		}
	}
	return in
}

// constXfer is const_reg_xfer for one insn.
func (c *checker) constXfer(i int, ci *[10]constVal) {
	in := &c.insns[i]
	unk := constVal{unknown: true}
	if in.dst >= 10 && in.class() != clsJMP && in.class() != clsJMP32 && in.class() != clsSTX && in.class() != clsST {
		return
	}
	switch in.class() {
	case clsALU, clsALU64:
		d := &ci[in.dst]
		var s constVal
		if in.src < 10 {
			s = ci[in.src]
		}
		switch op := aluOpName(in); {
		case op == "=" && !in.isX():
			*d = constVal{known: true, val: uint64(int64(in.imm))}
		case op == "=" && in.isX():
			*d = s
			if in.off != 0 {
				if !d.known {
					*d = unk
					break
				}
				switch in.off {
				case 8:
					d.val = uint64(int64(int8(d.val)))
				case 16:
					d.val = uint64(int64(int16(d.val)))
				case 32:
					d.val = uint64(int64(int32(d.val)))
				default:
					*d = unk
				}
			}
		case op == "+=" && !in.isX() && d.known:
			d.val += uint64(int64(in.imm))
		case op == "-=" && !in.isX() && d.known:
			d.val -= uint64(int64(in.imm))
		case op == "&=" && !in.isX():
			if d.known {
				d.val &= uint64(int64(in.imm))
			} else if in.imm == 0 {
				*d = constVal{known: true}
			} else {
				*d = unk
			}
		case op == "&=" && in.isX():
			switch {
			case d.known && d.val == 0:
			case s.known && s.val == 0:
				*d = constVal{known: true}
			case d.known && s.known:
				d.val &= s.val
			default:
				*d = unk
			}
		default:
			*d = unk
		}
		if in.class() == clsALU {
			if d.known {
				d.val = uint64(uint32(d.val))
			} else {
				*d = unk
			}
		}
	case clsLD:
		if in.isLdImm64() {
			if in.src == 0 && i+1 < len(c.insns) {
				ci[in.dst] = constVal{known: true, val: uint64(uint32(in.imm)) | uint64(uint32(c.insns[i+1].imm))<<32}
			} else {
				ci[in.dst] = unk
			}
		} else {
			for r := 0; r <= 5; r++ {
				ci[r] = unk
			}
		}
	case clsLDX:
		ci[in.dst] = unk
	case clsJMP:
		if jmpOps[in.op()>>4] == "call" {
			for r := 0; r <= 5; r++ {
				ci[r] = unk
			}
		}
	case clsSTX:
		if in.mode() == modeATOMIC {
			switch {
			case in.imm == 0xf1: // BPF_CMPXCHG loads R0
				ci[0] = unk
			case in.imm&0x01 != 0 && in.src < 10: // BPF_FETCH loads src
				ci[in.src] = unk
			}
		}
	}
}

// foldedBranches gives, for each conditional jump the constants decide, its one successor
// (bpf_prune_dead_branches; the values must fit 32 bits, as insn_aux const_reg_vals).
func (c *checker) foldedBranches() map[int]int {
	consts := c.constRegs()
	fold := map[int]int{}
	for i := range c.insns {
		in := &c.insns[i]
		if !in.isJump() || in.isJA() || (in.class() == clsJMP && jmpOps[in.op()>>4] == "call") {
			continue
		}
		op := jmpOps[in.op()>>4]
		if op == "exit" || in.dst >= 10 {
			continue
		}
		k := func(r uint8) (uint64, bool) {
			v := consts[i][r]
			return v.val, v.known && v.val == uint64(uint32(v.val))
		}
		dv, ok := k(in.dst)
		if !ok {
			continue
		}
		sv := uint64(int64(in.imm))
		if in.isX() {
			if in.src >= 10 {
				continue
			}
			if sv, ok = k(in.src); !ok {
				continue
			}
		}
		if in.class() == clsJMP32 {
			dv, sv = uint64(int64(int32(dv))), uint64(int64(int32(sv)))
		}
		var taken bool
		switch op {
		case "==":
			taken = dv == sv
		case "!=":
			taken = dv != sv
		case ">":
			taken = dv > sv
		case ">=":
			taken = dv >= sv
		case "<":
			taken = dv < sv
		case "<=":
			taken = dv <= sv
		case "s>":
			taken = int64(dv) > int64(sv)
		case "s>=":
			taken = int64(dv) >= int64(sv)
		case "s<":
			taken = int64(dv) < int64(sv)
		case "s<=":
			taken = int64(dv) <= int64(sv)
		case "&":
			taken = dv&sv != 0
		default:
			continue
		}
		if taken {
			fold[i] = in.target(i)
		} else {
			fold[i] = i + 1
		}
	}
	return fold
}

// foldedLive is compute_live_registers on the folded CFG: live-in registers per insn.
func (c *checker) foldedLive() []regset {
	if c.liveFolded != nil {
		return c.liveFolded
	}
	fold := c.foldedBranchSet()
	c.liveFolded = c.flowWith(func(i int) []int {
		if t, ok := fold[i]; ok {
			return []int{t}
		}
		return c.succs(i)
	}, func(i int) bool { _, ok := fold[i]; return ok }).live
	return c.liveFolded
}

func (c *checker) foldedBranchSet() map[int]int {
	if c.foldedBr == nil {
		c.foldedBr = c.foldedBranches()
	}
	return c.foldedBr
}
