package emu

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/trampjit/trampjit/amd64"
	"github.com/trampjit/trampjit/btfmodel"
)

// Mutant is an image with one displacement or immediate changed.
type Mutant struct {
	Offset int    // first byte of the changed instruction
	Desc   string // what changed
	Code   []byte
}

// Mutants flips displacements and immediates of an image, one at a time, to measure what
// the oracle catches. x86: every instruction with an immediate, displacement or branch
// target (NOPs excepted) gets its last byte changed by 8 and, when it has four or more
// operand bytes, its fourth-last byte by 0x10. arm64: the immediate field of loads and
// stores (±8 bytes), add/sub (±8), move-wide (±8), branches and cbz/cbnz (±1
// instruction), stp/ldp (±8) and adr (±4). riscv64 (mutate_rv64.go): the immediates of
// loads, stores, addi/addiw, jalr (±8), lui/auipc (±4 KiB), branches and jal (±4 bytes),
// shifts (±1), and of their compressed forms.
func Mutants(arch btfmodel.Arch, code []byte) []Mutant {
	switch arch {
	case btfmodel.ARM64:
		return a64Mutants(code)
	case btfmodel.RISCV64:
		return rv64Mutants(code)
	}
	return x86Mutants(code)
}

func x86Mutants(code []byte) []Mutant {
	var out []Mutant
	dis := amd64.Disassembler{}
	flip := func(off, at int, x byte, text string) {
		m := append([]byte(nil), code...)
		m[at] ^= x
		out = append(out, Mutant{Offset: off, Code: m, Desc: fmt.Sprintf("%s: byte +%d ^ %#x", text, at-off, x)})
	}
	for off := 0; off < len(code); {
		in, err := dis.Decode(code[off:], 0)
		if err != nil || in.Len <= 0 {
			break
		}
		n := in.Len
		if strings.Contains(in.Text, "0x") && !strings.HasPrefix(in.Text, "nop") && !strings.Contains(in.Text, " nop") && n > 1 {
			flip(off, off+n-1, 0x08, in.Text)
			if n >= 6 {
				flip(off, off+n-4, 0x10, in.Text)
			}
		}
		off += n
	}
	return out
}

// a64Fields lists instruction classes (mask, value) and the bit to flip in each.
var a64Fields = []struct {
	mask, val uint32
	bit       uint
	what      string
}{
	{0xffc00000, 0xf9000000, 10, "str imm"},
	{0xffc00000, 0xf9400000, 10, "ldr imm"},
	{0xff800000, 0x91000000, 13, "add imm"},
	{0xff800000, 0xd1000000, 13, "sub imm"},
	{0x1f800000, 0x12800000, 8, "mov-wide imm"},
	{0x7c000000, 0x14000000, 0, "b/bl offset"},
	{0x7e000000, 0x34000000, 5, "cbz/cbnz offset"},
	{0xffc00000, 0xa9800000, 15, "stp pre-index"},
	{0xffc00000, 0xa8c00000, 15, "ldp post-index"},
	{0x9f000000, 0x10000000, 5, "adr offset"},
}

func a64Mutants(code []byte) []Mutant {
	var out []Mutant
	for off := 0; off+4 <= len(code); off += 4 {
		w := binary.LittleEndian.Uint32(code[off:])
		for _, f := range a64Fields {
			if w&f.mask != f.val {
				continue
			}
			m := append([]byte(nil), code...)
			binary.LittleEndian.PutUint32(m[off:], w^1<<f.bit)
			out = append(out, Mutant{Offset: off, Code: m, Desc: fmt.Sprintf("%08x %s: bit %d", w, f.what, f.bit)})
			break
		}
	}
	return out
}
