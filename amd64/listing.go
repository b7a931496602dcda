package amd64

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/arch/x86/x86asm"

	"github.com/trampjit/trampjit/jit"
)

// Disassembler decodes x86-64 for listings with golang.org/x/arch x86asm in GNU (AT&T)
// syntax, as the captures print it, with branch targets and RIP-relative operands as
// absolute addresses so listings can name them.
type Disassembler struct{}

var _ jit.Disassembler = Disassembler{}

// Decode implements jit.Disassembler. It fills x86asm's gaps for the trampoline's bytes:
// endbr64 (decoded as a bare rep prefix) and the two-operand-size-prefix NOP11.
func (Disassembler) Decode(code []byte, pc uint64) (jit.Inst, error) {
	if len(code) == 0 {
		return jit.Inst{}, errors.New("truncated instruction")
	}
	switch {
	case bytes.HasPrefix(code, endbr64):
		return jit.Inst{Len: 4, Text: "endbr64"}, nil
	case bytes.HasPrefix(code, nops[11]):
		return jit.Inst{Len: 11, Text: "data16 nopw %cs:(%rax,%rax)"}, nil
	}
	inst, err := x86asm.Decode(code, 64)
	if err != nil {
		return jit.Inst{Len: 1, Text: fmt.Sprintf(".byte %#02x", code[0])}, nil
	}
	text := x86asm.GNUSyntax(inst, pc, nil)
	for _, a := range inst.Args {
		if m, ok := a.(x86asm.Mem); ok && m.Base == x86asm.RIP {
			// "0x1234(%rip)" -> the address it reaches.
			rel := fmt.Sprintf("%#x(%%rip)", m.Disp)
			if m.Disp < 0 {
				rel = fmt.Sprintf("-%#x(%%rip)", -m.Disp)
			}
			abs := pc + uint64(inst.Len) + uint64(m.Disp)
			text = strings.Replace(text, rel, fmt.Sprintf("%#x", abs), 1)
		}
	}
	return jit.Inst{Len: inst.Len, Text: text}, nil
}

func init() { jit.Register(Backend{}, Disassembler{}) }
