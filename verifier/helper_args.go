package verifier

import (
	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// The helper arguments that are not plain memory: BTF pointers to a kernel struct (the
// local storage owners, bpf_d_path's path, a task), ring buffer records given back by
// bpf_ringbuf_submit/discard, spin locks and constant format strings. check_reg_type,
// check_func_arg_reg_off and the OBJ_RELEASE part of check_func_arg
// (kernel/bpf/verifier.c).

// btfIDArg checks an ARG_PTR_TO_BTF_ID(_OR_NULL) or ARG_PTR_TO_BTF_ID_SOCK_COMMON argument.
func (c *checker) btfIDArg(regno uint8, r *reg, a argKind, want string) error {
	expected := "ptr_"
	if c.has(btfmodel.CapVerifierTrustedPtr) {
		expected = "ptr_, trusted_ptr_, rcu_ptr_"
	}
	if a == argSockCommon {
		want = "sock_common"
		expected = "sock_common, sock, tcp_sock, xdp_sock, ptr_"
		if c.has(btfmodel.CapVerifierTrustedPtr) {
			expected += ", trusted_ptr_"
		}
	}
	ok := r.typ == ptrToBTFID && r.flags&(flagMaybeNull|flagUntrusted|flagPercpu|flagUser) == 0
	if ok && a == argSockCommon && r.flags&flagRCU != 0 {
		ok = false
	}
	if !ok {
		c.logf("R%d type=%s expected=%s", regno, regTypeStr(c.env.Kernel, r), expected)
		return reject("EACCES")
	}
	off := int(r.off)
	if c.has(btfmodel.CapVerifierNoRegOff) && r.v.isConst() {
		off += int(int64(r.v.val())) // 7.2: the fixed offset is in var_off
	}
	if !btfStructAt(r.btfType, off, want) {
		c.logf("R%d is of type %s but %s is expected", regno, btfName(r.btfType), want)
		return reject("EACCES")
	}
	// check_func_arg_reg_off: a fixed offset is fine (&file->f_path), a variable one not.
	return c.btfArgOff(regno, r)
}

// btfStructAt is btf_struct_ids_match without strict matching: the struct named want is t
// itself at offset 0, or a struct member (through structs and unions) at off.
func btfStructAt(t btf.Type, off int, want string) bool {
	return structAt(t, off, want, 0)
}

func structAt(t btf.Type, off int, want string, depth int) bool {
	if depth > 32 {
		return false
	}
	var members []btf.Member
	switch u := btf.UnderlyingType(t).(type) {
	case *btf.Struct:
		if off == 0 && u.Name == want {
			return true
		}
		members = u.Members
	case *btf.Union:
		members = u.Members
	default:
		return false
	}
	for _, m := range members {
		mo := int(m.Offset / 8)
		if m.BitfieldSize != 0 || off < mo {
			continue
		}
		size, err := btf.Sizeof(m.Type)
		if err != nil || off >= mo+size {
			continue
		}
		if structAt(m.Type, off-mo, want, depth+1) {
			return true
		}
	}
	return false
}

// btfArgOff is __check_ptr_off_reg with a fixed offset allowed.
func (c *checker) btfArgOff(regno uint8, r *reg) error {
	ts := regTypeStr(c.env.Kernel, r)
	switch {
	case r.off < 0:
		c.logf("negative offset %s ptr R%d off=%d disallowed", ts, regno, r.off)
	case !r.v.isConst() || (r.v.val() != 0 && !c.has(btfmodel.CapVerifierNoRegOff)):
		c.logf("variable %s access var_off=%s disallowed", ts, r.v.t)
	default:
		return nil
	}
	return reject("EACCES")
}

// ringbufMemArg is ARG_PTR_TO_RINGBUF_MEM | OBJ_RELEASE: an unmodified, non-NULL record.
func (c *checker) ringbufMemArg(regno uint8, r *reg, meta *helperMeta) error {
	if r.typ != ptrToMem || r.flags&flagRingbuf == 0 || r.flags&flagMaybeNull != 0 {
		want := "ringbuf_mem"
		if !c.has(btfmodel.CapLogRegTypeAllPrefixes) {
			want = "alloc_mem" // see regTypeName: MEM_ALLOC became MEM_RINGBUF in 6.2
		}
		c.logf("R%d type=%s expected=%s", regno, regTypeStr(c.env.Kernel, r), want)
		return reject("EACCES")
	}
	if r.off != 0 || !r.v.isConst() || r.v.val() != 0 {
		if !c.has(btfmodel.CapVerifierReleaseOffMsg) {
			ts := regTypeStr(c.env.Kernel, r)
			if r.off != 0 {
				c.logf("dereference of modified %s ptr R%d off=%d disallowed", ts, regno, r.off)
			} else {
				c.logf("variable %s access var_off=%s disallowed", ts, r.v.t)
			}
			return reject("EACCES")
		}
		c.logf("R%d must have zero offset when passed to release func or trusted arg to kfunc", regno)
		return reject("EINVAL")
	}
	if r.refObjID == 0 {
		c.logf("R%d must be referenced when passed to release function", regno)
		return reject("EINVAL")
	}
	meta.releaseID = r.refObjID
	return nil
}

// releaseHelperRef is release_reference for a helper's OBJ_RELEASE argument: every copy of
// the pointer becomes an unknown scalar (mark_reg_invalid: privileged programs may leak
// pointers, so the registers stay readable).
func (c *checker) releaseHelperRef(id uint32) {
	var regs []int
	for n := range c.st.regs {
		if c.st.regs[n].refObjID == id {
			regs = append(regs, n)
		}
	}
	c.releaseRef(id)
	for _, n := range regs {
		c.st.regs[n] = mkScalar(unknownScalar())
	}
}

// spinLockArgType is check_reg_type for ARG_PTR_TO_SPIN_LOCK: a map value (6.12 also
// allocated objects, not modelled).
func (c *checker) spinLockArgType(regno uint8, r *reg) error {
	if r.typ == ptrToMapValue && r.flags&flagMaybeNull == 0 {
		return nil
	}
	expected := "map_value"
	if c.has(btfmodel.CapVerifierBTFRecord) {
		expected = "map_value, ptr_"
	}
	c.logf("R%d type=%s expected=%s", regno, regTypeStr(c.env.Kernel, r), expected)
	return reject("EACCES")
}

// constStrArg is ARG_PTR_TO_CONST_STR: a constant offset into a frozen read-only map whose
// value holds a NUL-terminated string there (the format is not checked: KNOWN_GAPS.md).
func (c *checker) constStrArg(regno uint8, r *reg) error {
	if r.typ != ptrToMapValue || r.flags&flagMaybeNull != 0 {
		c.logf("R%d type=%s expected=%s", regno, regTypeStr(c.env.Kernel, r), "map_value")
		return reject("EACCES")
	}
	m := c.prog.Maps[r.mapIdx]
	if !m.ReadOnly {
		c.logf("R%d does not point to a readonly map'", regno)
		return reject("EACCES")
	}
	if !r.v.isConst() {
		c.logf("R%d is not a constant address'", regno)
		return reject("EACCES")
	}
	return c.memRegion(regno, r, int(r.off), 1, int(m.ValueSize), "map_value")
}

// dropNullRef is mark_ptr_or_null_regs on the NULL branch of an acquired pointer: the
// reference whose id is the pointer's (bpf_ringbuf_reserve's record) goes away with it.
func (s *state) dropNullRef(id uint32) {
	for i, r := range s.refs {
		if r.id == id {
			s.refs = append(s.refs[:i:i], s.refs[i+1:]...)
			return
		}
	}
}

// constMapKey is get_constant_map_key (7.2): the value of a map key on the stack that is
// known, from zeroed bytes or a spilled constant of exactly the key's size; ok false
// otherwise.
func (c *checker) constMapKey(r *reg, keySize int) (uint64, bool) {
	if r.typ != ptrToStack || !r.v.isConst() || keySize <= 0 {
		return 0, false
	}
	off := int(r.off) + int(int64(r.v.val()))
	if off < -stackSize || off+keySize > 0 {
		return 0, false
	}
	f := c.st.frameAt(min(int(r.frameno), c.st.curframe()))        // the frame the key is in
	top := off - (((off % regSize) + regSize) % regSize) + regSize // the slot's upper end
	zero, spill := 0, 0
	for b := off; b < top && f.stack[slotIndex(b)] == stackZero; b++ {
		zero++
	}
	if zero >= keySize {
		return 0, true
	}
	for b := off; b < top && f.stack[slotIndex(b)] == stackSpill; b++ {
		spill++
	}
	sp := f.spill[slotIndex(off)/regSize]
	if spill != keySize || sp.typ != scalarValue || !sp.v.isConst() {
		return 0, false
	}
	return sp.v.val(), true
}

// retvalRange is do_refine_retval_range: the string and stack helpers return at most the
// buffer's size (msize_max_value) or a negative errno, down to -MAX_ERRNO.
func (c *checker) retvalRange(id int32, meta *helperMeta) reg {
	s := unknownScalar()
	switch id {
	case 45, 67, 114, 115, 141: // probe_read_str, get_stack, probe_read_{user,kernel}_str, get_task_stack
		s.smax, s.s32max = int64(meta.memSize), int32(meta.memSize)
		s.smin, s.s32min = -4095, -4095
		s.syncWith(!c.has(btfmodel.CapVerifierBoundsCross), c.has(btfmodel.CapVerifierTnumSignedNeedSign))
	}
	return mkScalar(s)
}
