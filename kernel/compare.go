package kernel

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/arch/x86/x86asm"
)

// SameModuloAddresses reports (as an error naming the first difference) whether two images
// of one trampoline differ only in embedded addresses: x86 call/jmp rel32 and movabs
// immediates; arm64 bl offsets and the immediates of mov-wide sequences (movz/movn/movk
// into the same register); riscv64 auipc+jalr/jal targets and emit_imm runs (see
// compare_rv64.go). On arm64 6.12 a different address can change the length of a mov
// sequence; that is reported as a difference.
func SameModuloAddresses(arch string, got, want []byte) error {
	switch arch {
	case "amd64":
		return sameX86(got, want)
	case "arm64":
		return sameARM64(got, want)
	case "riscv64":
		return sameRISCV64(got, want)
	}
	return fmt.Errorf("unknown architecture %q", arch)
}

// isEndbr64 reports whether b starts with endbr64 (f3 0f 1e fa).
func isEndbr64(b []byte) bool {
	return len(b) >= 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa
}

func sameX86(got, want []byte) error {
	if len(got) != len(want) {
		return fmt.Errorf("length %d, want %d", len(got), len(want))
	}
	for i := 0; i < len(want); {
		if isEndbr64(want[i:]) {
			// x86asm does not know endbr64 (a struct_ops image's landing pad with IBT).
			if !isEndbr64(got[i:]) {
				return fmt.Errorf("+%#x: % x, want endbr64", i, got[i:min(i+4, len(got))])
			}
			i += 4
			continue
		}
		wi, err := x86asm.Decode(want[i:], 64)
		if err != nil {
			return fmt.Errorf("+%#x: decode reference: %v", i, err)
		}
		gi, err := x86asm.Decode(got[i:], 64)
		if err != nil {
			return fmt.Errorf("+%#x: decode: %v", i, err)
		}
		n := wi.Len
		if gi.Op != wi.Op || gi.Len != n {
			return fmt.Errorf("+%#x: %v, want %v", i, gi, wi)
		}
		fixed := n
		switch {
		case (wi.Op == x86asm.CALL || wi.Op == x86asm.JMP) && n == 5 && want[i] != 0xeb:
			fixed = 1 // rel32 target
		case wi.Op == x86asm.MOV && n == 10 && want[i]&0xf8 == 0x48 && want[i+1]&0xf8 == 0xb8:
			fixed = 2 // movabs imm64
		case wi.Op == x86asm.MOV && n == 7 && want[i] == 0x48 && want[i+1] == 0xc7 && want[i+2]&0xf8 == 0xc0 &&
			want[i+6]&0x80 != 0 && got[i+6]&0x80 != 0:
			fixed = 3 // sign-extended imm32 of a kernel-text address (IP_ARG's func_addr, 6.12)
		}
		for j := 0; j < fixed; j++ {
			if got[i+j] != want[i+j] {
				return fmt.Errorf("+%#x: % x, want % x (%v)", i, got[i:i+n], want[i:i+n], wi)
			}
		}
		i += n
	}
	return nil
}

// movWide reports whether w is a 64-bit movz, movn or movk, and its destination register.
func movWide(w uint32) (rd uint32, ok bool) {
	switch w & 0xff800000 {
	case 0xd2800000, 0x92800000, 0xf2800000:
		return w & 31, true
	}
	return 0, false
}

// inMovRun reports whether the word at i is one of two or more consecutive mov-wide words
// into one register: an address load, as opposed to a small constant such as nr_args.
func inMovRun(b []byte, i int) bool {
	rd, _ := movWide(binary.LittleEndian.Uint32(b[i:]))
	for _, j := range []int{i - 4, i + 4} {
		if j >= 0 && j+4 <= len(b) {
			if r, ok := movWide(binary.LittleEndian.Uint32(b[j:])); ok && r == rd {
				return true
			}
		}
	}
	return false
}

func sameARM64(got, want []byte) error {
	if len(got) != len(want) || len(want)%4 != 0 {
		return fmt.Errorf("length %d, want %d", len(got), len(want))
	}
	for i := 0; i < len(want); i += 4 {
		g, w := binary.LittleEndian.Uint32(got[i:]), binary.LittleEndian.Uint32(want[i:])
		if g == w {
			continue
		}
		if g&0xfc000000 == 0x94000000 && w&0xfc000000 == 0x94000000 {
			continue // bl to an address
		}
		if rg, ok := movWide(g); ok {
			if rw, ok := movWide(w); ok && rg == rw && inMovRun(want, i) {
				continue // part of an address load
			}
		}
		return fmt.Errorf("+%#x: %08x, want %08x", i, g, w)
	}
	return nil
}
