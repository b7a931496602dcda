package verifier

import (
	"fmt"

	"github.com/trampjit/trampjit/btfmodel"
)

// Pre-passes of bpf_check: check_subprogs, resolve_pseudo_ldimm64, check_cfg
// (kernel/bpf/verifier.c).

func (in *insn) isJump() bool {
	c := in.class()
	if c != clsJMP && c != clsJMP32 {
		return false
	}
	op := jmpOps[in.op()>>4]
	return op != "call" && op != "exit"
}

func (in *insn) isJA() bool { return in.isJump() && in.op() == 0x00 }

// target of a jump: JMP32|JA (gotol) uses imm.
func (in *insn) target(i int) int {
	if in.class() == clsJMP32 && in.op() == 0x00 {
		return i + int(in.imm) + 1
	}
	return i + int(in.off) + 1
}

// checkSubprogs is check_subprogs: jumps stay inside their subprogram, the last insn of
// each ends it (no fall-through into the next one).
func (c *checker) checkSubprogs() error {
	n := len(c.insns)
	if n == 0 {
		c.logf("last insn is not an exit or jmp")
		return reject("EINVAL")
	}
	for i := range c.insns {
		in := &c.insns[i]
		if in.filler {
			continue
		}
		if in.class() == clsJMP && in.op() == 0x80 && in.src == pseudoKfunc {
			if err := c.addKfunc(i); err != nil {
				return err
			}
		}
	}
	for i := range c.insns {
		in := &c.insns[i]
		k := c.subprogOf[i]
		end := c.subprogEnd(k)
		if !in.filler {
			if !c.has(btfmodel.CapVerifierCPUv4) && in.class() == clsLDX && (in.mode() != modeMEM || in.imm != 0) {
				c.logf("BPF_LDX uses reserved fields") // 6.1 predates BPF_MEMSX
				return reject("EINVAL")
			}
			if in.isJump() {
				if t := in.target(i); t < c.subprogs[k].start || t >= end {
					c.logf("jump out of range from insn %d to %d", i, t)
					return reject("EINVAL")
				}
			}
		}
		if i == end-1 && (in.filler || !(in.code == clsJMP|0x90 || in.isJA())) {
			c.logf("last insn is not an exit or jmp")
			return reject("EINVAL")
		}
	}
	return nil
}

// resolveMaps is resolve_pseudo_ldimm64: map references must name a known map.
func (c *checker) resolveMaps() error {
	c.insnMap = map[int]int{}
	for i := 0; i < len(c.insns); i++ {
		in := &c.insns[i]
		if in.filler || !in.isLdImm64() {
			continue
		}
		if i == len(c.insns)-1 || !c.insns[i+1].filler || c.insns[i+1].code != 0 || c.insns[i+1].dst != 0 || c.insns[i+1].src != 0 || c.insns[i+1].off != 0 {
			c.logf("invalid bpf_ld_imm64 insn")
			return reject("EINVAL")
		}
		switch in.src {
		case 0, pseudoFunc:
			continue
		case pseudoMapFD, pseudoMapValue:
		case pseudoBTFID: // ksym.go
			if err := c.resolveKsym(in); err != nil {
				return err
			}
			continue
		default:
			c.logf("unrecognized bpf_ld_imm64 insn")
			return reject("EINVAL")
		}
		idx := -1
		if in.mapRef != "" {
			for j, m := range c.prog.Maps {
				if m.Name == in.mapRef {
					idx = j
				}
			}
		} else if int(in.imm) >= 0 && int(in.imm) < len(c.prog.Maps) {
			idx = int(in.imm)
		}
		if idx < 0 {
			c.logf("fd %d is not pointing to valid bpf_map", in.imm)
			return reject("EBADF")
		}
		if err := c.mapProgCompat(idx); err != nil { // helper_spinlock.go
			return err
		}
		if in.src == pseudoMapValue {
			if off := uint32(in.imm64 >> 32); off >= c.prog.Maps[idx].ValueSize {
				c.logf("invalid access to map value pointer, value_size=%d off=%d", c.prog.Maps[idx].ValueSize, off)
				return reject("EINVAL")
			}
		}
		c.insnMap[i] = idx
	}
	return nil
}

// checkCFG is check_cfg for a privileged program: every insn reachable, no jump into a
// ld_imm64; loops are allowed (bpf_capable). It also marks the prune points.
func (c *checker) checkCFG() error {
	n := len(c.insns)
	seen := make([]bool, n)
	c.prune = map[int]bool{}
	work := []int{0}
	if c.has(btfmodel.CapVerifierRecursiveCallMsg) {
		if err := c.checkRecursionNamed(); err != nil {
			return err
		}
	} else if !c.has(btfmodel.CapVerifierCFGPerSubprog) {
		if err := c.checkRecursion(); err != nil {
			return err
		}
	}
	if c.has(btfmodel.CapVerifierCFGPerSubprog) {
		for _, sp := range c.subprogs[1:] {
			work = append(work, sp.start) // each subprogram is walked on its own
		}
	}
	for len(work) > 0 {
		t := work[len(work)-1]
		work = work[:len(work)-1]
		if t < 0 || t >= n || seen[t] {
			continue
		}
		seen[t] = true
		in := &c.insns[t]
		switch {
		case in.filler:
		case in.class() == clsJMP && in.op() == 0x90: // exit
		case in.isJA():
			c.prune[in.target(t)] = true
			if t+1 < n && !c.has(btfmodel.CapVerifierSparsePruneMarks) { // 6.3 stopped marking the insn after a goto
				c.prune[t+1] = true
			}
			work = append(work, in.target(t))
		case in.isJump():
			// visit_insn marks the conditional jump, push_insn its BRANCH target (every
			// version: loops are detected there, loops.json lp_stack_zero).
			c.prune[t] = true
			c.prune[in.target(t)] = true
			work = append(work, in.target(t), t+1)
		case in.isLdImm64():
			if in.src == pseudoFunc {
				work = append(work, t+int(in.imm)+1) // the callback
			}
			work = append(work, t+2)
		default:
			if in.class() == clsJMP && in.op() == 0x80 && t+1 < n {
				c.prune[t+1] = true
			}
			if in.class() == clsJMP && in.op() == 0x80 && in.src == pseudoCall {
				c.prune[t] = true
				work = append(work, t+int(in.imm)+1) // visit_func_call_insn
			}
			work = append(work, t+1)
		}
	}
	for i := 0; i < n; i++ {
		in := &c.insns[i]
		if in.filler {
			if seen[i] {
				c.logf("jump into the middle of ldimm64 insn %d", i-1)
				return reject("EINVAL")
			}
			continue
		}
		if !seen[i] {
			c.logf("unreachable insn %d", i)
			return reject("EINVAL")
		}
	}
	return nil
}

// mapLabel names the map of the ld_imm64 being printed (the current instruction).
func (c *checker) mapLabel(in *insn) string {
	if idx, ok := c.insnMap[c.idx]; ok {
		if in.src == pseudoMapValue {
			return fmt.Sprintf("map_value[id:%d]+%d", idx+1, in.imm64>>32)
		}
		return fmt.Sprintf("map[id:%d]", idx+1)
	}
	return fmt.Sprintf("0x%x", in.imm64)
}
