package verifier

import (
	"math"

	"github.com/trampjit/trampjit/btfmodel"
)

// alu is check_alu_op (kernel/bpf/verifier.c) with adjust_scalar_min_max_vals and
// adjust_ptr_min_max_vals for the pointer cases.
func (c *checker) alu(in *insn) error {
	is64 := in.class() == clsALU64
	op := aluOpName(in)
	regs := &c.st.regs
	switch op {
	case "", "endian", "neg":
		if op == "" {
			c.logf("invalid BPF_ALU opcode %x", in.op())
			return reject("EINVAL")
		}
		if err := c.aluReserved(in, op, is64); err != nil {
			return err
		}
		if err := c.readReg(in.dst); err != nil {
			return err
		}
		d := c.st.regs[in.dst]
		if err := c.writeReg(in.dst); err != nil {
			return err
		}
		// 6.1 and 6.12 track neither BPF_NEG nor BPF_END: the result is unknown even for
		// a constant (check_reg_arg(DST_OP) marks it so).
		res := unknownScalar()
		if d.typ == scalarValue {
			if v, ok := c.negEnd(in, op, is64, d.v); ok {
				res = v
			}
		}
		c.setReg(in.dst, mkScalar(res))
		return nil
	case "=":
		if err := c.aluReserved(in, op, is64); err != nil {
			return err
		}
		return c.mov(in, is64)
	}
	if err := c.aluReserved(in, op, is64); err != nil {
		return err
	}
	if in.isX() {
		if err := c.readReg(in.src); err != nil {
			return err
		}
	}
	if err := c.readReg(in.dst); err != nil {
		return err
	}
	if err := c.writeReg(in.dst); err != nil {
		return err
	}
	if (op == "/=" || op == "%=" || op == "s/=" || op == "s%=") && !in.isX() && in.imm == 0 {
		c.logf("div by zero")
		return reject("EINVAL")
	}
	if (op == "<<=" || op == ">>=" || op == "s>>=") && !in.isX() {
		if lim := int32(32); (is64 && (in.imm < 0 || in.imm >= 64)) || (!is64 && (in.imm < 0 || in.imm >= lim)) {
			c.logf("invalid shift %d", in.imm)
			return reject("EINVAL")
		}
	}
	dst := regs[in.dst]
	var src reg
	if in.isX() {
		src = regs[in.src]
	} else {
		v := uint64(int64(in.imm))
		if !is64 {
			v = uint64(uint32(in.imm))
		}
		src = mkScalar(constScalar(v))
	}
	if dst.typ != scalarValue || src.typ != scalarValue {
		if dst.typ != scalarValue && src.typ != scalarValue {
			if op == "-=" {
				c.setReg(in.dst, mkScalar(unknownScalar())) // privileged pointer subtraction
				return nil
			}
			c.logf("R%d pointer %s pointer prohibited", in.dst, op)
			return reject("EACCES")
		}
		if dst.typ == scalarValue {
			return c.ptrALU(in, op, is64, src, dst, true)
		}
		return c.ptrALU(in, op, is64, dst, src, false)
	}
	if v, ok := c.divMod(op, dst.v, src.v, !is64); ok {
		c.setReg(in.dst, mkScalar(v))
		return nil
	}
	c.setReg(in.dst, mkScalar(kernelALU(op, dst.v, src.v, !is64, c.env.Kernel)))
	return nil
}

func (c *checker) mov(in *insn, is64 bool) error {
	if in.isX() {
		if err := c.readReg(in.src); err != nil {
			return err
		}
	}
	if err := c.writeReg(in.dst); err != nil {
		return err
	}
	if !in.isX() {
		if is64 {
			c.setReg(in.dst, mkScalar(constScalar(uint64(int64(in.imm)))))
		} else {
			c.setReg(in.dst, mkScalar(constScalar(uint64(uint32(in.imm)))))
		}
		return nil
	}
	src := c.st.regs[in.src]
	if in.off != 0 { // movsx
		if src.typ != scalarValue {
			c.setReg(in.dst, mkScalar(unknownScalar()))
			return nil
		}
		r := signExtend(src.v, int(in.off))
		if !is64 {
			r = r.zext32()
		}
		c.setReg(in.dst, mkScalar(r))
		return nil
	}
	if is64 {
		// Copies share an id so that a bound learnt on one reaches the other (6.1 gives
		// constants one too, 6.12's assign_scalar_id_before_mov does not).
		if src.typ == scalarValue && src.id == 0 && (!c.has(btfmodel.CapVerifierMovNoConstID) || !src.v.isConst()) {
			src.id = c.newID()
			c.st.regs[in.src].id = src.id
		}
		c.setReg(in.dst, src)
		return nil
	}
	if src.typ != scalarValue {
		// Privileged: a 32-bit copy of a pointer is an unknown scalar.
		c.setReg(in.dst, mkScalar(rangeScalar(0, math.MaxUint32)))
		return nil
	}
	r := mkScalar(src.v.zext32())
	if c.has(btfmodel.CapVerifierMov32ID) && src.v.umax <= math.MaxUint32 {
		// 6.12 links a 32-bit copy of a value that fits in 32 bits.
		if src.id == 0 && !src.v.isConst() {
			src.id = c.newID()
			c.st.regs[in.src].id = src.id
		}
		r.id = src.id
	}
	c.setReg(in.dst, r)
	return nil
}

func signExtend(s scalar, bits int) scalar {
	if s.isConst() {
		switch bits {
		case 8:
			return constScalar(uint64(int64(int8(s.val()))))
		case 16:
			return constScalar(uint64(int64(int16(s.val()))))
		case 32:
			return constScalar(uint64(int64(int32(s.val()))))
		}
	}
	lim := int64(1) << (bits - 1)
	r := unknownScalar()
	r.smin, r.smax = -lim, lim-1
	r.sync()
	return r
}

// ptrALU is adjust_ptr_min_max_vals; offIsDst when the scalar is the destination.
func (c *checker) ptrALU(in *insn, op string, is64 bool, ptr, off reg, offIsDst bool) error {
	d := in.dst
	if !is64 {
		if op == "-=" {
			c.setReg(d, mkScalar(unknownScalar()))
			return nil
		}
		c.logf("R%d 32-bit pointer arithmetic prohibited", d)
		return reject("EACCES")
	}
	if ptr.flags&flagMaybeNull != 0 {
		c.logf("R%d pointer arithmetic on %s prohibited, null-check it first", d, regTypeStr(c.env.Kernel, &ptr))
		return reject("EACCES")
	}
	if ptr.typ == ptrToMem && ptr.flags&flagUntrusted != 0 && c.has(btfmodel.CapVerifierNonStructPtrMem) {
		// untrusted memory is only ever read through BPF_PROBE_MEM: 7.2 lets any
		// arithmetic pass and keeps the pointer as it was (its log shows no offset)
		r := ptr
		r.id = 0
		c.setReg(d, r)
		return nil
	}
	known := off.v.isConst()
	switch ptr.typ {
	case ptrToCtx, ptrToMapValue, ptrToStack, ptrToBTFID, ptrToMem:
	case constPtrToMap:
		if known && off.v.smin == 0 && op == "+=" {
			break
		}
		fallthrough
	default:
		c.logf("R%d pointer arithmetic on %s prohibited", d, regTypeStr(c.env.Kernel, &ptr))
		return reject("EACCES")
	}
	if !c.saneOffset(&off, &ptr) || !c.saneOffset(&ptr, &ptr) {
		return reject("EINVAL")
	}
	r := ptr
	r.id = 0
	switch op {
	case "+=":
		if known && int64(ptr.off)+int64(off.v.smin) == int64(int32(int64(ptr.off)+off.v.smin)) {
			r.off = ptr.off + int32(off.v.smin)
		} else {
			r.v = ptr.v.add(off.v)
		}
	case "-=":
		if offIsDst {
			c.logf("R%d tried to subtract pointer from scalar", d)
			return reject("EACCES")
		}
		if ptr.typ == ptrToStack && !known {
			c.logf("R%d subtraction from stack pointer prohibited", d)
			return reject("EACCES")
		}
		if known && int64(ptr.off)-off.v.smin == int64(int32(int64(ptr.off)-off.v.smin)) {
			r.off = ptr.off - int32(off.v.smin)
		} else {
			r.v = ptr.v.sub(off.v)
		}
	case "&=", "|=", "^=":
		c.logf("R%d bitwise operator %s on pointer prohibited", d, op)
		return reject("EACCES")
	default:
		c.logf("R%d pointer arithmetic with %s operator prohibited", d, op)
		return reject("EACCES")
	}
	if !c.saneOffset(&r, &r) {
		return reject("EINVAL")
	}
	c.setReg(d, r)
	return nil
}

// saneOffset is check_reg_sane_offset; typ names the pointer in messages.
func (c *checker) saneOffset(r, typ *reg) bool {
	ts := regTypeStr(c.env.Kernel, typ)
	if r.v.isConst() {
		if v := int64(r.v.val()); v >= maxVarOff || v <= -maxVarOff {
			c.logf("math between %s pointer and %d is not allowed", ts, v)
			return false
		}
	}
	if r.off >= maxVarOff || r.off <= -maxVarOff {
		c.logf("%s pointer offset %d is not allowed", ts, r.off)
		return false
	}
	if r.v.smin == math.MinInt64 {
		c.logf("math between %s pointer and register with unbounded min value is not allowed", ts)
		return false
	}
	if r.v.smin >= maxVarOff || r.v.smin <= -maxVarOff {
		if r.typ != scalarValue && c.has(btfmodel.CapVerifierNoRegOff) {
			// without reg->off a pointer's whole offset is in var_off
			c.logf("%s pointer offset %d is not allowed", ts, r.v.smin)
			return false
		}
		c.logf("value %d makes %s pointer be out of bounds", r.v.smin, ts)
		return false
	}
	return true
}

// aluReserved is check_alu_op's reserved-field checks; 6.1 predates the signed div/mod and
// movsx encodings (off != 0) and the 64-bit bswap.
func (c *checker) aluReserved(in *insn, op string, is64 bool) error {
	v4 := c.has(btfmodel.CapVerifierCPUv4)
	fail := func(what string) error {
		c.logf("BPF_%s uses reserved fields", what)
		return reject("EINVAL")
	}
	switch op {
	case "neg":
		if in.isX() || in.src != 0 || in.off != 0 || in.imm != 0 {
			return fail("NEG")
		}
	case "endian":
		if in.src != 0 || in.off != 0 || (in.imm != 16 && in.imm != 32 && in.imm != 64) || (is64 && (!v4 || in.isX())) {
			return fail("END")
		}
	case "=":
		switch {
		case !in.isX():
			if in.src != 0 || in.off != 0 {
				return fail("MOV")
			}
		case in.imm != 0 || (in.off != 0 && (!v4 || (in.off != 8 && in.off != 16 && (in.off != 32 || !is64)))):
			return fail("MOV")
		}
	default:
		signed := op == "s/=" || op == "s%="
		if (in.isX() && in.imm != 0) || (!in.isX() && in.src != 0) || (in.off != 0 && (!v4 || !signed)) {
			return fail("ALU")
		}
	}
	return nil
}
