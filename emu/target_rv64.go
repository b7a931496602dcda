package emu

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	uc "github.com/trampjit/trampjit/emu/unicorn"
)

// rv64 is the riscv64 target: the psABI (a0-a7, then the stack), the kernel's ftrace
// patch site `auipc t0; jalr t0` (arch/riscv/kernel/ftrace.c, ftrace_make_call) and a
// BPF program's `auipc t1; jalr t0` (arch/riscv/net/bpf_jit_comp64.c, bpf_arch_text_poke):
// either way the trampoline is entered with t0 = the patch site + 8, where the original
// resumes, and ra = the traced function's caller. The harness's own code uses 4-byte
// instructions only (the images bring the compressed ones).
type rv64 struct{}

// Registers by number.
const (
	rvZero = 0
	rvRA   = 1
	rvSP   = 2
	rvT0   = 5
	rvT1   = 6
	rvA0   = 10
	rvA1   = 11
	rvA2   = 12
	rvA5   = 15
	rvS9   = 25 // native checks: the script cursor
	rvS10  = 26 // native checks: the latest enter's run_ctx
	rvS11  = 27 // the caller's loop counter
	rvT3   = 28 // the enter stub's return value, set by its hook
	rvT4   = 29 // check scratch: loaded words
	rvT5   = 30 // check scratch: script words
	rvT6   = 31 // check accumulator
)

// Fixed encodings (riscv64-linux-gnu-as, rv64_test.go).
const (
	rvRet = 0x00008067 // jalr zero, 0(ra)
	rvNop = 0x00000013
	rvWfi = 0x10500073
)

func rvS(r int) int { // s0..s11 -> x8, x9, x18..x27
	if r < 2 {
		return 8 + r
	}
	return 16 + r
}

type rvasm []byte

func (a rvasm) w(ws ...uint32) rvasm {
	for _, x := range ws {
		a = binary.LittleEndian.AppendUint32(a, x)
	}
	return a
}

func rvR(f7, rs2, rs1, f3, rd, op int) uint32 {
	return uint32(f7)<<25 | uint32(rs2)<<20 | uint32(rs1)<<15 | uint32(f3)<<12 | uint32(rd)<<7 | uint32(op)
}

func rvI(imm, rs1, f3, rd, op int) uint32 {
	return uint32(imm&0xfff)<<20 | uint32(rs1)<<15 | uint32(f3)<<12 | uint32(rd)<<7 | uint32(op)
}

func rvAddi(rd, rs, imm int) uint32  { return rvI(imm, rs, 0, rd, 0x13) }
func rvAddiw(rd, rs, imm int) uint32 { return rvI(imm, rs, 0, rd, 0x1b) }
func rvSlli(rd, rs, sh int) uint32   { return rvI(sh, rs, 1, rd, 0x13) }
func rvSrli(rd, rs, sh int) uint32   { return rvI(sh, rs, 5, rd, 0x13) }
func rvAndi(rd, rs, imm int) uint32  { return rvI(imm, rs, 7, rd, 0x13) }
func rvLd(rd, rs, off int) uint32    { return rvI(off, rs, 3, rd, 0x03) }
func rvJalr(rd, rs, off int) uint32  { return rvI(off, rs, 0, rd, 0x67) }
func rvAdd(rd, a, b int) uint32      { return rvR(0, b, a, 0, rd, 0x33) }
func rvXor(rd, a, b int) uint32      { return rvR(0, b, a, 4, rd, 0x33) }
func rvOr(rd, a, b int) uint32       { return rvR(0, b, a, 6, rd, 0x33) }
func rvMul(rd, a, b int) uint32      { return rvR(1, b, a, 0, rd, 0x33) }
func rvMv(rd, rs int) uint32         { return rvAddi(rd, rs, 0) }
func rvLui(rd int, imm20 uint32) uint32 {
	return (imm20&0xfffff)<<12 | uint32(rd)<<7 | 0x37
}
func rvAuipc(rd int, imm20 uint32) uint32 {
	return (imm20&0xfffff)<<12 | uint32(rd)<<7 | 0x17
}

func rvSd(rs2, rs1, off int) uint32 {
	o := uint32(off & 0xfff)
	return o>>5<<25 | uint32(rs2)<<20 | uint32(rs1)<<15 | 3<<12 | o&0x1f<<7 | 0x23
}

// rvJal is jal rd by off bytes (±1 MiB).
func rvJal(rd, off int) uint32 {
	o := uint32(off)
	return o>>20&1<<31 | o>>1&0x3ff<<21 | o>>11&1<<20 | o>>12&0xff<<12 | uint32(rd)<<7 | 0x6f
}

// rvB is beq (f3 0) or bne (f3 1) by off bytes (±4 KiB).
func rvB(f3, rs1, rs2, off int) uint32 {
	o := uint32(off)
	return o>>12&1<<31 | o>>5&0x3f<<25 | uint32(rs2)<<20 | uint32(rs1)<<15 | uint32(f3)<<12 |
		o>>1&0xf<<8 | o>>11&1<<7 | 0x63
}

// li loads any 64-bit value in eight instructions: lui+addiw make the upper word
// (sign-extended, which the shifts push out), then 11+11+10 bits of the lower word are
// shifted in with non-negative addi immediates.
func (a rvasm) li(rd int, v uint64) rvasm {
	hi := uint32(v >> 32)
	lo12 := int32(hi<<20) >> 20
	lo := uint32(v)
	return a.w(rvLui(rd, (hi-uint32(lo12))>>12), rvAddiw(rd, rd, int(lo12)),
		rvSlli(rd, rd, 11), rvAddi(rd, rd, int(lo>>21)),
		rvSlli(rd, rd, 11), rvAddi(rd, rd, int(lo>>10&0x7ff)),
		rvSlli(rd, rd, 10), rvAddi(rd, rd, int(lo&0x3ff)))
}

// rvFar splits to-at into auipc's and jalr's immediates (±2 GiB, as the kernel's
// emit_call and the ftrace site reach).
func rvFar(at, to uint64) (uint32, int, error) {
	d := int64(to - at)
	if d < -(1<<31)-(1<<11) || d >= (1<<31)-(1<<11) {
		return 0, 0, fmt.Errorf("auipc+jalr from %#x to %#x out of range", at, to)
	}
	hi := (d + 0x800) >> 12
	return uint32(hi), int(d - hi<<12), nil
}

// far is auipc tmp + jalr link, lo(tmp): a call (link ra or t0) or jump (link zero).
func (a rvasm) far(link, tmp int, at, to uint64) (rvasm, error) {
	hi, lo, err := rvFar(at, to)
	if err != nil {
		return a, err
	}
	return a.w(rvAuipc(tmp, hi), rvJalr(link, tmp, lo)), nil
}

// clobber overwrites t0-t6 and a0-a7 (a0 only without keepRet) with lui xN,
// 0xde000|N. ra stays: the stub returns through it.
func (a rvasm) clobber(keepRet bool) rvasm {
	for _, n := range []int{5, 6, 7, 10, 11, 12, 13, 14, 15, 16, 17, 28, 29, 30, 31} {
		if n == rvA0 && keepRet {
			continue
		}
		a = a.w(rvLui(n, 0xde000|uint32(n)))
	}
	return a
}

// voidRet leaves voidRet (sign-extended, as lui+addiw make it) in a0.
func (a rvasm) voidRet() rvasm {
	v := uint32(voidRet)
	lo := int32(v<<20) >> 20
	return a.w(rvLui(rvA0, (v-uint32(lo))>>12), rvAddiw(rvA0, rvA0, int(lo)))
}

// progRet returns like a JITed BPF program: a5 = R0, a0 = sext32(R0) (the program
// epilogue's addiw a0, a5, 0).
func (a rvasm) progRet(v uint64) rvasm {
	return a.li(rvA5, v).w(rvAddiw(rvA0, rvA5, 0))
}

func (a rvasm) tail(at, routine uint64) (rvasm, error) {
	if routine == 0 {
		return a.w(rvRet), nil
	}
	return a.far(rvZero, rvT1, at+uint64(len(a)), routine)
}

// la is auipc rd + addi rd, lo: the address to (±2 GiB) in rd.
func (a rvasm) la(rd int, at, to uint64) (rvasm, error) {
	hi, lo, err := rvFar(at+uint64(len(a)), to)
	return a.w(rvAuipc(rd, hi), rvAddi(rd, rd, lo)), err
}

// finish ends checking code at at+len(a) without a branch of its own (see the x86_64
// target's): on to routine (0: the return address in ra) when t6 is zero, else to fail,
// chosen with a mask (no conditional move in the base ISA) and reached by one jalr.
func (a rvasm) finish(at, fail, routine uint64) (rvasm, error) {
	base := rvRA
	var err error
	if routine != 0 {
		a, err = a.la(rvT1, at, routine)
		base = rvT1
	}
	a, err2 := a.la(rvT4, at, fail)
	if err == nil {
		err = err2
	}
	return a.w(rvXor(rvT4, rvT4, base),
		rvR(0, rvT6, rvZero, 3, rvT5, 0x33),    // sltu t5, zero, t6: 1 when anything differed
		rvR(0x20, rvT5, rvZero, 0, rvT5, 0x33), // sub t5, zero, t5: all ones then
		rvR(0, rvT5, rvT4, 7, rvT4, 0x33),      // and t4, t4, t5
		rvXor(rvT4, rvT4, base), rvJalr(rvZero, rvT4, 0)), err
}

func (rv64) ucArch() uc.Arch { return uc.RISCV64 }

func (rv64) caller(base, fn uint64, regs []uint64) ([]byte, int, int) {
	var a rvasm
	for i, v := range regs {
		a = a.li(rvA0+i, v)
	}
	a = a.li(rvT1, fn).w(rvJalr(rvRA, rvT1, 0))
	after := len(a)
	a = a.w(rvAddi(rvS11, rvS11, -1))
	a = a.w(rvB(1, rvS11, rvZero, -len(a))) // bne s11, zero, loop
	done := len(a)
	return a.w(rvWfi), after, done
}

// rv64Veneer is the code at the start of the out-of-line body that a patch site reaches
// the image through when it does not call it directly: ftrace_caller's direct-call path
// with CALL_OPS (ld t1, -16(t0): the ops pointer before the function; ld t1,
// direct_call(t1); jr t1), or, for an image beyond auipc's reach, a load of its address.
// Both leave t0 and ra as the patch site set them. The word at rv64OpsWord is the image
// address: the model's ftrace_ops, with direct_call at offset 0.
const (
	rv64Veneer  = 48
	rv64OpsWord = 40
)

// site lays out the patch site at fn: `auipc t0; jalr t0` to the image (a BPF program's
// `auipc t1; jalr t0`), or to the veneer with CALL_OPS or a far image. ip is fn, or the
// jalr at fn+4 (7.x ftrace records the second instruction).
func (rv64) site(s *siteSpec) (uint64, []byte, uint64, error) {
	if s.fn&1 != 0 || (s.ip != s.fn && s.ip != s.fn+4) {
		return 0, nil, 0, fmt.Errorf("patch site %#x does not fit function %#x", s.ip, s.fn)
	}
	tmp := rvT0
	if s.progTarget {
		tmp = rvT1
	}
	to := s.image
	if s.callOps {
		to = s.ool
	}
	a, err := rvasm(nil).far(rvT0, tmp, s.fn, to)
	if err != nil {
		if a, err = rvasm(nil).far(rvT0, tmp, s.fn, s.ool); err != nil {
			return 0, nil, 0, err
		}
	}
	body := s.fn + 8
	a, err = a.far(rvZero, rvT1, body, s.ool+rv64Veneer)
	return s.fn, a, body, err
}

// sitePrefix is the word before the function with CALL_OPS: the ftrace_ops pointer.
func (rv64) sitePrefix(s *siteSpec) (uint64, []byte) {
	if !s.callOps {
		return 0, nil
	}
	return s.fn - 8, binary.LittleEndian.AppendUint64(nil, s.ool+rv64OpsWord)
}

func (t rv64) outOfLine(s *siteSpec) []byte {
	var code rvasm
	if s.callOps {
		code = code.w(rvLd(rvT1, rvT0, -16), rvLd(rvT1, rvT1, 0), rvJalr(rvZero, rvT1, 0))
	} else {
		code = code.w(rvAuipc(rvT1, 0), rvLd(rvT1, rvT1, rv64OpsWord), rvJalr(rvZero, rvT1, 0))
	}
	for len(code) < rv64OpsWord {
		code = code.w(rvWfi)
	}
	code = binary.LittleEndian.AppendUint64(code, s.image)
	if s.fail != 0 {
		chk, _ := t.nativeBody(s.ool+rv64Veneer, s.fail, s.slots) // range: checked when the fail is placed
		code = append(code, chk...)
	}
	if s.constRet != nil {
		code = code.li(rvA0, *s.constRet)
	} else {
		code = code.li(rvT3, bodySeed).w(rvAddi(rvT4, rvZero, 31))
		for _, l := range s.slots {
			src := rvA0 + l.reg
			if l.reg < 0 {
				code = code.w(rvLd(rvT5, rvSP, 8*l.stack))
				src = rvT5
			}
			code = code.w(rvMul(rvT3, rvT3, rvT4), rvAdd(rvT3, rvT3, src))
		}
		code = code.w(rvMv(rvA0, rvT3))
		switch s.retSize {
		case 1:
			code = code.w(rvAndi(rvA0, rvA0, 0xff))
		case 2:
			code = code.w(rvSlli(rvA0, rvA0, 48), rvSrli(rvA0, rvA0, 48))
		case 4:
			code = code.w(rvAddiw(rvA0, rvA0, 0)) // sext.w: the psABI widens 32-bit returns signed
		}
	}
	switch {
	case s.fail != 0 && s.clobber: // the clobber overwrites t6: test it first
		b := &rb{a: code, at: s.ool, fail: s.fail}
		b.flush()
		code = b.a.clobber(true)
	case s.fail != 0:
		code, _ = code.finish(s.ool, s.fail, 0) // nativeBody's differences, tested at the return
		return code
	case s.clobber:
		code = code.clobber(true)
	}
	return code.w(rvRet)
}

func (rv64) helperStub(at, routine uint64) ([]byte, error) {
	return rvasm(nil).voidRet().tail(at, routine)
}

func (rv64) progStub(at, ret, routine uint64) ([]byte, error) {
	return rvasm(nil).progRet(ret).tail(at, routine)
}

func (rv64) clobberRoutine(keepRet bool) []byte { return rvasm(nil).clobber(keepRet).w(rvRet) }

// progClobberRoutine is a program stub's: a JITed BPF program returns R0 in a5 as well as
// sext32(R0) in a0, and struct_ops images return a5 (the a5 slot), so both stay.
func (rv64) progClobberRoutine() []byte {
	var a rvasm
	for _, n := range []int{5, 6, 7, 11, 12, 13, 14, 16, 17, 28, 29, 30, 31} { // not a0, a5
		a = a.w(rvLui(n, 0xde000|uint32(n)))
	}
	return a.w(rvRet)
}

func (rv64) enterStub(at, routine uint64) ([]byte, error) {
	return rvasm(nil).w(rvMv(rvA0, rvT3)).tail(at, routine)
}

func (rv64) scratch() uc.Reg { return uc.XR(rvT3) }

// jump is jal zero within its ±1 MiB, else auipc t1 + jalr zero: a stub jumps to its checks
// with one pc-relative instruction where it can, so that a call landing 4 bytes into the
// stub does not jump through whatever t1 the trampoline left (and into the middle of some
// checks, past their identity check).
func (rv64) jump(at, to uint64) ([]byte, error) {
	if d := int64(to - at); d >= -(1<<20) && d < 1<<20 {
		return rvasm(nil).w(rvJal(rvZero, int(d))), nil
	}
	return rvasm(nil).far(rvZero, rvT1, at, to)
}

func (rv64) retStub() []byte { return rvasm(nil).w(rvRet) }

// failStub is a fail address of the checks; a halt sentinel overwrites it.
func (t rv64) failStub() []byte { return t.retStub() }

func (rv64) argRegs() []uc.Reg {
	r := make([]uc.Reg, 8)
	for i := range r {
		r[i] = uc.XR(rvA0 + i)
	}
	return r
}
func (rv64) retReg() uc.Reg  { return uc.XR(rvA0) }
func (rv64) spReg() uc.Reg   { return uc.XR(rvSP) }
func (rv64) linkReg() uc.Reg { return uc.XR(rvRA) }

// calleeSaved is s0-s11; s11, the loop counter, last.
func (rv64) calleeSaved() []uc.Reg {
	r := make([]uc.Reg, 12)
	for i := range r {
		r[i] = uc.XR(rvS(i))
	}
	return r
}

func (rv64) names() map[uc.Reg]string {
	m := map[uc.Reg]string{}
	for n, s := range uc.RISCV64ABINames {
		m[uc.XR(n)] = s
	}
	return m
}

// rb assembles native checks at a known address: t4 holds loaded words, t5 script words,
// t6 the or of their differences; s9 is the cursor, s10 the latest run_ctx.
type rb struct {
	a    rvasm
	at   uint64
	fail uint64
	err  error
}

func (b *rb) pc() uint64 { return b.at + uint64(len(b.a)) }

// toFail is beq reg, zero, +12; auipc t5; jalr zero, lo(t5): to fail when reg is not zero,
// at any distance and with a size that does not depend on it.
func (b *rb) toFail(reg int) {
	b.a = b.a.w(rvB(0, reg, rvZero, 12))
	var err error
	if b.a, err = b.a.far(rvZero, rvT5, b.pc(), b.fail); err != nil && b.err == nil {
		b.err = err
	}
}

func (b *rb) flush() { b.toFail(rvT6) }

// differ ors reg ^ t5 into t6.
func (b *rb) differ(reg int) { b.a = b.a.w(rvXor(rvT5, reg, rvT5), rvOr(rvT6, rvT6, rvT5)) }

// cmpScript compares reg with the script word at off.
func (b *rb) cmpScript(reg, off int) {
	b.a = b.a.w(rvLd(rvT5, rvS9, off))
	b.differ(reg)
}

func (b *rb) load(base, disp int) { b.a = b.a.w(rvLd(rvT4, base, disp)) }

func (b *rb) advance() { b.a = b.a.w(rvAddi(rvS9, rvS9, entrySize)) }

func (rv64) nativeStub(p *piece, routine, fail uint64, c *nativeCfg) ([]byte, error) {
	b := &rb{at: p.addr, fail: fail}
	if p.hook == stubStray {
		return rvasm(nil).far(rvZero, rvT1, p.addr, fail)
	}
	// The identity is one more difference (see the x86_64 stubs): ld t5, 0(s9);
	// addi t6, t5, -id. Nothing is stored before the test; the exit reads the cookie
	// through s10, the run_ctx its enter got, which a2 must equal.
	b.a = b.a.w(rvLd(rvT5, rvS9, entID), rvAddi(rvT6, rvT5, -p.id))
	switch p.hook {
	case stubEnter:
		b.cmpScript(rvA0, entPtr)
		b.load(rvA1, 0) // the cookie in run_ctx
		b.cmpScript(rvT4, entCookie)
		b.a = b.a.w(rvMv(rvS10, rvA1), rvLd(rvA0, rvS9, entVal))
		b.advance()
	case stubExit:
		b.cmpScript(rvA0, entPtr)
		b.cmpScript(rvA1, entVal)
		b.a = b.a.w(rvMv(rvT5, rvA2)) // the run_ctx enter got
		b.differ(rvS10)
		b.load(rvS10, 0)
		b.cmpScript(rvT4, entCookie)
		b.advance()
		b.a = b.a.voidRet()
	case stubTramp:
		b.cmpScript(rvA0, entPtr)
		b.advance()
		b.a = b.a.voidRet()
	case stubProg:
		for _, k := range c.progWords(p.prog) {
			b.load(rvA0, 8*k)
			b.cmpScript(rvT4, ctxOff(k))
		}
		b.load(rvS10, 0) // the cookie bpf_get_attach_cookie would read
		b.cmpScript(rvT4, entCookie)
		if idx, ok := c.sessIdx[p.prog]; ok {
			// The session cookie, then the mark into it (again on exit: the value the
			// check just found, so nothing changes), stored once the checks passed.
			b.load(rvA0, -8*idx)
			b.cmpScript(rvT4, entSess)
			b.flush()
			b.a = b.a.li(rvT4, sessionMark(p.prog)).w(rvSd(rvT4, rvA0, -8*idx))
		}
		b.advance()
		b.a = b.a.progRet(p.ret)
	}
	var err error
	if b.a, err = b.a.finish(b.at, b.fail, routine); err != nil && b.err == nil {
		b.err = err
	}
	return b.a, b.err
}

func (rv64) nativeBody(at, fail uint64, locs []slotLoc) ([]byte, error) {
	b := &rb{at: at, fail: fail}
	b.a = b.a.w(rvLd(rvT5, rvS9, entID), rvAddi(rvT6, rvT5, -idOriginal))
	for k, l := range locs {
		reg := rvA0 + l.reg
		if l.reg < 0 {
			b.load(rvSP, 8*l.stack)
			reg = rvT4
		}
		b.cmpScript(reg, ctxOff(k))
	}
	b.advance() // the difference in t6 is tested where the body returns (outOfLine)
	return b.a, b.err
}

func (rv64) nativeCaller(base, fn uint64, regs []uint64, cc *callerCheck) ([]byte, int, int, int) {
	var a rvasm
	a = a.li(rvS9, scriptBase)
	for i, v := range regs {
		a = a.li(rvA0+i, v)
	}
	a = a.li(rvT1, fn).w(rvJalr(rvRA, rvT1, 0))
	after := len(a)
	// Every difference is or-ed into t6 and one bne goes to fail (one translated block;
	// the replay says what differed).
	differ := func(n int) { a = a.w(rvXor(rvT5, n, rvT5), rvOr(rvT6, rvT6, rvT5)) }
	a = a.w(rvMv(rvT6, rvZero))
	a = a.li(rvT5, cc.scriptEnd)
	differ(rvS9)
	switch cc.retMask {
	case 0: // a void struct_ops member: nothing is required of a0
	case ^uint64(0):
		a = a.li(rvT5, cc.ret)
		differ(rvA0)
	default: // the member's width, zero-extended into t4
		sh := 64 - bits.Len64(cc.retMask)
		a = a.w(rvSlli(rvT4, rvA0, sh), rvSrli(rvT4, rvT4, sh))
		a = a.li(rvT5, cc.ret&cc.retMask)
		differ(rvT4)
	}
	a = a.li(rvT5, sp0)
	differ(rvSP)
	for i := 0; i <= 8; i++ { // s0-s8; s9, s10 are the checks' own
		a = a.li(rvT5, cc.canaries[uc.XR(rvS(i))])
		differ(rvS(i))
	}
	bne := len(a)
	a = a.w(0) // bne t6, zero, fail
	a = a.w(rvAddi(rvS11, rvS11, -1))
	a = a.w(rvB(1, rvS11, rvZero, -len(a))) // bne s11, zero, loop
	done := len(a)
	a = a.w(rvWfi)
	fail := len(a)
	a = a.w(rvWfi)
	binary.LittleEndian.PutUint32(a[bne:], rvB(1, rvT6, rvZero, fail-bne))
	return a, after, done, fail
}
