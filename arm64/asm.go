package arm64

// Encoders for the A64 forms the kernel's arm64 BPF JIT emits in trampolines
// (arch/arm64/net/bpf_jit.h A64_* macros over arch/arm64/lib/insn.c).
//
// Like aarch64_insn_gen_*, an encoder returns Fault for an operand it cannot
// encode instead of an error; Generate rejects any image that contains it, as
// validate_code does.

// Reg is an A64 general-purpose register number. 31 is SP or XZR depending on the
// operand (SP for base registers and add/sub immediate, XZR for data registers).
type Reg uint8

const (
	X0 Reg = iota
	X1
	X2
	X3
	X4
	X5
	X6
	X7
	X8
	X9
	X10
	X11
	X12
	X13
	X14
	X15
	X16
	X17
	X18
	X19
	X20
	X21
	X22
	X23
	X24
	X25
	X26
	X27
	X28
	X29
	X30
	SP // 31 as a base or add/sub operand
)

// Register roles in the trampoline.
const (
	XZR = SP  // 31 as a data operand
	FP  = X29 // frame pointer
	LR  = X30 // link register
	TMP = X10 // the trampoline's only scratch register
)

// Fault is AARCH64_BREAK_FAULT, brk #0x100: the kernel encoders' error value and
// also the fill word of every BPF image (jit_fill_hole).
const Fault uint32 = 0xD4202000

// Sizes the encoders check.
const (
	sz1M   = 1 << 20
	sz128M = 1 << 27
)

func reg(r Reg) uint32 { return uint32(r) & 31 }

func sfBit(is64 bool) uint32 {
	if is64 {
		return 1 << 31
	}
	return 0
}

// Move-wide opcodes (bits 30:29 of MOVN/MOVZ/MOVK).
const (
	opMOVN = 0b00
	opMOVZ = 0b10
	opMOVK = 0b11
)

func movewide(opc uint32, is64 bool, rd Reg, imm uint16, shift int) uint32 {
	switch {
	case shift == 0 || shift == 16:
	case is64 && (shift == 32 || shift == 48):
	default:
		return Fault
	}
	return sfBit(is64) | opc<<29 | 0b100101<<23 | uint32(shift/16)<<21 | uint32(imm)<<5 | reg(rd)
}

// MOVN rd, #imm, lsl #shift (rd = ~(imm << shift)).
func MOVN(is64 bool, rd Reg, imm uint16, shift int) uint32 {
	return movewide(opMOVN, is64, rd, imm, shift)
}

// MOVZ rd, #imm, lsl #shift.
func MOVZ(is64 bool, rd Reg, imm uint16, shift int) uint32 {
	return movewide(opMOVZ, is64, rd, imm, shift)
}

// MOVK rd, #imm, lsl #shift (keeps the other bits).
func MOVK(is64 bool, rd Reg, imm uint16, shift int) uint32 {
	return movewide(opMOVK, is64, rd, imm, shift)
}

// addSubImm follows aarch64_insn_gen_add_sub_imm: an immediate above 12 bits must
// have its low 12 bits clear and then uses the lsl #12 form.
func addSubImm(sub, is64 bool, rd, rn Reg, imm int) uint32 {
	var sh uint32
	if imm < 0 {
		return Fault
	}
	if imm&^0xfff != 0 {
		if imm&0xfff != 0 {
			return Fault
		}
		imm >>= 12
		sh = 1
	}
	if imm&^0xfff != 0 {
		return Fault
	}
	w := sfBit(is64) | 0b100010<<23 | sh<<22 | uint32(imm)<<10 | reg(rn)<<5 | reg(rd)
	if sub {
		w |= 1 << 30
	}
	return w
}

// ADDI is ADD (immediate); rd and rn may be SP.
func ADDI(is64 bool, rd, rn Reg, imm int) uint32 { return addSubImm(false, is64, rd, rn, imm) }

// SUBI is SUB (immediate); rd and rn may be SP.
func SUBI(is64 bool, rd, rn Reg, imm int) uint32 { return addSubImm(true, is64, rd, rn, imm) }

// MOV is the kernel's A64_MOV(1, rd, rn) up to 6.12: ADD rd, rn, #0, never ORR, so it
// works with SP and disassembles as "mov" only when SP is involved.
func MOV(rd, rn Reg) uint32 { return ADDI(true, rd, rn, 0) }

// MOVR is the 64-bit register move as ORR rd, xzr, rm ("mov xd, xm"); register 31 is
// XZR here, so a move to or from SP must stay MOV.
func MOVR(rd, rm Reg) uint32 { return 0xAA0003E0 | reg(rm)<<16 | reg(rd) }

// ubfm is the 64-bit UBFM rd, rn, #immr, #imms, the base of LSL/LSR (immediate).
func ubfm(rd, rn Reg, immr, imms int) uint32 {
	if immr < 0 || immr > 63 || imms < 0 || imms > 63 {
		return Fault
	}
	return 0xD3400000 | uint32(immr)<<16 | uint32(imms)<<10 | reg(rn)<<5 | reg(rd)
}

// LSL rd, rn, #shift (64-bit, 0..63): UBFM rd, rn, #(-shift mod 64), #(63-shift).
func LSL(rd, rn Reg, shift int) uint32 {
	if shift < 0 || shift > 63 {
		return Fault
	}
	return ubfm(rd, rn, (64-shift)&63, 63-shift)
}

// LSR rd, rn, #shift (64-bit, 0..63): UBFM rd, rn, #shift, #63.
func LSR(rd, rn Reg, shift int) uint32 { return ubfm(rd, rn, shift, 63) }

// ldst64 is a 64-bit LDR/STR with a scaled unsigned 12-bit offset.
func ldst64(load bool, rt, rn Reg, off int) uint32 {
	if off < 0 || off%8 != 0 || off/8 > 0xfff {
		return Fault
	}
	w := uint32(0xF9000000) | uint32(off/8)<<10 | reg(rn)<<5 | reg(rt)
	if load {
		w |= 1 << 22
	}
	return w
}

// STR rt, [rn, #off] (64-bit, unsigned offset; rt 31 is XZR).
func STR(rt, rn Reg, off int) uint32 { return ldst64(false, rt, rn, off) }

// LDR rt, [rn, #off] (64-bit, unsigned offset).
func LDR(rt, rn Reg, off int) uint32 { return ldst64(true, rt, rn, off) }

// PairMode is the addressing mode of STP/LDP.
type PairMode uint32

const (
	PairOffset PairMode = 0b010 << 23 // [rn, #off]
	PairPre    PairMode = 0b011 << 23 // [rn, #off]!
	PairPost   PairMode = 0b001 << 23 // [rn], #off
)

func pair(load bool, mode PairMode, rt, rt2, rn Reg, off int) uint32 {
	if off%8 != 0 || off < -512 || off > 504 {
		return Fault
	}
	imm7 := uint32(off/8) & 0x7f
	w := 0b10<<30 | 0b101<<27 | uint32(mode) | imm7<<15 | reg(rt2)<<10 | reg(rn)<<5 | reg(rt)
	if load {
		w |= 1 << 22
	}
	return w
}

// STP rt, rt2 (64-bit) in the given mode.
func STP(mode PairMode, rt, rt2, rn Reg, off int) uint32 { return pair(false, mode, rt, rt2, rn, off) }

// LDP rt, rt2 (64-bit) in the given mode.
func LDP(mode PairMode, rt, rt2, rn Reg, off int) uint32 { return pair(true, mode, rt, rt2, rn, off) }

// PUSH is A64_PUSH: stp a, b, [sp, #-16]!.
func PUSH(a, b Reg) uint32 { return STP(PairPre, a, b, SP, -16) }

// POP is A64_POP: ldp a, b, [sp], #16.
func POP(a, b Reg) uint32 { return LDP(PairPost, a, b, SP, 16) }

// branchImm26 checks what aarch64_insn_gen_branch_imm checks: 4-aligned, ±128 MiB.
func branchImm26(op uint32, off int64) uint32 {
	if off&3 != 0 || off < -sz128M || off >= sz128M {
		return Fault
	}
	return op | uint32(off>>2)&0x3ffffff
}

// BL to pc+off (bytes).
func BL(off int64) uint32 { return branchImm26(0x94000000, off) }

// B to pc+off (bytes).
func B(off int64) uint32 { return branchImm26(0x14000000, off) }

// BLR rn.
func BLR(rn Reg) uint32 { return 0xD63F0000 | reg(rn)<<5 }

// BR rn.
func BR(rn Reg) uint32 { return 0xD61F0000 | reg(rn)<<5 }

// RET rn (plain "ret" is RET(LR)).
func RET(rn Reg) uint32 { return 0xD65F0000 | reg(rn)<<5 }

// ADR rd, pc+off (bytes, ±1 MiB).
func ADR(rd Reg, off int64) uint32 {
	if off < -sz1M || off >= sz1M {
		return Fault
	}
	u := uint32(off)
	return 0x10000000 | (u&3)<<29 | (u>>2&0x7ffff)<<5 | reg(rd)
}

// imm19 checks a 4-aligned ±1 MiB branch offset (label_imm_common with SZ_1M).
func imm19(op uint32, off int64, low uint32) uint32 {
	if off&3 != 0 || off < -sz1M || off >= sz1M {
		return Fault
	}
	return op | (uint32(off>>2)&0x7ffff)<<5 | low
}

// CBZ rt, pc+off (bytes). The kernel's A64_CBZ takes instructions and scales by 4.
func CBZ(is64 bool, rt Reg, off int64) uint32 {
	return imm19(0x34000000|sfBit(is64), off, reg(rt))
}

// CBNZ rt, pc+off (bytes).
func CBNZ(is64 bool, rt Reg, off int64) uint32 {
	return imm19(0x35000000|sfBit(is64), off, reg(rt))
}

// Cond is an A64 condition code.
type Cond uint8

const (
	EQ Cond = iota
	NE
	CS
	CC
	MI
	PL
	VS
	VC
	HI
	LS
	GE
	LT
	GT
	LE
	AL
)

// BCond is B.cond pc+off (bytes). Trampolines do not use it; BPF programs do.
func BCond(c Cond, off int64) uint32 {
	if c > AL {
		return Fault
	}
	return imm19(0x54000000, off, uint32(c))
}

// Hint-space instructions (AARCH64_INSN_HINT_*).
const (
	NOP     uint32 = 0xD503201F
	PACIASP uint32 = 0xD503233F // BPF program prologues only, never trampolines
	AUTIASP uint32 = 0xD50323BF
	BTIC    uint32 = 0xD503245F
	BTIJ    uint32 = 0xD503249F
	BTIJC   uint32 = 0xD50324DF // the trampoline's landing pad (emit_bti)
)

// BRK #imm.
func BRK(imm uint16) uint32 { return 0xD4200000 | uint32(imm)<<5 }

// AppendMovImm32 is emit_a64_mov_i: a value that fits 32 bits (taken as s32) in one
// or two MOVZ/MOVN/MOVK, W or X form.
func AppendMovImm32(dst []uint32, is64 bool, rd Reg, v int32) []uint32 {
	hi := uint16(uint32(v) >> 16)
	lo := uint16(v)
	if hi&0x8000 != 0 {
		if hi == 0xffff {
			return append(dst, MOVN(is64, rd, ^lo, 0))
		}
		dst = append(dst, MOVN(is64, rd, ^hi, 16))
		if lo != 0xffff {
			dst = append(dst, MOVK(is64, rd, lo, 0))
		}
		return dst
	}
	dst = append(dst, MOVZ(is64, rd, lo, 0))
	if hi != 0 {
		dst = append(dst, MOVK(is64, rd, hi, 16))
	}
	return dst
}

// chunks counts the 16-bit chunks of v that differ from def (i64_i16_blocks).
func chunks(v uint64, def uint16) int {
	n := 0
	for s := 0; s < 64; s += 16 {
		if uint16(v>>s) != def {
			n++
		}
	}
	return n
}

// AppendMovImm64 is emit_a64_mov_i64: a W-form emit_a64_mov_i below 2^32, else MOVZ
// or MOVN (whichever leaves fewer chunks to patch; a tie is MOVZ) at the highest
// non-default chunk, then MOVK downwards for chunks that differ from the default.
func AppendMovImm64(dst []uint32, rd Reg, v uint64) []uint32 {
	if v>>32 == 0 {
		return AppendMovImm32(dst, false, rd, int32(uint32(v)))
	}
	inverse := chunks(v, 0xffff) < chunks(v, 0)
	t, def := v, uint16(0)
	if inverse {
		t, def = ^v, 0xffff
	}
	shift := 0
	for s := 48; s > 0; s -= 16 {
		if t>>s != 0 {
			shift = s
			break
		}
	}
	if inverse {
		dst = append(dst, MOVN(true, rd, uint16(t>>shift), shift))
	} else {
		dst = append(dst, MOVZ(true, rd, uint16(v>>shift), shift))
	}
	for s := shift - 16; s >= 0; s -= 16 {
		if c := uint16(v >> s); c != def {
			dst = append(dst, MOVK(true, rd, c, s))
		}
	}
	return dst
}

// AppendAddrMov is emit_addr_mov_i64: always MOVN/MOVK/MOVK for bits 0..47, which
// leaves bits 48..63 all ones (kernel addresses only).
func AppendAddrMov(dst []uint32, rd Reg, v uint64) []uint32 {
	return append(dst,
		MOVN(true, rd, ^uint16(v), 0),
		MOVK(true, rd, uint16(v>>16), 16),
		MOVK(true, rd, uint16(v>>32), 32))
}
