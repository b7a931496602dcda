package riscv64

// Encoders for the RV64 forms the kernel's riscv BPF JIT emits in trampolines
// (arch/riscv/net/bpf_jit.h: the rv_* 32-bit and rvc_* compressed encoders). Each
// encoder places its operands in the fields of the format from the RISC-V
// unprivileged ISA manual and, like the kernel's, silently truncates an immediate to
// its field: the emit_* helpers in asm_emit.go decide which form an operand fits.
//
// Branch and jump offsets are in bytes (the kernel passes them halved, as imm12_1 /
// imm20_1, which is the same bits).

import "fmt"

// Reg is an integer register number x0..x31.
type Reg uint8

// Registers by their ABI names (RV_REG_* in bpf_jit.h).
const (
	Zero Reg = iota // the constant 0
	RA              // return address
	SP              // stack pointer
	GP
	TP
	T0 // the traced function's return address on trampoline entry
	T1 // the trampoline's scratch register
	T2
	S0 // frame pointer (RV_REG_FP)
	S1 // callee-saved: the program start time across a program call
	A0
	A1
	A2
	A3
	A4
	A5 // BPF R0 (regmap[BPF_REG_0])
	A6
	A7
	S2
	S3
	S4
	S5
	S6
	S7
	S8
	S9
	S10
	S11
	T3
	T4
	T5
	T6
)

// FP is the frame pointer, s0.
const FP = S0

var regNames = [32]string{
	"zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1",
	"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7",
	"s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11",
	"t3", "t4", "t5", "t6",
}

func (r Reg) String() string {
	if int(r) < len(regNames) {
		return regNames[r]
	}
	return fmt.Sprintf("x?%d", uint8(r))
}

// isCReg is is_creg: the registers a 3-bit RVC register field can name (x8..x15).
func isCReg(r Reg) bool { return r >= S0 && r <= A5 }

func creg(r Reg) uint16 { return uint16(r-S0) & 7 }

func x(r Reg) uint32 { return uint32(r) & 31 }

// Range predicates of bpf_jit.h, on the operand as the kernel sees it.
func is6bInt(v int64) bool   { return v >= -(1<<5) && v < 1<<5 }
func is7bUint(v int64) bool  { return v >= 0 && v < 1<<7 }
func is8bUint(v int64) bool  { return v >= 0 && v < 1<<8 }
func is9bUint(v int64) bool  { return v >= 0 && v < 1<<9 }
func is10bInt(v int64) bool  { return v >= -(1<<9) && v < 1<<9 }
func is10bUint(v int64) bool { return v >= 0 && v < 1<<10 }
func is12bInt(v int64) bool  { return v >= -(1<<11) && v < 1<<11 }
func is13bInt(v int64) bool  { return v >= -(1<<12) && v < 1<<12 }
func is21bInt(v int64) bool  { return v >= -(1<<20) && v < 1<<20 }
func is32bInt(v int64) bool  { return v >= -(1<<31) && v < 1<<31 }

// inAuipcJalrRange is in_auipc_jalr_range: what auipc+jalr reaches from pc.
func inAuipcJalrRange(v int64) bool { return v >= -(1<<31)-(1<<11) && v < (1<<31)-(1<<11) }

// 32-bit formats.

func iType(imm int32, rs1 Reg, f3 uint32, rd Reg, op uint32) uint32 {
	return uint32(imm)&0xfff<<20 | x(rs1)<<15 | f3<<12 | x(rd)<<7 | op
}

func sType(imm int32, rs2, rs1 Reg, f3, op uint32) uint32 {
	u := uint32(imm)
	return (u>>5&0x7f)<<25 | x(rs2)<<20 | x(rs1)<<15 | f3<<12 | (u&0x1f)<<7 | op
}

func bType(off int32, rs2, rs1 Reg, f3 uint32) uint32 {
	u := uint32(off)
	return (u>>12&1)<<31 | (u>>5&0x3f)<<25 | x(rs2)<<20 | x(rs1)<<15 | f3<<12 |
		(u>>1&0xf)<<8 | (u>>11&1)<<7 | 0x63
}

func uType(imm20 int32, rd Reg, op uint32) uint32 { return uint32(imm20)<<12 | x(rd)<<7 | op }

func rType(f7 uint32, rs2, rs1 Reg, f3 uint32, rd Reg, op uint32) uint32 {
	return f7<<25 | x(rs2)<<20 | x(rs1)<<15 | f3<<12 | x(rd)<<7 | op
}

// Opcodes.
const (
	opLoad   = 0x03
	opImm    = 0x13
	opAuipc  = 0x17
	opImm32  = 0x1b
	opStore  = 0x23
	opReg    = 0x33
	opLui    = 0x37
	opBranch = 0x63
	opJalr   = 0x67
	opJal    = 0x6f
)

func rvAddi(rd, rs1 Reg, imm int32) uint32  { return iType(imm, rs1, 0, rd, opImm) }
func rvAddiw(rd, rs1 Reg, imm int32) uint32 { return iType(imm, rs1, 0, rd, opImm32) }
func rvSlli(rd, rs1 Reg, sh int32) uint32   { return iType(sh&0x3f, rs1, 1, rd, opImm) }
func rvSrli(rd, rs1 Reg, sh int32) uint32   { return iType(sh&0x3f, rs1, 5, rd, opImm) }
func rvSrai(rd, rs1 Reg, sh int32) uint32   { return iType(0x400|sh&0x3f, rs1, 5, rd, opImm) }
func rvAdd(rd, rs1, rs2 Reg) uint32         { return rType(0, rs2, rs1, 0, rd, opReg) }
func rvLui(rd Reg, imm20 int32) uint32      { return uType(imm20, rd, opLui) }
func rvAuipc(rd Reg, imm20 int32) uint32    { return uType(imm20, rd, opAuipc) }
func rvLd(rd Reg, off int32, rs1 Reg) uint32 {
	return iType(off, rs1, 3, rd, opLoad)
}
func rvLw(rd Reg, off int32, rs1 Reg) uint32 { return iType(off, rs1, 2, rd, opLoad) }
func rvSd(rs1 Reg, off int32, rs2 Reg) uint32 {
	return sType(off, rs2, rs1, 3, opStore)
}
func rvSw(rs1 Reg, off int32, rs2 Reg) uint32 { return sType(off, rs2, rs1, 2, opStore) }
func rvJalr(rd, rs1 Reg, imm int32) uint32    { return iType(imm, rs1, 0, rd, opJalr) }
func rvBeq(rs1, rs2 Reg, off int32) uint32    { return bType(off, rs2, rs1, 0) }
func rvBne(rs1, rs2 Reg, off int32) uint32    { return bType(off, rs2, rs1, 1) }
func rvNop() uint32                           { return rvAddi(Zero, Zero, 0) }
func rvZbbSextB(rd, rs1 Reg) uint32           { return iType(0x604, rs1, 1, rd, opImm) }
func rvZbbSextH(rd, rs1 Reg) uint32           { return iType(0x605, rs1, 1, rd, opImm) }
func rvZbbZextH(rd, rs1 Reg) uint32           { return rType(0x04, Zero, rs1, 4, rd, 0x3b) }
func rvJal(rd Reg, off int32) uint32          { return jBits(off) | x(rd)<<7 | opJal }
func jBits(off int32) uint32 {
	u := uint32(off)
	return (u>>20&1)<<31 | (u>>1&0x3ff)<<21 | (u>>11&1)<<20 | (u>>12&0xff)<<12
}

// Compressed (RVC) formats. Quadrant is the low two bits.

func ciType(f3 uint16, imm6 int32, rd Reg, op uint16) uint16 {
	u := uint16(imm6)
	return f3<<13 | (u>>5&1)<<12 | uint16(x(rd))<<7 | (u&0x1f)<<2 | op
}

func crType(f4 uint16, rd, rs2 Reg) uint16 {
	return f4<<12 | uint16(x(rd))<<7 | uint16(x(rs2))<<2 | 0b10
}

func rvcAddi(rd Reg, imm int32) uint16  { return ciType(0b000, imm, rd, 0b01) }
func rvcAddiw(rd Reg, imm int32) uint16 { return ciType(0b001, imm, rd, 0b01) }
func rvcLi(rd Reg, imm int32) uint16    { return ciType(0b010, imm, rd, 0b01) }
func rvcLui(rd Reg, imm int32) uint16   { return ciType(0b011, imm, rd, 0b01) }
func rvcSlli(rd Reg, sh int32) uint16   { return ciType(0b000, sh, rd, 0b10) }

// rvcAddi16sp: nzimm[9] at 12; nzimm[4|6|8:7|5] at 6..2.
func rvcAddi16sp(imm int32) uint16 {
	u := uint16(imm)
	return 0b011<<13 | (u>>9&1)<<12 | uint16(SP)<<7 |
		(u>>4&1)<<6 | (u>>6&1)<<5 | (u>>7&3)<<3 | (u>>5&1)<<2 | 0b01
}

// rvcAddi4spn: nzuimm[5:4|9:6|2|3] at 12..5, rd' at 4..2.
func rvcAddi4spn(rd Reg, imm int32) uint16 {
	u := uint16(imm)
	return (u>>4&3)<<11 | (u>>6&0xf)<<7 | (u>>2&1)<<6 | (u>>3&1)<<5 | creg(rd)<<2
}

// cb is CB-format shift/andi: funct3 100, funct2 at 11..10, rd' at 9..7.
func cb(f2 uint16, rd Reg, imm int32) uint16 {
	u := uint16(imm)
	return 0b100<<13 | (u>>5&1)<<12 | f2<<10 | creg(rd)<<7 | (u&0x1f)<<2 | 0b01
}

func rvcSrli(rd Reg, sh int32) uint16 { return cb(0b00, rd, sh) }
func rvcSrai(rd Reg, sh int32) uint16 { return cb(0b01, rd, sh) }

func rvcMv(rd, rs Reg) uint16  { return crType(0b1000, rd, rs) }
func rvcAdd(rd, rs Reg) uint16 { return crType(0b1001, rd, rs) }
func rvcJr(rs Reg) uint16      { return crType(0b1000, rs, Zero) }
func rvcJalr(rs Reg) uint16    { return crType(0b1001, rs, Zero) }

// rvcLdsp: uimm[5] at 12, uimm[4:3|8:6] at 6..2.
func rvcLdsp(rd Reg, off int32) uint16 {
	u := uint16(off)
	return 0b011<<13 | (u>>5&1)<<12 | uint16(x(rd))<<7 | (u>>3&3)<<5 | (u>>6&7)<<2 | 0b10
}

// rvcSdsp: uimm[5:3|8:6] at 12..7.
func rvcSdsp(off int32, rs2 Reg) uint16 {
	u := uint16(off)
	return 0b111<<13 | (u>>3&7)<<10 | (u>>6&7)<<7 | uint16(x(rs2))<<2 | 0b10
}

// rvcLwsp: uimm[5] at 12, uimm[4:2|7:6] at 6..2.
func rvcLwsp(rd Reg, off int32) uint16 {
	u := uint16(off)
	return 0b010<<13 | (u>>5&1)<<12 | uint16(x(rd))<<7 | (u>>2&7)<<4 | (u>>6&3)<<2 | 0b10
}

// rvcSwsp: uimm[5:2|7:6] at 12..7.
func rvcSwsp(off int32, rs2 Reg) uint16 {
	u := uint16(off)
	return 0b110<<13 | (u>>2&0xf)<<9 | (u>>6&3)<<7 | uint16(x(rs2))<<2 | 0b10
}

// rvcLd / rvcSd (CL/CS, doubleword): uimm[5:3] at 12..10, uimm[7:6] at 6..5.
func rvcLd(rd Reg, off int32, rs1 Reg) uint16 {
	u := uint16(off)
	return 0b011<<13 | (u>>3&7)<<10 | creg(rs1)<<7 | (u>>6&3)<<5 | creg(rd)<<2
}

func rvcSd(rs1 Reg, off int32, rs2 Reg) uint16 {
	u := uint16(off)
	return 0b111<<13 | (u>>3&7)<<10 | creg(rs1)<<7 | (u>>6&3)<<5 | creg(rs2)<<2
}

// rvcLw / rvcSw (CL/CS, word): uimm[5:3] at 12..10, uimm[2] at 6, uimm[6] at 5.
func rvcLw(rd Reg, off int32, rs1 Reg) uint16 {
	u := uint16(off)
	return 0b010<<13 | (u>>3&7)<<10 | creg(rs1)<<7 | (u>>2&1)<<6 | (u>>6&1)<<5 | creg(rd)<<2
}

func rvcSw(rs1 Reg, off int32, rs2 Reg) uint16 {
	u := uint16(off)
	return 0b110<<13 | (u>>3&7)<<10 | creg(rs1)<<7 | (u>>2&1)<<6 | (u>>6&1)<<5 | creg(rs2)<<2
}
