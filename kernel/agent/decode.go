package main

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"golang.org/x/arch/x86/x86asm"

	"github.com/trampjit/trampjit/kernel/wire"
)

// codeEnd returns the length of the image's code. x86_64: through the ret (or the jmp to
// the return thunk) and the int3 after it; arm64: up to the first brk #0x100 fill word.
func codeEnd(arch string, b []byte, base uint64, ks *kallsyms) (int, error) {
	switch arch {
	case "amd64":
		thunk := ks.byName["__x86_return_thunk"]
		for i := 0; i < len(b); {
			in, err := x86asm.Decode(b[i:], 64)
			if err != nil {
				return 0, fmt.Errorf("decode image at +%#x: %w", i, err)
			}
			end := i + in.Len
			isRet := in.Op == x86asm.RET
			if in.Op == x86asm.JMP && thunk != 0 {
				if rel, ok := in.Args[0].(x86asm.Rel); ok && base+uint64(end)+uint64(int64(rel)) == thunk {
					isRet = true
				}
			}
			if isRet {
				if end < len(b) && b[end] == 0xcc {
					end++
				}
				return end, nil
			}
			i = end
		}
		return 0, fmt.Errorf("no ret in the first %d bytes of the image", len(b))
	case "arm64":
		for i := 0; i+4 <= len(b); i += 4 {
			if binary.LittleEndian.Uint32(b[i:]) == 0xd4202000 {
				return i, nil
			}
		}
		return 0, fmt.Errorf("no brk #0x100 in the first %d bytes of the image", len(b))
	case "riscv64":
		return rvCodeEnd(b)
	}
	return 0, fmt.Errorf("unsupported architecture %s", arch)
}

// endbr64 is the x86 IBT landing instruction (f3 0f 1e fa).
var endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa}

// ipAfterPatch is the size of the patched call: the original function resumes after it.
func ipAfterPatch(arch string) uint64 {
	switch arch {
	case "amd64":
		return 5
	case "riscv64":
		return 8 // auipc; jalr (orig_call = func_addr + 8)
	}
	return 4
}

func progByFunc(ps []wire.ProgResult, a uint64) int {
	for i, p := range ps {
		if p.BPFFunc == a {
			return i
		}
	}
	return -1
}

// call is a call in an image: its target and the first argument register's value at the
// call (rdi / x0) when an immediate or a copy of one put it there, else 0.
type call struct {
	target, arg0 uint64
}

// calls decodes the direct and register-indirect calls of an image, following the
// constant moves that set up their targets and first arguments.
func calls(arch string, code []byte, base uint64) []call {
	var out []call
	switch arch {
	case "amd64":
		var rdi uint64
		for i := 0; i < len(code); {
			if bytes.HasPrefix(code[i:], endbr64) { // x86asm does not know it
				i += len(endbr64)
				continue
			}
			in, err := x86asm.Decode(code[i:], 64)
			if err != nil {
				break
			}
			switch {
			case in.Op == x86asm.MOV && in.Len == 10 && code[i] == 0x48 && code[i+1] == 0xbf: // movabs rdi
				rdi = binary.LittleEndian.Uint64(code[i+2:])
			case in.Op == x86asm.CALL || in.Op == x86asm.JMP:
				if rel, ok := in.Args[0].(x86asm.Rel); ok {
					out = append(out, call{base + uint64(i+in.Len) + uint64(int64(rel)), rdi})
				}
				if in.Op == x86asm.CALL {
					rdi = 0 // clobbered by the callee
				}
			}
			i += in.Len
		}
	case "arm64":
		var reg [32]uint64
		for i := 0; i+4 <= len(code); i += 4 {
			w := binary.LittleEndian.Uint32(code[i:])
			rd, sh, imm := w&31, 16*((w>>21)&3), uint64((w>>5)&0xffff)
			switch {
			case w&0xff800000 == 0xd2800000: // movz (64-bit)
				reg[rd] = imm << sh
			case w&0xff800000 == 0x92800000: // movn
				reg[rd] = ^(imm << sh)
			case w&0xff800000 == 0xf2800000: // movk
				reg[rd] = reg[rd]&^(0xffff<<sh) | imm<<sh
			case w&0xfffffc00 == 0x91000000: // add xd, xn, #0 (the JIT's register move)
				reg[rd] = reg[(w>>5)&31]
			case w&0xffe0ffe0 == 0xaa0003e0: // mov xd, xm
				reg[rd] = reg[(w>>16)&31]
			case w&0xfffffc1f == 0xd63f0000: // blr xN
				out = append(out, call{reg[(w>>5)&31], reg[0]})
			case w&0xfc000000 == 0x94000000: // bl
				out = append(out, call{base + uint64(i) + uint64(int64(int32(w<<6)>>6)*4), reg[0]})
			}
		}
	case "riscv64":
		out = rvCalls(code, base)
	}
	return out
}
