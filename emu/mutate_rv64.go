package emu

import (
	"encoding/binary"
	"fmt"
)

// rv64Fields lists riscv64 instruction classes (mask, value) and the bit to flip in each:
// 4-byte forms, then the compressed ones (RVC, 16 bits), as the kernel's JIT emits them
// (arch/riscv/net/bpf_jit.h).
var rv64Fields = []struct {
	mask, val uint32
	bit       uint
	what      string
}{
	{0x707f, 0x3003, 23, "ld imm"},
	{0x707f, 0x3023, 10, "sd imm"},
	{0x707f, 0x0013, 23, "addi imm"},
	{0x707f, 0x001b, 23, "addiw imm"},
	{0xfc00707f, 0x1013, 20, "slli shamt"},
	{0x707f, 0x0067, 23, "jalr imm"},
	{0x7f, 0x37, 12, "lui imm"},
	{0x7f, 0x17, 12, "auipc imm"},
	{0x7f, 0x6f, 22, "jal offset"},
	{0x7f, 0x63, 9, "branch offset"},
}

var rvcFields = []struct {
	mask, val uint16
	bit       uint
	what      string
}{
	{0xe003, 0x6002, 5, "c.ldsp offset"},
	{0xe003, 0xe002, 10, "c.sdsp offset"},
	{0xe003, 0x6000, 10, "c.ld offset"},
	{0xe003, 0xe000, 10, "c.sd offset"},
	{0xef83, 0x6101, 6, "c.addi16sp imm"},
	{0xe003, 0x0000, 5, "c.addi4spn imm"},
	{0xe003, 0x4001, 3, "c.li imm"},
	{0xe003, 0x0001, 5, "c.addi imm"},
	{0xe003, 0x2001, 5, "c.addiw imm"},
	{0xe003, 0x0002, 2, "c.slli shamt"},
	{0xe003, 0xa001, 4, "c.j offset"},
	{0xc003, 0xc001, 4, "c.beqz/c.bnez offset"},
}

func rv64Mutants(code []byte) []Mutant {
	var out []Mutant
	for off := 0; off+2 <= len(code); {
		h := binary.LittleEndian.Uint16(code[off:])
		if h&3 != 3 {
			for _, f := range rvcFields {
				if h&f.mask != f.val || h == 0 || h == 1 { // the zero padding and c.nop
					continue
				}
				m := append([]byte(nil), code...)
				binary.LittleEndian.PutUint16(m[off:], h^1<<f.bit)
				out = append(out, Mutant{Offset: off, Code: m, Desc: fmt.Sprintf("%04x %s: bit %d", h, f.what, f.bit)})
				break
			}
			off += 2
			continue
		}
		if off+4 > len(code) {
			break
		}
		w := binary.LittleEndian.Uint32(code[off:])
		for _, f := range rv64Fields {
			if w&f.mask != f.val || w == rvNop {
				continue
			}
			m := append([]byte(nil), code...)
			binary.LittleEndian.PutUint32(m[off:], w^1<<f.bit)
			out = append(out, Mutant{Offset: off, Code: m, Desc: fmt.Sprintf("%08x %s: bit %d", w, f.what, f.bit)})
			break
		}
		off += 4
	}
	return out
}
