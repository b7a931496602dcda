package kernel

import (
	"encoding/binary"
	"fmt"

	"github.com/trampjit/trampjit/btfmodel"
)

// The riscv64 JIT embeds addresses three ways (arch/riscv/net/bpf_jit_comp64.c): calls and
// jumps as pc-relative auipc+jalr or jal (emit_call, emit_jump_and_link), and constants as
// emit_imm's lui/li + addiw/slli/addi run into one register (the program, the image, the
// traced function). rvSpan is one instruction of an image, with what rvKey masks.
type rvSpan struct {
	off, n int
	word   uint32
	mask   uint32 // the bits compared: an address's bits are cleared
}

// rvDecode splits a riscv64 image into instructions (2 bytes when the low two bits are not
// 11: RVC) and works out which bits of each embed an address.
func rvDecode(code []byte) ([]rvSpan, error) {
	var out []rvSpan
	for i := 0; i < len(code); {
		if i+2 > len(code) {
			return nil, fmt.Errorf("+%#x: half an instruction at the end", i)
		}
		s := rvSpan{off: i, n: 2, word: uint32(binary.LittleEndian.Uint16(code[i:])), mask: 0xffff}
		if s.word&3 == 3 {
			if i+4 > len(code) {
				return nil, fmt.Errorf("+%#x: half an instruction at the end", i)
			}
			s.n, s.word, s.mask = 4, binary.LittleEndian.Uint32(code[i:]), 0xffffffff
		}
		out = append(out, s)
		i += s.n
	}
	// Address loads: a run of two or more emit_imm instructions into one register, or a lone
	// lui. A single li (nr_args, a cookie's small value) is a constant, compared whole.
	for i := 0; i < len(out); {
		rd, ok := rvImmStart(out[i])
		j := i + 1
		if ok {
			for j < len(out) && rvImmCont(out[j], rd) {
				j++
			}
		}
		if ok && (j-i >= 2 || rvLoneLui(out[i])) {
			for k := i; k < j; k++ {
				out[k].mask = rvNoImm(out[k])
			}
		}
		i = j
	}
	for i := range out {
		w := out[i].word
		if out[i].n != 4 {
			continue
		}
		switch w & 0x7f {
		case 0x17: // auipc rd: pc-relative; and the jalr/addi that completes it
			out[i].mask = 0xfff
			if i+1 < len(out) && rvCompletes(out[i+1], (w>>7)&31) {
				out[i+1].mask = 0xfffff
			}
		case 0x6f: // jal: pc-relative
			out[i].mask = 0xfff
		}
	}
	return out, nil
}

// rvLoneLui: a lui (or c.lui) alone is an address whose low 12 bits are zero, never one of
// the small constants a single li loads (nr_args, a count).
func rvLoneLui(s rvSpan) bool {
	rd := (s.word >> 7) & 31
	return s.n == 4 && s.word&0x7f == 0x37 || s.n == 2 && s.word&3 == 1 && s.word>>13 == 3 && rd != 2 && rd != 0
}

// rvCompletes reports whether s is the jalr or addi that completes an auipc into rd.
func rvCompletes(s rvSpan, rd uint32) bool {
	w := s.word
	return s.n == 4 && (w&0x707f == 0x67 || w&0x707f == 0x13) && (w>>15)&31 == rd
}

// rvImmStart reports whether s begins an emit_imm sequence (lui, li as addi rd,zero / c.li,
// c.lui) and into which register.
func rvImmStart(s rvSpan) (uint32, bool) {
	w := s.word
	if s.n == 4 {
		rd := (w >> 7) & 31
		switch {
		case w&0x7f == 0x37: // lui
			return rd, true
		case w&0x707f == 0x13 && (w>>15)&31 == 0: // addi rd, zero, imm
			return rd, true
		}
		return 0, false
	}
	if rd := (w >> 7) & 31; w&3 == 1 && (w>>13 == 2 || w>>13 == 3 && rd != 2) && rd != 0 { // c.li, c.lui (rd 2 is c.addi16sp)
		return rd, true
	}
	return 0, false
}

// rvImmCont reports whether s continues an emit_imm sequence into rd: addi/addiw/slli rd,rd
// and their compressed forms.
func rvImmCont(s rvSpan, rd uint32) bool {
	w := s.word
	if s.n == 4 {
		if (w>>7)&31 != rd || (w>>15)&31 != rd {
			return false
		}
		return w&0x707f == 0x13 || w&0x707f == 0x1b || w&0xfc00707f == 0x1013 // addi, addiw, slli
	}
	if (w>>7)&31 != rd || rd == 0 {
		return false
	}
	f3 := w >> 13
	return w&3 == 1 && (f3 == 0 || f3 == 1) || w&3 == 2 && f3 == 0 // c.addi, c.addiw, c.slli
}

// rvNoImm is the mask of s without its immediate: I-type bits 31:20; c.* bits 12 and 6:2.
func rvNoImm(s rvSpan) uint32 {
	if s.n == 4 {
		if s.word&0x7f == 0x37 {
			return 0xfff // lui: imm 31:12
		}
		return 0xfffff
	}
	return 0xef83
}

func (s rvSpan) key() string {
	return fmt.Sprintf("%d:%x", s.n, s.word&s.mask)
}

// rvUnit is one step of a riscv64 image as SameModuloAddresses compares it: an instruction,
// or an address load (an emit_imm run, an auipc pair) whose length follows from the address
// it loads, or a branch, compared by the unit it lands on rather than by its byte offset.
type rvUnit struct {
	off int
	key string
}

func rvUnits(code []byte) ([]rvUnit, error) {
	spans, err := rvDecode(code)
	if err != nil {
		return nil, err
	}
	var units []rvUnit
	at := map[int]int{} // byte offset -> unit index
	type branch struct{ unit, target int }
	var branches []branch
	for i := 0; i < len(spans); {
		s := spans[i]
		at[s.off] = len(units)
		if rd, ok := rvImmStart(s); ok {
			j := i + 1
			for j < len(spans) && rvImmCont(spans[j], rd) {
				j++
			}
			if j-i >= 2 || rvLoneLui(s) {
				units = append(units, rvUnit{s.off, fmt.Sprintf("imm x%d", rd)})
				i = j
				continue
			}
		}
		if s.n == 4 && s.word&0x7f == 0x17 && i+1 < len(spans) && rvCompletes(spans[i+1], (s.word>>7)&31) {
			units = append(units, rvUnit{s.off, fmt.Sprintf("auipc x%d; %x", (s.word>>7)&31, spans[i+1].word&0xfffff)})
			i += 2
			continue
		}
		if s.n == 4 && s.word&0x7f == 0x63 { // beq/bne/...: by the unit it reaches
			w := s.word
			imm := int32(w&0x80000000)>>19 | int32((w>>7)&1)<<11 | int32((w>>25)&0x3f)<<5 | int32((w>>8)&0xf)<<1
			branches = append(branches, branch{len(units), s.off + int(imm)})
			units = append(units, rvUnit{s.off, fmt.Sprintf("b %x", w&0x1fff07f)})
			i++
			continue
		}
		units = append(units, rvUnit{s.off, s.key()})
		i++
	}
	for _, b := range branches {
		if t, ok := at[b.target]; ok {
			units[b.unit].key += fmt.Sprintf(" ->%+d", t-b.unit)
		} else {
			units[b.unit].key += fmt.Sprintf(" ->+%#x", b.target-units[b.unit].off)
		}
	}
	return units, nil
}

func sameRISCV64(got, want []byte) error {
	g, err := rvUnits(got)
	if err != nil {
		return err
	}
	w, err := rvUnits(want)
	if err != nil {
		return fmt.Errorf("reference: %v", err)
	}
	for i := 0; i < len(w) && i < len(g); i++ {
		if g[i].key != w[i].key {
			return fmt.Errorf("+%#x: %s, want +%#x: %s", g[i].off, g[i].key, w[i].off, w[i].key)
		}
	}
	if len(g) != len(w) {
		return fmt.Errorf("%d instructions and address loads (%d bytes), want %d (%d bytes)", len(g), len(got), len(w), len(want))
	}
	return nil
}

// rvKeys is sameKey for a whole riscv64 image, decoded once: each instruction's offset to
// its bits with the address masked (nil for another architecture or undecodable code).
func rvKeys(arch btfmodel.Arch, code []byte) map[int]string {
	if arch != btfmodel.RISCV64 {
		return nil
	}
	spans, err := rvDecode(code)
	if err != nil {
		return nil
	}
	keys := make(map[int]string, len(spans))
	for _, s := range spans {
		keys[s.off] = s.key()
	}
	return keys
}
