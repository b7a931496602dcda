package emu

import (
	"encoding/binary"
	"fmt"

	uc "github.com/trampjit/trampjit/emu/unicorn"
)

// x86 is the x86-64 target: SysV calling convention, the kernel's patch site. With exit
// set it is the native flavour (emu/native): runs end at a sentinel that calls exit (a
// return to the Go caller) instead of Unicorn's hlt, and enter stubs return start
// themselves, since no Go hook sets the scratch register.
type x86 struct{ exit uint64 }

// sentinel ends a run: hlt behind Unicorn's sentinel hook, or native.Sentinel.
func (t x86) sentinel() []byte {
	if t.exit == 0 {
		return []byte{0xf4}
	}
	b := x86asm(nil).movabs(xR11, t.exit)
	return append(b, 0x41, 0xff, 0xd3) // call r11: its return address names the sentinel
}

// failStub is a fail address of the checks: a plain return under Unicorn (a halt
// sentinel hooks it), the exit sentinel natively.
func (t x86) failStub() []byte {
	if t.exit == 0 {
		return t.retStub()
	}
	return t.sentinel()
}

// Hardware register numbers.
const (
	xRAX = 0
	xRCX = 1
	xRDX = 2
	xRSI = 6
	xRDI = 7
	xR8  = 8
	xR11 = 11
)

var x86ArgNums = [6]int{xRDI, xRSI, xRDX, xRCX, xR8, xR8 + 1}

// x86Scratch are the caller-saved registers a clobbering stub overwrites (rax last: it is
// the return register).
var x86Scratch = []int{xRCX, xRDX, xRSI, xRDI, 8, 9, 10, 11, xRAX}

type x86asm []byte

func (a x86asm) movabs(r int, v uint64) x86asm {
	a = append(a, 0x48|byte(r>>3), 0xb8+byte(r&7))
	return binary.LittleEndian.AppendUint64(a, v)
}

// mov32 is mov r32, imm32 (zero-extends).
func (a x86asm) mov32(r int, v uint32) x86asm {
	if r >= 8 {
		a = append(a, 0x41)
	}
	a = append(a, 0xb8+byte(r&7))
	return binary.LittleEndian.AppendUint32(a, v)
}

func (a x86asm) rel32(op byte, at, to uint64) (x86asm, error) {
	d := int64(to - (at + 5))
	if d != int64(int32(d)) {
		return a, fmt.Errorf("rel32 from %#x to %#x out of range", at, to)
	}
	a = append(a, op)
	return binary.LittleEndian.AppendUint32(a, uint32(int32(d))), nil
}

func (a x86asm) clobber(keepRet bool) x86asm {
	for _, r := range x86Scratch {
		if r == xRAX && keepRet {
			continue
		}
		a = a.mov32(r, clobberValue(r))
	}
	return a
}

func (x86) ucArch() uc.Arch { return uc.X86_64 }

func (t x86) caller(base, fn uint64, regs []uint64) ([]byte, int, int) {
	var a x86asm
	for i, v := range regs {
		a = a.movabs(x86ArgNums[i], v)
	}
	a = a.movabs(xR11, fn)
	a = append(a, 0x41, 0xff, 0xd3) // call r11
	after := len(a)
	a = append(a, 0x49, 0xff, 0xcf) // dec r15
	a = append(a, 0x0f, 0x85)       // jnz loop
	a = binary.LittleEndian.AppendUint32(a, uint32(int32(-(len(a) + 4))))
	done := len(a)
	a = append(a, t.sentinel()...)
	return a, after, done
}

// poison is the sealed-ENDBR "nopw (%rax)" IBT kernels put at function entry.
var poison = []byte{0x66, 0x0f, 0x1f, 0x00}

func (x86) site(s *siteSpec) (uint64, []byte, uint64, error) {
	if s.ip < s.fn || s.ip-s.fn > 64 {
		return 0, nil, 0, fmt.Errorf("patch site %#x is not just after function %#x", s.ip, s.fn)
	}
	var a x86asm
	if pad := int(s.ip - s.fn); pad == 4 {
		a = append(a, poison...)
	} else {
		for ; pad > 0; pad-- {
			a = append(a, 0x90)
		}
	}
	op := byte(0xe8) // the patched call
	if s.jmp {
		op = 0xe9 // jmp mode: the trampoline returns to the caller itself
	}
	a, err := a.rel32(op, s.ip, s.image)
	if err != nil {
		return 0, nil, 0, fmt.Errorf("patch site: %w", err)
	}
	body := s.fn + uint64(len(a))
	a, err = a.rel32(0xe9, body, s.ool) // jmp to the body
	return s.fn, a, body, err
}

func (t x86) outOfLine(s *siteSpec) []byte {
	var a x86asm
	if s.fail != 0 {
		a, _ = t.nativeBody(s.ool, s.fail, s.slots) // range: checked when the fail is placed
	}
	if s.constRet != nil {
		a = a.movabs(xRAX, *s.constRet)
	} else {
		a = a.mov32(xRAX, bodySeed)
		for _, l := range s.slots {
			a = append(a, 0x48, 0x6b, 0xc0, 0x1f) // imul rax, rax, 31
			if l.reg >= 0 {
				r := x86ArgNums[l.reg]
				a = append(a, 0x48|byte(r>>3)<<2, 0x01, 0xc0|byte(r&7)<<3) // add rax, r
			} else {
				a = append(a, 0x48, 0x03, 0x44, 0x24, byte(8+8*l.stack)) // add rax, [rsp+8+8j]
			}
		}
		switch s.retSize {
		case 1:
			a = append(a, 0x0f, 0xb6, 0xc0) // movzx eax, al
		case 2:
			a = append(a, 0x0f, 0xb7, 0xc0) // movzx eax, ax
		case 4:
			a = append(a, 0x89, 0xc0) // mov eax, eax
		}
	}
	switch {
	case s.fail != 0 && s.clobber: // the clobber overwrites r11: test it first
		a = append(a, 0x4d, 0x85, 0xdb) // test r11, r11
		a, _ = a.rel32x(0x0f, 0x85, s.ool+uint64(len(a)), s.fail)
		a = a.clobber(true)
	case s.fail != 0:
		return a.finish(s.fail, 0) // nativeBody's differences, tested at the return
	case s.clobber:
		a = a.clobber(true)
	}
	return append(a, 0xc3)
}

// rel32x is a two-byte opcode with a rel32 (jcc).
func (a x86asm) rel32x(op0, op1 byte, at, to uint64) (x86asm, error) {
	d := int64(to - (at + 6))
	if d != int64(int32(d)) {
		return a, fmt.Errorf("rel32 from %#x to %#x out of range", at, to)
	}
	a = append(a, op0, op1)
	return binary.LittleEndian.AppendUint32(a, uint32(int32(d))), nil
}

// finish ends checking code without a branch of its own: on to routine (0: return)
// when r11, the accumulated difference, is zero, else to fail, through one indirect
// jump (a ret is one too). Under Unicorn a conditional branch would end a translated
// block, and each block costs the budget's hook and Unicorn's exit check. On a fail
// the return address is already popped; the failing call is replayed with Go hooks.
func (a x86asm) finish(fail, routine uint64) x86asm {
	if routine == 0 {
		a = append(a, 0x41, 0x5a) // pop r10: the return address
	} else {
		a = a.movabs(xR11-1, routine)
	}
	a = append(a, 0x4d, 0x85, 0xdb) // test r11, r11
	a = a.movabs(xR11, fail)
	return append(a, 0x4d, 0x0f, 0x44, 0xda, 0x41, 0xff, 0xe3) // cmovz r11, r10; jmp r11
}

func (x86) helperStub(at, routine uint64) ([]byte, error) {
	a := x86asm(nil).mov32(xRAX, voidRet) // the helpers return void: rax is garbage
	if routine == 0 {
		return append(a, 0xc3), nil
	}
	return a.rel32(0xe9, at+uint64(len(a)), routine)
}

func (x86) progStub(at, ret, routine uint64) ([]byte, error) {
	a := x86asm(nil).movabs(xRAX, ret)
	if routine == 0 {
		return append(a, 0xc3), nil
	}
	return a.rel32(0xe9, at+uint64(len(a)), routine)
}

func (x86) clobberRoutine(keepRet bool) []byte { return append(x86asm(nil).clobber(keepRet), 0xc3) }

func (t x86) enterStub(at, routine uint64) ([]byte, error) {
	a := x86asm{0x4c, 0x89, 0xd8} // mov rax, r11
	if t.exit != 0 {
		a = x86asm(nil).movabs(xRAX, startValue)
	}
	if routine == 0 {
		return append(a, 0xc3), nil
	}
	return a.rel32(0xe9, at+uint64(len(a)), routine)
}

func (x86) scratch() uc.Reg { return uc.R11 }

func (x86) jump(at, to uint64) ([]byte, error) { return x86asm(nil).rel32(0xe9, at, to) }

func (x86) retStub() []byte { return []byte{0xc3} }

func (x86) argRegs() []uc.Reg { return []uc.Reg{uc.RDI, uc.RSI, uc.RDX, uc.RCX, uc.R8, uc.R9} }
func (x86) retReg() uc.Reg    { return uc.RAX }
func (x86) spReg() uc.Reg     { return uc.RSP }
func (x86) linkReg() uc.Reg   { return 0 }
func (x86) calleeSaved() []uc.Reg {
	return []uc.Reg{uc.RBX, uc.RBP, uc.R12, uc.R13, uc.R14, uc.R15}
}

func (x86) names() map[uc.Reg]string {
	return map[uc.Reg]string{uc.RAX: "rax", uc.RBX: "rbx", uc.RBP: "rbp", uc.RSP: "rsp",
		uc.R12: "r12", uc.R13: "r13", uc.R14: "r14", uc.R15: "r15"}
}

// xb assembles native checks at a known address.
type xb struct {
	a    x86asm
	at   uint64 // address of a[0]
	fail uint64
	err  error
}

// Every compare's difference is or-ed into r11 and tested once (finish): under Unicorn
// each conditional branch ends a translated block, and blocks are what cost (the
// budget's hook, the exit check). Which compare failed does not matter: a failing run
// is replayed with Go hooks, which say what differed.

func (b *xb) pc() uint64 { return b.at + uint64(len(b.a)) }

// differ ors reg ^ [r12+off] into r11 (r10 is scratch).
func (b *xb) differ(reg, off int) {
	b.a = append(b.a, 0x49|byte(reg>>3)<<2, 0x89, 0xc0|byte(reg&7)<<3|2) // mov r10, reg
	b.a = append(b.a, 0x4d, 0x33)                                        // xor r10, [r12+off]
	b.mem(10, 12, off)
	b.a = append(b.a, 0x4d, 0x09, 0xd3) // or r11, r10
}

// flush branches to fail if any accumulated compare differed, and starts afresh.
func (b *xb) flush() {
	b.a = append(b.a, 0x4d, 0x85, 0xdb) // test r11, r11
	b.jne()
}

func (b *xb) jne() {
	b.a = append(b.a, 0x0f, 0x85)
	d := int64(b.fail - (b.pc() + 4))
	if d != int64(int32(d)) && b.err == nil {
		b.err = fmt.Errorf("jne to %#x out of range", b.fail)
	}
	b.a = binary.LittleEndian.AppendUint32(b.a, uint32(int32(d)))
}

// mem appends a ModRM (+SIB) and displacement for [base+disp] with reg in the reg field.
func (b *xb) mem(reg, base, disp int) {
	mod := byte(0x40)
	if disp < -128 || disp > 127 {
		mod = 0x80
	}
	b.a = append(b.a, mod|byte(reg&7)<<3|byte(base&7))
	if base&7 == 4 {
		b.a = append(b.a, 0x24)
	}
	if mod == 0x40 {
		b.a = append(b.a, byte(int8(disp)))
	} else {
		b.a = binary.LittleEndian.AppendUint32(b.a, uint32(int32(disp)))
	}
}

// cmpScript ors reg's difference from the script word at off into r11.
func (b *xb) cmpScript(reg, off int) { b.differ(reg, off) }

// load is mov rax, [base+disp].
func (b *xb) load(base, disp int) {
	b.a = append(b.a, 0x48|byte(base>>3), 0x8b)
	b.mem(xRAX, base, disp)
}

func (b *xb) advance() {
	b.a = append(b.a, 0x49, 0x81, 0xc4) // add r12, imm32
	b.a = binary.LittleEndian.AppendUint32(b.a, entrySize)
}

const xR12, xR13 = 12, 13

func (x86) nativeStub(p *piece, routine, fail uint64, c *nativeCfg) ([]byte, error) {
	b := &xb{at: p.addr, fail: fail}
	if p.hook == stubStray {
		b.a = append(b.a, 0xe9, 0, 0, 0, 0)
		binary.LittleEndian.PutUint32(b.a[1:], uint32(int32(int64(fail-(p.addr+5)))))
		return b.a, nil
	}
	// The identity is one more difference: a branch of its own would end a block (each
	// costs the budget hook and Unicorn's exit check). An entry past the script's end
	// reads zeros (the script area is zeroed to its end), so a stub called once too
	// often fails like any other difference. Nothing is stored before the test (finish,
	// or a session program's flush); the exit reads the cookie through r13, the run_ctx
	// its enter got, which rdx must equal.
	b.a = append(b.a, 0x4d, 0x8b, 0x1c, 0x24, 0x49, 0x81, 0xf3) // mov r11, [r12]; xor r11, imm32
	b.a = binary.LittleEndian.AppendUint32(b.a, uint32(p.id))
	switch p.hook {
	case stubEnter:
		b.cmpScript(xRDI, entPtr)
		b.load(xRSI, 0) // the cookie in run_ctx
		b.cmpScript(xRAX, entCookie)
		b.a = append(b.a, 0x49, 0x89, 0xf5) // mov r13, rsi
		b.load(xR12, entVal)
		b.advance()
	case stubExit:
		b.cmpScript(xRDI, entPtr)
		b.cmpScript(xRSI, entVal)
		b.a = append(b.a, 0x49, 0x89, 0xd2, 0x4d, 0x31, 0xea, 0x4d, 0x09, 0xd3) // mov r10, rdx; xor r10, r13; or r11, r10
		b.load(xR13, 0)
		b.cmpScript(xRAX, entCookie)
		b.advance()
		b.a = b.a.mov32(xRAX, voidRet)
	case stubTramp:
		b.cmpScript(xRDI, entPtr)
		b.advance()
		b.a = b.a.mov32(xRAX, voidRet)
	case stubProg:
		for _, k := range c.progWords(p.prog) {
			b.load(xRDI, 8*k)
			b.cmpScript(xRAX, ctxOff(k))
		}
		b.load(xR13, 0) // the cookie bpf_get_attach_cookie would read
		b.cmpScript(xRAX, entCookie)
		if idx, ok := c.sessIdx[p.prog]; ok {
			// The session cookie, then the mark into it (again on exit: the value the
			// check just found, so nothing changes), stored once the checks passed.
			b.load(xRDI, -8*idx)
			b.cmpScript(xRAX, entSess)
			b.flush()
			b.a = b.a.movabs(xRAX, sessionMark(p.prog))
			b.a = append(b.a, 0x48, 0x89) // mov [rdi-8*idx], rax
			b.mem(xRAX, xRDI, -8*idx)
		}
		b.advance()
		b.a = b.a.movabs(xRAX, p.ret)
	}
	b.a = b.a.finish(b.fail, routine)
	return b.a, b.err
}

// progWords are the ctx indexes a program's stub compares.
func (c *nativeCfg) progWords(prog int) []int {
	var ks []int
	if c.ipArg {
		ks = append(ks, -2)
	}
	for k := -1; k < c.nregs; k++ {
		ks = append(ks, k)
	}
	if c.retSlot[prog] {
		ks = append(ks, c.nregs)
	}
	return ks
}

// nativeBody checks the original's arguments (registers, then its stack slots).
func (x86) nativeBody(at, fail uint64, locs []slotLoc) ([]byte, error) {
	b := &xb{at: at, fail: fail}
	b.a = append(b.a, 0x4d, 0x8b, 0x1c, 0x24, 0x49, 0x81, 0xf3) // mov r11, [r12]; xor r11, imm32
	b.a = binary.LittleEndian.AppendUint32(b.a, idOriginal)
	for k, l := range locs {
		if l.reg >= 0 {
			b.cmpScript(x86ArgNums[l.reg], ctxOff(k))
		} else {
			b.load(4, 8+8*l.stack) // mov rax, [rsp+8+8j]
			b.cmpScript(xRAX, ctxOff(k))
		}
	}
	b.advance() // the difference in r11 is tested where the body returns (outOfLine)
	return b.a, b.err
}

// nativeCaller is the batch loop with the per-call checks in emulated code.
func (t x86) nativeCaller(base, fn uint64, regs []uint64, cc *callerCheck) ([]byte, int, int, int) {
	var a x86asm
	a = a.movabs(xR12, scriptBase)
	for i, v := range regs {
		a = a.movabs(x86ArgNums[i], v)
	}
	a = a.movabs(xR11, fn)
	a = append(a, 0x41, 0xff, 0xd3) // call r11
	after := len(a)
	// Every difference is or-ed into r11 and one jne goes to fail (a block of its own
	// per compare otherwise; the replay says what differed). r10 and rax are scratch.
	differ := func() { a = append(a, 0x4d, 0x09, 0xd3) } // or r11, r10
	a = a.movabs(xR11, cc.scriptEnd)
	a = append(a, 0x4d, 0x31, 0xe3) // xor r11, r12: every scripted call came
	switch cc.retMask {
	case 0: // a void struct_ops member: nothing is required of rax
	case ^uint64(0):
		a = a.movabs(xR11-1, cc.ret)
		a = append(a, 0x49, 0x31, 0xc2) // xor r10, rax
		differ()
	default: // the member's width
		a = a.movabs(xR11-1, cc.retMask)
		a = append(a, 0x49, 0x21, 0xc2) // and r10, rax
		a = a.movabs(xRAX, cc.ret&cc.retMask)
		a = append(a, 0x49, 0x31, 0xc2) // xor r10, rax
		differ()
	}
	a = append(a, 0x49, 0x89, 0xe2, 0x49, 0x81, 0xf2) // mov r10, rsp; xor r10, imm32
	a = binary.LittleEndian.AppendUint32(a, sp0)
	differ()
	for _, r := range []struct {
		reg uc.Reg
		num int
	}{{uc.RBX, 3}, {uc.RBP, 5}, {uc.R14, 14}} {
		a = a.movabs(xR11-1, cc.canaries[r.reg])
		a = append(a, 0x49|byte(r.num>>3)<<2, 0x31, 0xc2|byte(r.num&7)<<3) // xor r10, reg
		differ()
	}
	a = append(a, 0x4d, 0x85, 0xdb, 0x0f, 0x85, 0, 0, 0, 0) // test r11, r11; jne fail
	jnes := []int{len(a)}
	a = append(a, 0x49, 0xff, 0xcf) // dec r15
	a = append(a, 0x0f, 0x85)       // jnz loop
	a = binary.LittleEndian.AppendUint32(a, uint32(int32(-(len(a) + 4))))
	done := len(a)
	a = append(a, t.sentinel()...)
	fail := len(a)
	a = append(a, t.sentinel()...)
	for _, end := range jnes {
		binary.LittleEndian.PutUint32(a[end-4:], uint32(int32(fail-end)))
	}
	return a, after, done, fail
}
