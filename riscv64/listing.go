package riscv64

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/arch/riscv64/riscv64asm"

	"github.com/trampjit/trampjit/jit"
)

// Disassembler decodes RV64GC (+Zbb) for listings with golang.org/x/arch riscv64asm and
// prints each instruction in its exact form, as objdump -M no-aliases does: a
// compressed instruction keeps its c.* mnemonic (the form the kernel chose shows in
// the listing, c.addi16sp and not c.addi), the 4-byte nop stays addi zero,zero,0.
// Registers have their ABI names; branch and jal targets are absolute addresses, and
// an auipc that a jalr or addi on the same register completes carries the address
// they reach ("# 0x..."), so that listings can name both.
//
// riscv64asm decodes every form the trampoline JIT emits, compressed ones included,
// but turns a compressed instruction into its 32-bit expansion, prints c.lui with a
// negative immediate sign-extended to 32 bits (lui t1,0xffffffff for c.lui t1,0xfffff)
// and reads every c.addi zero,imm as c.nop: here the c.* name is recovered from the
// encoding, the lui immediate printed as its 20 bits and c.addi zero's immediate kept.
// It rejects the RVC HINTs (c.li zero, c.mv zero, c.addi rd,0, ...), which objdump
// shows; no helper emits them (each falls back to the 32-bit form for rd zero or a zero
// immediate), and they are printed as data. An all-zero halfword (the prog pack's
// fill, an illegal instruction) is c.unimp; anything riscv64asm cannot decode is
// printed as data (.2byte/.4byte), never as "?".
//
// The Backend registers it: jit.Register(Backend{}, Disassembler{}).
type Disassembler struct{}

var _ jit.Disassembler = Disassembler{}

// Decode implements jit.Disassembler.
func (Disassembler) Decode(code []byte, pc uint64) (jit.Inst, error) {
	if len(code) < 2 || code[0]&3 == 3 && len(code) < 4 {
		return jit.Inst{}, errors.New("truncated instruction")
	}
	if code[0] == 0 && code[1] == 0 {
		return jit.Inst{Len: 2, Text: "c.unimp"}, nil
	}
	inst, err := riscv64asm.Decode(code)
	if err != nil {
		if code[0]&3 != 3 {
			return jit.Inst{Len: 2, Text: fmt.Sprintf(".2byte %#x", binary.LittleEndian.Uint16(code))}, nil
		}
		return jit.Inst{Len: 4, Text: fmt.Sprintf(".4byte %#x", binary.LittleEndian.Uint32(code))}, nil
	}
	text := format(inst, pc)
	if inst.Op == riscv64asm.AUIPC {
		if target, ok := auipcTarget(inst, code[inst.Len:], pc); ok {
			text += fmt.Sprintf(" # %#x", target)
		}
	}
	return jit.Inst{Len: inst.Len, Text: text}, nil
}

// auipcTarget is the address an auipc rd followed by jalr/addi off(rd) reaches.
func auipcTarget(auipc riscv64asm.Inst, next []byte, pc uint64) (uint64, bool) {
	rd, _ := auipc.Args[0].(riscv64asm.Reg)
	hi, _ := auipc.Args[1].(riscv64asm.Uimm)
	n, err := riscv64asm.Decode(next)
	if err != nil || n.Len != 4 {
		return 0, false
	}
	var lo int32
	switch n.Op {
	case riscv64asm.JALR:
		ro, ok := n.Args[1].(riscv64asm.RegOffset)
		if !ok || ro.OfsReg != rd {
			return 0, false
		}
		lo = ro.Ofs.Imm
	case riscv64asm.ADDI:
		if r, ok := n.Args[1].(riscv64asm.Reg); !ok || r != rd {
			return 0, false
		}
		lo = n.Args[2].(riscv64asm.Simm).Imm
	default:
		return 0, false
	}
	off := int64(int32(hi.Imm<<12)) + int64(lo)
	return pc + uint64(off), true
}

// fpNames are the ABI names of f0..f31 (no trampoline uses them; listings of other
// code may).
var fpNames = [32]string{
	"ft0", "ft1", "ft2", "ft3", "ft4", "ft5", "ft6", "ft7", "fs0", "fs1",
	"fa0", "fa1", "fa2", "fa3", "fa4", "fa5", "fa6", "fa7",
	"fs2", "fs3", "fs4", "fs5", "fs6", "fs7", "fs8", "fs9", "fs10", "fs11",
	"ft8", "ft9", "ft10", "ft11",
}

func regName(r riscv64asm.Reg) string {
	switch {
	case r >= riscv64asm.X0 && r <= riscv64asm.X31:
		return Reg(r - riscv64asm.X0).String()
	case r >= riscv64asm.F0 && r <= riscv64asm.F31:
		return fpNames[r-riscv64asm.F0]
	}
	return strings.ToLower(r.String())
}

// format prints inst the way objdump -M no-aliases does.
func format(inst riscv64asm.Inst, pc uint64) string {
	var args []string
	for _, a := range inst.Args {
		if a == nil {
			break
		}
		switch a := a.(type) {
		case riscv64asm.Reg:
			args = append(args, regName(a))
		case riscv64asm.RegOffset:
			args = append(args, fmt.Sprintf("%d(%s)", a.Ofs.Imm, regName(a.OfsReg)))
		default:
			args = append(args, strings.ToLower(a.String()))
		}
	}
	op := strings.ToLower(inst.Op.String())
	switch inst.Op {
	case riscv64asm.JAL, riscv64asm.BEQ, riscv64asm.BNE, riscv64asm.BLT, riscv64asm.BGE,
		riscv64asm.BLTU, riscv64asm.BGEU:
		off := inst.Args[len(args)-1].(riscv64asm.Simm).Imm
		args[len(args)-1] = fmt.Sprintf("%#x", pc+uint64(int64(off)))
	case riscv64asm.LUI, riscv64asm.AUIPC:
		args[1] = fmt.Sprintf("%#x", inst.Args[1].(riscv64asm.Uimm).Imm&0xfffff)
	}
	if inst.Len == 2 {
		op, args = compressed(uint16(inst.Enc), op, args)
	}
	if len(args) == 0 {
		return op
	}
	return op + " " + strings.Join(args, ",")
}

// compressed names a 16-bit instruction by its RVC opcode (quadrant, funct3 and the
// bits that split them) and keeps the operands of the compressed form from those of
// its expansion.
func compressed(enc uint16, op string, args []string) (string, []string) {
	f3 := enc >> 13
	rdField := enc >> 7 & 31
	rs2Field := enc >> 2 & 31
	switch enc & 3 {
	case 0:
		switch f3 {
		case 0:
			return "c.addi4spn", args // rd,sp,imm
		case 1, 2, 3, 5, 6, 7:
			return "c." + op, args // c.fld c.lw c.ld c.fsd c.sw c.sd: r,off(rs1)
		}
	case 1:
		switch f3 {
		case 0:
			if rdField == 0 {
				// riscv64asm reads any c.addi zero (c.nop and its HINTs) as c.nop
				// and drops the immediate.
				imm := int32(enc>>2&0x1f) | int32(enc>>12&1)<<5
				return "c.addi", []string{"zero", fmt.Sprint(imm << 26 >> 26)}
			}
			return "c.addi", []string{args[0], args[2]}
		case 1:
			return "c.addiw", []string{args[0], args[2]}
		case 2:
			return "c.li", []string{args[0], args[2]}
		case 3:
			if rdField == 2 {
				return "c.addi16sp", []string{args[0], args[2]}
			}
			return "c.lui", args
		case 4: // c.srli c.srai c.andi c.sub c.xor c.or c.and c.subw c.addw
			return "c." + op, []string{args[0], args[2]}
		case 5:
			return "c.j", args[1:]
		case 6, 7:
			return "c." + op + "z", []string{args[0], args[2]} // c.beqz c.bnez
		}
	case 2:
		switch f3 {
		case 0:
			return "c.slli", []string{args[0], args[2]}
		case 1, 2, 3, 5, 6, 7:
			return "c." + op + "sp", args // c.fldsp c.lwsp c.ldsp c.fsdsp c.swsp c.sdsp
		case 4:
			bit12 := enc >> 12 & 1
			switch {
			case bit12 == 0 && rs2Field == 0:
				return "c.jr", []string{strings.TrimSuffix(strings.TrimPrefix(args[1], "0("), ")")}
			case bit12 == 0:
				return "c.mv", []string{args[0], args[2]}
			case rs2Field == 0 && rdField == 0:
				return "c.ebreak", nil
			case rs2Field == 0:
				return "c.jalr", []string{strings.TrimSuffix(strings.TrimPrefix(args[1], "0("), ")")}
			default:
				return "c.add", []string{args[0], args[2]}
			}
		}
	}
	return "c." + op, args
}
