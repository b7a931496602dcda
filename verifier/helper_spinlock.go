package verifier

import (
	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// bpf_spin_lock in map values: process_spin_lock (kernel/bpf/verifier.c), the lock checks
// do_check makes at calls and at BPF_EXIT, and check_map_access's refusal of direct
// loads and stores of the lock word. The lock's offset comes from the value's BTF
// (btf_parse_fields, kernel/bpf/btf.c).

// spinLock is active_lock: the map whose value holds the taken lock and the id of the
// register that took it (6.12 active_lock.ptr/id; 7.2 keeps it as a REF_TYPE_LOCK).
type spinLock struct {
	held   bool
	mapIdx int
	id     uint32
}

// spinLockOff is the offset of the struct bpf_spin_lock in a map's value, -1 without one
// (or with more than one: btf_parse_fields refuses two locks).
func spinLockOff(m *Map) int {
	if m.Value == nil {
		return -1
	}
	off, n := -1, 0
	// Only the top-level struct's members count (btf_find_field walks one level, nested
	// structs are not searched for a spin lock).
	if s, ok := btf.UnderlyingType(m.Value).(*btf.Struct); ok {
		if s.Name == "bpf_spin_lock" {
			return 0
		}
		for _, mb := range s.Members {
			if ms, ok := btf.UnderlyingType(mb.Type).(*btf.Struct); ok && ms.Name == "bpf_spin_lock" {
				off, n = int(mb.Offset/8), n+1
			}
		}
	}
	if n != 1 {
		return -1
	}
	return off
}

// processSpinLock is process_spin_lock for bpf_spin_lock (lock) and bpf_spin_unlock.
func (c *checker) processSpinLock(regno uint8, r *reg, lock bool) error {
	what := "bpf_spin_lock"
	if !r.v.isConst() {
		c.logf("R%d doesn't have constant offset. bpf_spin_lock has to be at the constant offset", regno)
		return reject("EINVAL")
	}
	m := &c.prog.Maps[r.mapIdx]
	if m.Value == nil {
		c.logf("map '%s' has to have BTF in order to use %s", m.Name, what)
		return reject("EINVAL")
	}
	lockOff := spinLockOff(m)
	if lockOff < 0 {
		if c.has(btfmodel.CapVerifierBTFRecord) {
			c.logf("map '%s' has no valid bpf_spin_lock", m.Name)
		} else {
			c.logf("map '%s' doesn't have 'struct bpf_spin_lock'", m.Name)
		}
		return reject("EINVAL")
	}
	off := int64(r.v.val()) + int64(r.off)
	if off != int64(lockOff) {
		if c.has(btfmodel.CapVerifierBTFRecord) {
			c.logf("off %d doesn't point to 'struct bpf_spin_lock' that is at %d", off, lockOff)
		} else {
			c.logf("off %d doesn't point to 'struct bpf_spin_lock'", off)
		}
		return reject("EINVAL")
	}
	if lock {
		if c.st.lock.held {
			c.logf("Locking two bpf_spin_locks are not supported")
			return reject("EINVAL")
		}
		c.st.lock = spinLock{held: true, mapIdx: r.mapIdx, id: r.id}
		return nil
	}
	if !c.st.lock.held {
		c.logf("bpf_spin_unlock without taking a lock")
		return reject("EINVAL")
	}
	if c.st.lock.mapIdx != r.mapIdx || c.st.lock.id != r.id {
		c.logf("bpf_spin_unlock of different lock")
		return reject("EINVAL")
	}
	c.st.lock = spinLock{}
	return nil
}

// callUnderLock is do_check's refusal of calls while a lock is held: only bpf_spin_unlock
// may be called.
func (c *checker) callUnderLock(in *insn) error {
	if !c.st.lock.held || (in.src == 0 && in.imm == 94) {
		return nil
	}
	c.logf("function calls are not allowed while holding a lock")
	return reject("EINVAL")
}

// lockAtExit: the main program may not exit with the lock held (6.12 do_check, 7.2
// check_resource_leak).
func (c *checker) lockAtExit() error {
	if !c.st.lock.held || len(c.st.callers) > 0 {
		return nil
	}
	if c.has(btfmodel.CapVerifierResourceLeakMsg) {
		c.logf("BPF_EXIT instruction in main prog cannot be used inside bpf_spin_lock-ed region")
	} else {
		c.logf("bpf_spin_unlock is missing")
	}
	return reject("EINVAL")
}

// spinLockAccess is check_map_access's refusal of a load or store that overlaps the lock.
func (c *checker) spinLockAccess(r *reg, off, size int) error {
	m := &c.prog.Maps[r.mapIdx]
	lo := spinLockOff(m)
	if lo < 0 {
		return nil
	}
	// Any offset the register can take that overlaps [lo, lo+4).
	if int64(off)+r.v.smin < int64(lo)+4 && int64(lo) < int64(r.v.umax)+int64(off)+int64(size) {
		c.logf("bpf_spin_lock cannot be accessed directly by load/store")
		return reject("EACCES")
	}
	return nil
}

// mapProgCompat is the spin lock part of check_map_prog_compatibility, run as
// resolve_pseudo_ldimm64 meets the map: 6.1 keeps maps with a lock from sleepable programs.
func (c *checker) mapProgCompat(idx int) error {
	if c.prog.Sleepable && !c.has(btfmodel.CapVerifierSleepableSpinLock) && spinLockOff(&c.prog.Maps[idx]) >= 0 {
		c.logf("sleepable progs cannot use bpf_spin_lock yet")
		return reject("EINVAL")
	}
	return nil
}

// locksafe is states_equal's active_lock comparison: the same lock held (or none), its id
// up to the renaming the register comparison established.
func locksafe(old, cur *state, ids map[uint32]uint32) bool {
	if old.lock.held != cur.lock.held || old.lock.mapIdx != cur.lock.mapIdx {
		return false
	}
	if !old.lock.held {
		return true
	}
	if m, ok := ids[old.lock.id]; ok {
		return m == cur.lock.id
	}
	ids[old.lock.id] = cur.lock.id
	return true
}
