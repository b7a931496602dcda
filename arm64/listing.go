package arm64

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/arch/arm64/arm64asm"

	"github.com/trampjit/trampjit/jit"
)

// Disassembler decodes A64 for listings with golang.org/x/arch arm64asm (GNU syntax), naming
// the hint-space instructions it prints as raw hints (bti, paciasp, autiasp), and printing
// PC-relative targets as absolute addresses so listings can name them.
type Disassembler struct{}

var _ jit.Disassembler = Disassembler{}

// hints are HINT #imm aliases arm64asm does not know (ARM DDI 0487, "HINT").
var hints = map[uint32]string{
	0xd503201f: "nop", 0xd503233f: "paciasp", 0xd50323bf: "autiasp",
	0xd503241f: "bti", 0xd503245f: "bti c", 0xd503249f: "bti j", 0xd50324df: "bti jc",
}

// Decode implements jit.Disassembler.
func (Disassembler) Decode(code []byte, pc uint64) (jit.Inst, error) {
	if len(code) < 4 {
		return jit.Inst{}, errors.New("truncated instruction")
	}
	w := binary.LittleEndian.Uint32(code)
	if h, ok := hints[w]; ok {
		return jit.Inst{Len: 4, Text: h}, nil
	}
	if w&0xffe0001f == 0xd4200000 { // brk #imm16: the fill after the code
		return jit.Inst{Len: 4, Text: fmt.Sprintf("brk #%#x", (w>>5)&0xffff)}, nil
	}
	inst, err := arm64asm.Decode(code[:4])
	if err != nil {
		return jit.Inst{Len: 4, Text: fmt.Sprintf(".inst %#08x", w)}, nil
	}
	text := arm64asm.GNUSyntax(inst)
	// Branches and adr print ".+off"; make them absolute addresses for symbolization.
	if i := strings.Index(text, ".+0x"); i >= 0 {
		var off uint64
		if _, err := fmt.Sscanf(text[i+4:], "%x", &off); err == nil {
			text = text[:i] + fmt.Sprintf("%#x", pc+off)
		}
	} else if i := strings.Index(text, ".-0x"); i >= 0 {
		var off uint64
		if _, err := fmt.Sscanf(text[i+4:], "%x", &off); err == nil {
			text = text[:i] + fmt.Sprintf("%#x", pc-off)
		}
	}
	return jit.Inst{Len: 4, Text: text}, nil
}

func init() { jit.Register(Backend{}, Disassembler{}) }
