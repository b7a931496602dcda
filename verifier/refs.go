package verifier

import "github.com/trampjit/trampjit/btfmodel"

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
// carries it, in every frame (release_reference; mark_reg_invalid: privileged programs
// may leak pointers, so the copies become unknown scalars); false when the state holds no
// such reference.
func (c *checker) releaseRef(id uint32) bool {
	if id == 0 {
		return false
	}
	for i, r := range c.st.refs {
		if r.id != id {
			continue
		}
		c.st.refs = append(c.st.refs[:i:i], c.st.refs[i+1:]...)
		for n := 0; n <= c.st.curframe(); n++ {
			f := c.st.frameAt(n)
			for k := range f.regs {
				if f.regs[k].refObjID == id {
					f.regs[k] = mkScalar(unknownScalar())
					if n == c.st.curframe() {
						c.scratch[k] = true
					}
				}
			}
			for s := range f.spill {
				if f.stack[s*regSize] == stackSpill && f.spill[s].refObjID == id {
					f.spill[s] = mkScalar(unknownScalar())
				}
			}
		}
		return true
	}
	return false
}

// checkReferenceLeak is the main program's exit checks of references and RCU regions:
// 6.12's do_check ("bpf_rcu_read_unlock is missing", then check_reference_leak) or 7.2's
// check_resource_leak (references, then the region, each with its "BPF_EXIT instruction in
// main prog" line).
func (c *checker) checkReferenceLeak() error {
	if c.st.rcuLock > 0 && !c.has(btfmodel.CapVerifierResourceLeakMsg) {
		c.logf("bpf_rcu_read_unlock is missing")
		return reject("EINVAL")
	}
	if err := c.preemptLeak(false); err != nil { // kfunc_special.go
		return err
	}
	for _, r := range c.st.refs {
		c.logf("Unreleased reference id=%d alloc_insn=%d", r.id, r.insn)
	}
	if len(c.st.refs) > 0 {
		if c.has(btfmodel.CapVerifierResourceLeakMsg) { // 7.2 check_resource_leak's prefix
			c.logf("BPF_EXIT instruction in main prog would lead to reference leak")
		}
		return reject("EINVAL")
	}
	if c.st.rcuLock > 0 {
		c.logf("BPF_EXIT instruction in main prog cannot be used inside bpf_rcu_read_lock-ed region")
		return reject("EINVAL")
	}
	return c.preemptLeak(true) // kfunc_special.go
}

// refsafe is the references part of states_equal: the same references, ids up to the
// renaming the register comparison established, and the same RCU region depth
// (active_rcu_lock).
func refsafe(old, cur *state, ids map[uint32]uint32) bool {
	if len(old.refs) != len(cur.refs) || old.rcuLock != cur.rcuLock || old.preemptLock != cur.preemptLock {
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
