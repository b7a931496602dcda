package verifier

import (
	"math"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
)

// Loads and stores: do_check's BPF_LDX/STX/ST cases and check_mem_access
// (kernel/bpf/verifier.c), dispatching on the base register's type.

func (c *checker) ldx(in *insn) error {
	if m := in.mode(); m != modeMEM && m != modeMEMSX {
		c.logf("BPF_LDX uses reserved fields")
		return reject("EINVAL")
	}
	if err := c.readReg(in.src); err != nil {
		return err
	}
	if err := c.writeReg(in.dst); err != nil {
		return err
	}
	base := c.st.regs[in.src]
	if err := c.memAccess(in.src, int(in.off), in.size(), false, int(in.dst), nil, in.mode() == modeMEMSX); err != nil {
		return err
	}
	return c.saveAuxPtrType(&base, true)
}

func (c *checker) stx(in *insn) error {
	if in.mode() == modeATOMIC {
		return c.atomic(in)
	}
	if in.mode() != modeMEM || in.imm != 0 {
		c.logf("BPF_STX uses reserved fields")
		return reject("EINVAL")
	}
	if err := c.readReg(in.src); err != nil {
		return err
	}
	if err := c.readReg(in.dst); err != nil {
		return err
	}
	base := c.st.regs[in.dst]
	if err := c.memAccess(in.dst, int(in.off), in.size(), true, int(in.src), nil, false); err != nil {
		return err
	}
	return c.saveAuxPtrType(&base, false)
}

func (c *checker) storeImm(in *insn) error {
	if in.mode() != modeMEM || in.src != 0 {
		c.logf("BPF_ST uses reserved fields")
		return reject("EINVAL")
	}
	if err := c.readReg(in.dst); err != nil {
		return err
	}
	base := c.st.regs[in.dst]
	if !c.has(btfmodel.CapVerifierSTIntoCtx) && base.typ == ptrToCtx {
		c.logf("BPF_ST stores into R%d %s is not allowed", in.dst, regTypeStr(c.env.Kernel, &base))
		return reject("EACCES")
	}
	imm := int64(in.imm)
	if err := c.memAccess(in.dst, int(in.off), in.size(), true, -1, &imm, false); err != nil {
		return err
	}
	return c.saveAuxPtrType(&base, false)
}

// atomic is check_atomic: a read and a write of the destination.
func (c *checker) atomic(in *insn) error {
	switch in.imm {
	case 0x00, 0x40, 0x50, 0xa0, 0x01, 0x41, 0x51, 0xa1, 0xe1, 0xf1:
	default:
		c.logf("BPF_ATOMIC uses invalid atomic opcode %02x", in.imm)
		return reject("EINVAL")
	}
	if in.size() != 4 && in.size() != 8 {
		c.logf("invalid atomic operand size")
		return reject("EINVAL")
	}
	if err := c.readReg(in.src); err != nil {
		return err
	}
	if err := c.readReg(in.dst); err != nil {
		return err
	}
	if in.imm == 0xf1 { // cmpxchg compares with R0
		if err := c.readReg(0); err != nil {
			return err
		}
	}
	base := c.st.regs[in.dst]
	if base.typ == ptrToCtx {
		c.logf("BPF_ATOMIC stores into R%d %s is not allowed", in.dst, regTypeStr(c.env.Kernel, &base))
		return reject("EACCES")
	}
	// Atomics check alignment strictly on every pointer, before anything else
	// (check_mem_access with strict_alignment_once).
	if err := c.ptrAlignment(&base, int(in.off), in.size(), true); err != nil {
		return err
	}
	load := -1
	if in.imm&0x01 != 0 {
		load = int(in.src)
		if in.imm == 0xf1 {
			load = 0
		}
	}
	if err := c.memAccess(in.dst, int(in.off), in.size(), false, load, nil, false); err != nil {
		return err
	}
	return c.memAccess(in.dst, int(in.off), in.size(), true, -1, nil, false)
}

// saveAuxPtrType is save_aux_ptr_type: one insn, one kind of pointer (ctx and BTF pointers).
func (c *checker) saveAuxPtrType(r *reg, allowTrust bool) error {
	kind := regTypeName(r, true)
	prev, ok := c.ptrKind[c.idx]
	if !ok {
		c.ptrKind[c.idx] = kind
		return nil
	}
	if prev == kind {
		return nil
	}
	special := func(k string) bool { // ctx and PTR_TO_BTF_ID kinds
		return k == "ctx" || strings.HasSuffix(k, "ptr_") || strings.HasSuffix(k, "or_null_")
	}
	if !special(kind) && !special(prev) {
		return nil
	}
	if allowTrust && c.has(btfmodel.CapVerifierTrustedPtr) && special(kind) && special(prev) && kind != "ctx" && prev != "ctx" {
		c.ptrKind[c.idx] = "untrusted_ptr_"
		return nil
	}
	c.logf("same insn cannot be used with different pointers")
	return reject("EINVAL")
}

// ptrAlignment is check_ptr_alignment, which check_mem_access asks first, whatever the
// register holds (a scalar too): stack accesses are always checked, others when the arch
// makes the verifier strict (btfmodel.ArchVerifier.StrictAlignment) or the caller asks
// (strict_alignment_once: atomics). Byte accesses always pass.
func (c *checker) ptrAlignment(r *reg, off, size int, once bool) error {
	strict := once || btfmodel.VerifierFor(c.env.Arch, c.env.Kernel).StrictAlignment
	desc := ""
	if r.flags&^flagLockVal == 0 { // the switch is on reg->type, modifiers included
		switch r.typ {
		case ptrToMapKey:
			desc = "key "
		case ptrToMapValue:
			desc = "value "
		case ptrToCtx:
			desc = "context "
		case ptrToStack:
			desc, strict = "stack ", true // stack spill tracking relies on it
		}
	}
	if !strict || size == 1 {
		return nil
	}
	if t := r.v.t.add(tconst(uint64(int64(r.off) + int64(off)))); !t.aligned(uint64(size)) {
		c.misaligned(desc, r, off, size)
		return reject("EACCES")
	}
	return nil
}

// memAccess is check_mem_access. value is the loaded/stored register (-1: none, stImm set
// for BPF_ST).
func (c *checker) memAccess(regno uint8, off, size int, write bool, value int, stImm *int64, ldsx bool) error {
	r := c.st.regs[regno]
	if err := c.ptrAlignment(&r, off, size, false); err != nil {
		return err
	}
	off += int(r.off)
	var err error
	switch {
	case r.typ == ptrToMapValue && r.flags&flagMaybeNull == 0:
		if err = c.mapAccessType(&r, off, size, write); err != nil {
			return err
		}
		if err = c.mapAccess(regno, &r, off, size); err == nil && !write && value >= 0 {
			c.setReg(uint8(value), mkScalar(c.mapValueRead(&r, off, size))) // rodata.go
		}
	case r.typ == ptrToCtx:
		err = c.ctxAccess(regno, &r, off, size, write, value)
	case r.typ == ptrToStack:
		err = c.stackAccess(regno, &r, off, size, write, value, stImm)
	case r.typ == ptrToMapKey: // a for_each callback's key, callback.go
		err = c.mapKeyAccess(regno, &r, off, size, write, value)
	case r.typ == ptrToBTFID && r.flags&flagMaybeNull == 0:
		err = c.btfAccess(regno, &r, off, size, write, value)
	case r.typ == ptrToMem && r.flags&flagMaybeNull == 0:
		if write && r.flags&flagRdonly != 0 {
			c.logf("R%d cannot write into %s", regno, regTypeStr(c.env.Kernel, &r))
			return reject("EACCES")
		}
		if r.flags&flagUntrusted != 0 && !write {
			// untrusted memory (a walked pointer to a non-struct) is read through
			// BPF_PROBE_MEM: no region to check
			if value >= 0 {
				c.setReg(uint8(value), mkScalar(unknownScalar()))
			}
		} else if err = c.memRegion(regno, &r, off, size, r.memSize, "mem"); err == nil && !write && value >= 0 {
			c.setReg(uint8(value), mkScalar(unknownScalar()))
		}
	case r.typ == constPtrToMap:
		c.note("reads of a map pointer (struct bpf_map fields) are not modelled")
		c.logf("model: access through a map pointer is not modelled")
		return reject("EINVAL")
	default:
		c.logf("R%d invalid mem access '%s'", regno, regTypeStr(c.env.Kernel, &r))
		return reject("EACCES")
	}
	if err != nil {
		return err
	}
	if !write && value >= 0 && size < 8 && c.st.regs[value].typ == scalarValue {
		v := c.st.regs[value]
		v.v = coerce(v.v, size, ldsx)
		c.st.regs[value] = v
	}
	return nil
}

// coerce is coerce_reg_to_size(_sx): a narrow load zero- (or sign-) extends.
func coerce(s scalar, size int, sx bool) scalar {
	bits := uint(size * 8)
	mask := uint64(1)<<bits - 1
	if sx {
		if s.isConst() {
			return signExtend(s, size*8)
		}
		return signExtend(unknownScalar(), size*8)
	}
	if s.isConst() {
		return constScalar(s.val() & mask)
	}
	r := s
	r.t = s.t.cast(uint(size))
	if s.umin&^mask == s.umax&^mask {
		r.umin, r.umax = s.umin&mask, s.umax&mask
	} else {
		r.umin, r.umax = 0, mask
	}
	r.smin, r.smax = int64(r.umin), int64(r.umax)
	if size < 4 {
		r.s32min, r.s32max, r.u32min, r.u32max = math.MinInt32, math.MaxInt32, 0, math.MaxUint32
	}
	// A 4-byte load keeps the 32-bit bounds: an LSM return slot stays in [-4095, 0] there.
	r.sync()
	return r
}

// mapAccessType is check_map_access_type: no writes into a read-only map.
func (c *checker) mapAccessType(r *reg, off, size int, write bool) error {
	m := c.prog.Maps[r.mapIdx]
	if write && m.ReadOnly {
		c.logf("write into map forbidden, value_size=%d off=%d size=%d", m.ValueSize, off, size)
		return reject("EACCES")
	}
	return nil
}

// mapAccess is check_map_access via check_mem_region_access.
func (c *checker) mapAccess(regno uint8, r *reg, off, size int) error {
	if err := c.memRegion(regno, r, off, size, int(c.prog.Maps[r.mapIdx].ValueSize), "map_value"); err != nil {
		return err
	}
	return c.spinLockAccess(r, off, size)
}

func (c *checker) memRegion(regno uint8, r *reg, off, size, memSize int, kind string) error {
	bad := func(o int64) bool { return o < 0 || size <= 0 || o+int64(size) > int64(memSize) }
	msg := func(o int64) {
		if kind == "map_value" {
			c.logf("invalid access to map value, value_size=%d off=%d size=%d", memSize, o, size)
		} else if kind == "map_key" { // __check_mem_access's PTR_TO_MAP_KEY case
			c.logf("invalid access to map key, key_size=%d off=%d size=%d", memSize, o, size)
		} else {
			c.logf("invalid access to memory, mem_size=%d off=%d size=%d", memSize, o, size)
		}
	}
	v := r.v
	if r.off < 0 && c.has(btfmodel.CapVerifierNoRegOff) { // 7.2: no reg->off, a negative constant offset is unbounded
		// 7.2 keeps a constant offset in var_off: a negative one is a huge unsigned value,
		// and check_mem_region_access says "unbounded memory access"
		v = v.add(constScalar(uint64(int64(r.off))))
		off -= int(r.off)
	}
	if v.smin < 0 && (v.smin == -1<<63 || v.smin+int64(off) < 0) {
		c.logf("R%d min value is negative, either use unsigned index or do a if (index >=0) check.", regno)
		return reject("EACCES")
	}
	if o := v.smin + int64(off); bad(o) {
		msg(o)
		c.logf("R%d min value is outside of the allowed memory range", regno)
		return reject("EACCES")
	}
	if v.umax >= maxVarOff {
		c.logf("R%d unbounded memory access, make sure to bounds check any such access", regno)
		return reject("EACCES")
	}
	if o := int64(v.umax) + int64(off); bad(o) {
		msg(o)
		c.logf("R%d max value is outside of the allowed memory range", regno)
		return reject("EACCES")
	}
	return nil
}

// ldImm64 is check_ld_imm.
func (c *checker) ldImm64(in *insn) error {
	if in.off != 0 {
		c.logf("BPF_LD_IMM64 uses reserved fields")
		return reject("EINVAL")
	}
	if err := c.writeReg(in.dst); err != nil {
		return err
	}
	switch in.src {
	case 0:
		c.setReg(in.dst, mkScalar(constScalar(in.imm64)))
	case pseudoMapFD:
		c.setReg(in.dst, reg{typ: constPtrToMap, mapIdx: c.insnMap[c.idx], v: constScalar(0)})
	case pseudoMapValue:
		c.setReg(in.dst, reg{typ: ptrToMapValue, mapIdx: c.insnMap[c.idx], off: int32(in.imm64 >> 32), v: constScalar(0)})
	case pseudoFunc: // a callback's address, callback.go
		r, err := c.funcReg(in)
		if err != nil {
			return err
		}
		c.setReg(in.dst, r)
	case pseudoBTFID: // ksym.go
		c.setReg(in.dst, c.ksymReg(in))
	}
	return nil
}
