package emu

import "github.com/trampjit/trampjit/btfmodel"

// slotLoc is where the caller puts one 8-byte argument slot (ctx word): an argument
// register, or a slot of the caller's outgoing stack area.
type slotLoc struct {
	reg   int // index into the ABI's argument registers, or -1
	stack int // stack slot (0 is at the return address + 8) when reg < 0
}

// placeSlots assigns every ctx slot by the calling convention. SysV x86-64: an argument
// goes in registers only if all its slots fit in what is left of rdi..r9, else wholly on
// the stack, and a later smaller argument may still take a register. AAPCS64 (x0..x7):
// once an argument does not fit, it and every later one go on the stack (NGRN = 8).
// riscv64 psABI (a0..a7): slot by slot, a 16-byte struct with one register left split
// between a7 and the first stack slot.
func placeSlots(a btfmodel.Arch, m *btfmodel.FuncModel) (locs []slotLoc, nstack int) {
	if a == btfmodel.RISCV64 {
		for k := 0; k < m.NrRegs(); k++ {
			if k < 8 {
				locs = append(locs, slotLoc{reg: k})
			} else {
				locs = append(locs, slotLoc{reg: -1, stack: k - 8})
			}
		}
		return locs, max(m.NrRegs()-8, 0)
	}
	nregs := 6
	if a == btfmodel.ARM64 {
		nregs = 8
	}
	used, full := 0, false
	for _, arg := range m.Args {
		k := arg.Slots()
		inRegs := !full && used+k <= nregs
		if !inRegs && a == btfmodel.ARM64 {
			full = true
		}
		for j := 0; j < k; j++ {
			if inRegs {
				locs = append(locs, slotLoc{reg: used})
				used++
			} else {
				locs = append(locs, slotLoc{reg: -1, stack: nstack})
				nstack++
			}
		}
	}
	return locs, nstack
}

// DefaultArgs are the argument words used when Options.Args is empty: distinct, with bits
// set above 32 so that a truncation or extension anywhere shows.
func DefaultArgs(n int) []uint64 {
	out := make([]uint64, n)
	for k := range out {
		out[k] = 0xa5a5a5a500000000 + uint64(k+1)*0x01010101
	}
	return out
}
