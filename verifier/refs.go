package verifier

// Reference tracking: acquire_reference_state, release_reference and check_reference_leak
// (kernel/bpf/verifier.c). A pointer handed out with a reference (a ring buffer record from
// bpf_ringbuf_reserve, a task from bpf_task_acquire, ...) carries its ref_obj_id; every path
// must give it back before the program exits.

// refState is struct bpf_reference_state: the reference and the instruction that took it.
type refState struct {
	id   uint32
	insn int
}

// acquireRef records a new reference taken at the current instruction and returns its id
// (the register's ref_obj_id).
func (c *checker) acquireRef() uint32 {
	id := c.newID()
	c.st.refs = append(c.st.refs, refState{id: id, insn: c.idx})
	return id
}

// releaseRef drops reference id and invalidates every register and spilled copy that
// carries it (release_reference); false when the state holds no such reference.
func (c *checker) releaseRef(id uint32) bool {
	for i, r := range c.st.refs {
		if r.id != id {
			continue
		}
		c.st.refs = append(c.st.refs[:i:i], c.st.refs[i+1:]...)
		for n := range c.st.regs {
			if c.st.regs[n].refObjID == id {
				c.st.regs[n] = reg{}
				c.scratch[n] = true
			}
		}
		for s := range c.st.spill {
			if c.st.spill[s].refObjID == id {
				c.st.spill[s] = mkScalar(unknownScalar())
			}
		}
		return true
	}
	return false
}

// checkReferenceLeak is check_reference_leak at a program's exit.
func (c *checker) checkReferenceLeak() error {
	for _, r := range c.st.refs {
		c.logf("Unreleased reference id=%d alloc_insn=%d", r.id, r.insn)
	}
	if len(c.st.refs) > 0 {
		return reject("EINVAL")
	}
	return nil
}

// refsafe is the references part of states_equal: the same references, ids up to the
// renaming the register comparison established.
func refsafe(old, cur *state, ids map[uint32]uint32) bool {
	if len(old.refs) != len(cur.refs) {
		return false
	}
	for i := range old.refs {
		o, n := old.refs[i].id, cur.refs[i].id
		if m, ok := ids[o]; ok && m != n {
			return false
		}
		ids[o] = n
	}
	return true
}
