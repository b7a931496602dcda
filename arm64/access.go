package arm64

import (
	"encoding/binary"
	"fmt"
	"strings"

	"golang.org/x/arch/arm64/arm64asm"

	"github.com/trampjit/trampjit/jit"
)

// access is one frame-relative memory operand of an image: a load, a store, or an add that
// computes a frame address into a register (ctx for the program, &run_ctx for the helpers).
type access struct {
	at   int // image offset of the instruction
	off  int // from x29 once the prologue has set it (the frame base)
	size int
	kind accessKind
}

type accessKind int

const (
	accLoad accessKind = iota
	accStore
	accAddr
)

// frameAccesses decodes img and returns every memory operand based on sp or x29 and every
// frame address computed from them, as offsets from the frame base. It follows sp and x29
// through the prologue (stp pre-index, mov x29, sp, sub sp) and the epilogue (mov sp, x29,
// ldp post-index) linearly: the only branches in an image skip forward within a stretch where
// neither moves. entry is sp's distance above the base when the image is entered (32 with
// the two frame records, 16 with struct_ops' one).
func frameAccesses(img *jit.Image, entry int) ([]access, error) {
	var out []access
	sp, fp, fpKnown := entry, 0, false
	for o := 0; o+4 <= len(img.Code); o += 4 {
		if inData(img, o) {
			continue
		}
		w := binary.LittleEndian.Uint32(img.Code[o:])
		rn, rt := int(w>>5&31), int(w&31)
		// base returns the frame offset register rn holds, if it holds one.
		base := func() (int, bool) {
			switch {
			case rn == 31:
				return sp, true
			case rn == 29 && fpKnown:
				return fp, true
			}
			return 0, false
		}
		handled := true
		switch {
		case w&0x1f800000 == 0x11000000: // ADD/SUB (immediate), 64- or 32-bit
			b, ok := base()
			if !ok {
				if rt == 29 {
					fpKnown = false
				}
				break
			}
			imm := int(w >> 10 & 0xfff)
			if w&(1<<22) != 0 {
				imm <<= 12
			}
			if w&(1<<30) != 0 {
				imm = -imm
			}
			v, setFlags := b+imm, w&(1<<29) != 0
			switch {
			case rt == 31 && !setFlags:
				sp = v
			case rt == 29:
				fp, fpKnown = v, true
			case rt != 31: // cmn/cmp write no register
				out = append(out, access{at: o, off: v, size: 8, kind: accAddr})
			}
		case w&0x3b000000 == 0x39000000: // LDR/STR (unsigned immediate)
			b, ok := base()
			size := 1 << (w >> 30)
			if w&(1<<26) != 0 && w&(1<<23) != 0 { // SIMD&FP 128-bit
				size = 16
			}
			if !ok {
				loadsFP(w>>22&3 != 0, rt, -1, &fpKnown)
				break
			}
			out = append(out, access{at: o, off: b + int(w>>10&0xfff)*size, size: size, kind: loadStore(w>>22&3 != 0)})
			loadsFP(w>>22&3 != 0, rt, -1, &fpKnown)
		case w&0x3b200000 == 0x38000000: // LDR/STR (unscaled, pre- and post-index)
			b, ok := base()
			size := 1 << (w >> 30)
			load := w>>22&3 != 0
			if !ok {
				loadsFP(load, rt, -1, &fpKnown)
				break
			}
			imm := int(int32(w<<11) >> 23) // imm9, sign-extended
			addr, wb := b+imm, b+imm
			switch w >> 10 & 3 {
			case 1: // post-index
				addr = b
			case 0, 2:
				wb = b
			}
			out = append(out, access{at: o, off: addr, size: size, kind: loadStore(load)})
			writeBack(rn, wb, &sp, &fp)
			loadsFP(load, rt, -1, &fpKnown)
		case w&0x3a000000 == 0x28000000: // LDP/STP
			b, ok := base()
			size := 4
			if w>>30 == 2 {
				size = 8
			}
			if w&(1<<26) != 0 {
				size = 4 << (w >> 30)
			}
			load := w&(1<<22) != 0
			rt2 := int(w >> 10 & 31)
			if !ok {
				loadsFP(load, rt, rt2, &fpKnown)
				break
			}
			imm := int(int32(w<<10)>>25) * size // imm7, scaled
			addr, wb := b+imm, b+imm
			switch w >> 23 & 3 {
			case 1: // post-index
				addr = b
			case 0, 2: // signed offset
				wb = b
			}
			out = append(out, access{at: o, off: addr, size: size, kind: loadStore(load)},
				access{at: o, off: addr + size, size: size, kind: loadStore(load)})
			if w>>23&3 == 1 || w>>23&3 == 3 {
				writeBack(rn, wb, &sp, &fp)
			}
			loadsFP(load, rt, rt2, &fpKnown)
		default:
			handled = false
		}
		if handled {
			continue
		}
		// Nothing else an image holds may use sp or x29: an unknown form would be a frame
		// access this decoder cannot place.
		inst, err := arm64asm.Decode(img.Code[o : o+4])
		if err != nil {
			continue // hints (bti, nop) and brk, which touch no register
		}
		if s := arm64asm.GNUSyntax(inst); mentionsFrame(s) {
			return nil, fmt.Errorf("offset %#x: %s uses the frame in a way the frame decoder does not follow", o, s)
		}
	}
	return out, nil
}

func loadStore(load bool) accessKind {
	if load {
		return accLoad
	}
	return accStore
}

// loadsFP notes that a load into x29 (the epilogue's ldp x29, x30) leaves it the caller's.
func loadsFP(load bool, rt, rt2 int, fpKnown *bool) {
	if load && (rt == 29 || rt2 == 29) {
		*fpKnown = false
	}
}

func writeBack(rn, v int, sp, fp *int) {
	switch rn {
	case 31:
		*sp = v
	case 29:
		*fp = v
	}
}

func mentionsFrame(s string) bool {
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '[' || r == ']' || r == '!' }) {
		if f == "sp" || f == "x29" || f == "wsp" || f == "w29" {
			return true
		}
	}
	return false
}

func inData(img *jit.Image, off int) bool {
	for _, s := range img.Sections {
		if s.Data && off >= s.Start && off < s.End {
			return true
		}
	}
	return false
}
