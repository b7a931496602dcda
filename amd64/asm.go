package amd64

import (
	"github.com/trampjit/trampjit/jit"

	"encoding/binary"
	"fmt"
)

// Reg is an x86-64 general-purpose register number, as it goes into ModRM/REX.
type Reg uint8

const (
	RAX Reg = 0
	RCX Reg = 1
	RDX Reg = 2
	RBX Reg = 3
	RSP Reg = 4
	RBP Reg = 5
	RSI Reg = 6
	RDI Reg = 7
	R8  Reg = 8
	R9  Reg = 9
)

var regNames = [...]string{"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9",
	"r10", "r11", "r12", "r13", "r14", "r15"}

func (r Reg) String() string {
	if int(r) < len(regNames) {
		return regNames[r]
	}
	return fmt.Sprintf("r?%d", uint8(r))
}

// argRegs are the SysV integer argument registers, in order.
var argRegs = [6]Reg{RDI, RSI, RDX, RCX, R8, R9}

// ext reports whether r needs a REX.R/REX.B extension bit (is_ereg in the kernel).
func (r Reg) ext() bool { return r >= 8 }

// Instruction bytes the trampoline uses verbatim.
var (
	endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa}
	// nops is the kernel's x86_nops table (arch/x86/include/asm/nops.h); index = length.
	nops = [12][]byte{
		nil,
		{0x90},
		{0x66, 0x90},
		{0x0f, 0x1f, 0x00},
		{0x0f, 0x1f, 0x40, 0x00},
		{0x0f, 0x1f, 0x44, 0x00, 0x00},
		{0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
		{0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00},
		{0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
		{0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
		{0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
		{0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
	}
)

// Opcode bytes of the branches the trampoline patches.
const (
	opCall   = 0xe8
	opJmp    = 0xe9
	opJE8    = 0x74
	opJNE32b = 0x85 // second byte of 0f 85 rel32
	patchLen = 5    // X86_PATCH_SIZE
)

// asm is an append-only code buffer with one method per instruction form the x86
// trampoline JIT emits (arch/x86/net/bpf_jit_comp.c), choosing short and long forms by
// the same rules as the kernel's emit_* helpers.
type asm struct {
	b []byte
}

func (a *asm) off() int { return len(a.b) }

func (a *asm) bytes(b ...byte) { a.b = append(a.b, b...) }

func (a *asm) u32(v uint32) { a.b = binary.LittleEndian.AppendUint32(a.b, v) }

func (a *asm) u64(v uint64) { a.b = binary.LittleEndian.AppendUint64(a.b, v) }

// isImm8 is the kernel's is_imm8: the value fits a sign-extended byte.
func isImm8(v int64) bool { return v >= -128 && v <= 127 }

// rexW returns REX.W with the R bit for reg (ModRM.reg) and B bit for rm (ModRM.rm).
func rexW(reg, rm Reg) byte {
	b := byte(0x48)
	if reg.ext() {
		b |= 0x04
	}
	if rm.ext() {
		b |= 0x01
	}
	return b
}

// rbpSuffix appends ModRM (and displacement) for [rbp+d] with reg in ModRM.reg:
// disp8 when d fits, else disp32 (emit_insn_suffix). d == 0 still takes a disp8 byte,
// because mod=00 with rm=101 means RIP-relative.
func (a *asm) rbpSuffix(reg Reg, d int32) {
	if isImm8(int64(d)) {
		a.bytes(0x40|byte(reg&7)<<3|5, byte(int8(d)))
		return
	}
	a.bytes(0x80 | byte(reg&7)<<3 | 5)
	a.u32(uint32(d))
}

// store is `mov [rbp+d], src` (64-bit; emit_stx with BPF_DW).
func (a *asm) store(d int32, src Reg) {
	a.bytes(rexW(src, RBP), 0x89)
	a.rbpSuffix(src, d)
}

// load is `mov dst, [rbp+d]` (64-bit; emit_ldx with BPF_DW).
func (a *asm) load(dst Reg, d int32) {
	a.bytes(rexW(dst, RBP), 0x8b)
	a.rbpSuffix(dst, d)
}

// loadDisp32 is `mov dst, [rbp+d]` always in the disp32 form, as the tail-call-counter
// reload (RESTORE_TAIL_CALL_CNT / LOAD_TRAMP_TAIL_CALL_CNT_PTR) hard-codes it.
func (a *asm) loadDisp32(dst Reg, d int32) {
	a.bytes(rexW(dst, RBP), 0x8b, 0x80|byte(dst&7)<<3|5)
	a.u32(uint32(d))
}

// lea is `lea dst, [rbp+d]`. The 6.1 JIT only has the disp8 form (its offsets never need
// more); callers on 6.1 must not pass a d outside int8.
func (a *asm) lea(dst Reg, d int32) {
	a.bytes(rexW(dst, RBP), 0x8d)
	a.rbpSuffix(dst, d)
}

// storeZero32 is `mov dword [rbp+d], 0` (clean_stack_garbage).
func (a *asm) storeZero32(d int32) {
	a.bytes(0xc7)
	a.rbpSuffix(0, d)
	a.u32(0)
}

// movReg is `mov dst, src` (64-bit; emit_mov_reg).
func (a *asm) movReg(dst, src Reg) {
	a.bytes(rexW(src, dst), 0x89, 0xc0|byte(src&7)<<3|byte(dst&7))
}

// testRAX is `test rax, rax`.
func (a *asm) testRAX() { a.bytes(0x48, 0x85, 0xc0) }

// cmpRetZero is `cmp qword [rbp-8], 0`, fixed bytes in invoke_bpf_mod_ret.
func (a *asm) cmpRetZero() { a.bytes(0x48, 0x83, 0x7d, 0xf8, 0x00) }

// movImm32 is emit_mov_imm32: with signExt and bit 31 set, the 7-byte sign-extending
// `mov r64, imm32`; else `xor r32, r32` for zero; else the zero-extending `mov r32, imm32`.
// It reports where the immediate starts, or -1 when there is none.
func (a *asm) movImm32(signExt bool, dst Reg, imm uint32) int {
	if signExt && int32(imm) < 0 {
		a.bytes(rexW(0, dst), 0xc7, 0xc0|byte(dst&7))
		at := a.off()
		a.u32(imm)
		return at
	}
	if imm == 0 {
		if dst.ext() {
			a.bytes(0x45)
		}
		a.bytes(0x31, 0xc0|byte(dst&7)<<3|byte(dst&7))
		return -1
	}
	if dst.ext() {
		a.bytes(0x41)
	}
	a.bytes(0xb8 | byte(dst&7))
	at := a.off()
	a.u32(imm)
	return at
}

// movImm64 is emit_mov_imm64: values below 2^32 go through movImm32 (zero-extending);
// with sx (6.12) sign-extendable values take the 7-byte form; the rest are movabs.
// It returns where the immediate starts (-1 for xor) and its width in bytes.
func (a *asm) movImm64(sx bool, dst Reg, v uint64) (at, width int) {
	switch {
	case v>>32 == 0:
		at = a.movImm32(false, dst, uint32(v))
		return at, 4
	case sx && int64(v) == int64(int32(v)):
		return a.movImm32(true, dst, uint32(v)), 4
	}
	a.bytes(rexW(0, dst), 0xb8|byte(dst&7))
	at = a.off()
	a.u64(v)
	return at, 8
}

// push and pop of a low register (push rbp, push rax, push rbx, pop rbx).
func (a *asm) push(r Reg) { a.bytes(0x50 | byte(r&7)) }
func (a *asm) pop(r Reg)  { a.bytes(0x58 | byte(r&7)) }

// movRBPRSP is `mov rbp, rsp`.
func (a *asm) movRBPRSP() { a.bytes(0x48, 0x89, 0xe5) }

// subRSP is `sub rsp, n`: imm8 when it fits, else imm32 (6.12; 6.1 frames always fit).
func (a *asm) subRSP(n int32) {
	if isImm8(int64(n)) {
		a.bytes(0x48, 0x83, 0xec, byte(n))
		return
	}
	a.bytes(0x48, 0x81, 0xec)
	a.u32(uint32(n))
}

// addRSP8 is `add rsp, 8` (SKIP_FRAME epilogue).
func (a *asm) addRSP8() { a.bytes(0x48, 0x83, 0xc4, 0x08) }

func (a *asm) leave() { a.bytes(0xc9) }
func (a *asm) ret()   { a.bytes(0xc3) }
func (a *asm) int3()  { a.bytes(0xcc) }
func (a *asm) endbr() { a.bytes(endbr64...) }

// callReg is `call *r` for a low register (ff /2).
func (a *asm) callReg(r Reg) { a.bytes(0xff, 0xd0|byte(r&7)) }

// rel32 emits op rel32 (e8 call, e9 jmp) to target, with pc the address the opcode is
// executed at (emit_patch). It fails like the kernel when the target is out of range.
func (a *asm) rel32(op byte, pc, target uint64) error {
	d := int64(target - (pc + patchLen))
	if d != int64(int32(d)) {
		return fmt.Errorf("target %#x is out of range of %#x: %w", target, pc, jit.EINVAL)
	}
	a.bytes(op)
	a.u32(uint32(d))
	return nil
}

// nops emits n bytes of NOPs, largest first, at most max bytes each (emit_nops, ASM_NOP_MAX).
func (a *asm) nops(n, max int) {
	for n > 0 {
		k := min(n, max)
		a.bytes(nops[k]...)
		n -= k
	}
}

// patchJE overwrites the 2-byte placeholder at at with `je to` (invoke_bpf_prog).
func (a *asm) patchJE(at, to int) error {
	d := to - (at + 2)
	if !isImm8(int64(d)) {
		return fmt.Errorf("je over %d bytes: %w", d, jit.EINVAL)
	}
	a.b[at], a.b[at+1] = opJE8, byte(int8(d))
	return nil
}

// patchJNE overwrites the 6-byte placeholder at at with `jne to` (emit_cond_near_jump).
func (a *asm) patchJNE(at, to int) {
	a.b[at], a.b[at+1] = 0x0f, opJNE32b
	binary.LittleEndian.PutUint32(a.b[at+2:], uint32(int32(to-(at+6))))
}

// callDepthLen is the size of the call-depth accounting template on 6.12:
// `sarq $5, %gs:__x86_call_depth(%rip)` (INCREMENT_CALL_DEPTH, RIP-relative per-CPU access).
const callDepthLen = 9

// callDepth emits the accounting template at pc, relocated so its RIP-relative operand
// reaches the per-CPU variable at depthVar (x86_call_depth_emit_accounting).
// open: template bytes and relocation are inferred, not read from a capture.
func (a *asm) callDepth(pc, depthVar uint64) int {
	a.bytes(0x65, 0x48, 0xc1, 0x3d)
	at := a.off()
	a.u32(uint32(depthVar - (pc + callDepthLen)))
	a.bytes(0x05)
	return at
}
