package emu

import (
	"encoding/binary"
	"fmt"

	uc "github.com/trampjit/trampjit/emu/unicorn"
)

// a64 is the arm64 target: AAPCS64, the kernel's `mov x9, x30; bl` patch site.
type a64 struct{}

// Encodings checked with aarch64-linux-gnu-as.
const (
	a64Ret    = 0xd65f03c0
	a64Nop    = 0xd503201f
	a64BtiC   = 0xd503245f
	a64Wfi    = 0xd503207f
	a64MovX9  = 0xaa1e03e9 // mov x9, x30 (ORR): the ftrace site
	a64AddX9  = 0x910003c9 // add x9, x30, #0: a BPF program's entry
	a64BlrX16 = 0xd63f0200
	a64Subs28 = 0xf100079c // subs x28, x28, #1
	a64Mov31  = 0xd28003ea // movz x10, #31
	a64MovX0  = 0xaa0b03e0 // mov x0, x11
	a64LdrX17 = 0x58000051 // ldr x17, #8
	a64BrX17  = 0xd61f0220
)

type a64asm []byte

func (a a64asm) w(ws ...uint32) a64asm {
	for _, x := range ws {
		a = binary.LittleEndian.AppendUint32(a, x)
	}
	return a
}

// mov64 is movz + 3 movk: any value, fixed length.
func (a a64asm) mov64(rd int, v uint64) a64asm {
	a = a.w(0xd2800000 | uint32(v&0xffff)<<5 | uint32(rd))
	for hw := uint32(1); hw < 4; hw++ {
		a = a.w(0xf2800000 | hw<<21 | uint32(v>>(16*hw)&0xffff)<<5 | uint32(rd))
	}
	return a
}

// branch is b (link false) or bl from at to to.
func (a a64asm) branch(link bool, at, to uint64) (a64asm, error) {
	d := int64(to - at)
	if d < -(1<<27) || d >= 1<<27 || d&3 != 0 {
		return a, fmt.Errorf("branch from %#x to %#x out of range", at, to)
	}
	op := uint32(0x14000000)
	if link {
		op = 0x94000000
	}
	return a.w(op | uint32(d>>2)&0x3ffffff), nil
}

// clobber overwrites x0..x17 (x0 only without keepRet) with movz xN, #(0xde00|N), lsl 16.
func (a a64asm) clobber(keepRet bool) a64asm {
	for n := 0; n <= 17; n++ {
		if n == 0 && keepRet {
			continue
		}
		a = a.w(0xd2a00000 | uint32(0xde00|n)<<5 | uint32(n))
	}
	return a
}

func (a64) ucArch() uc.Arch { return uc.ARM64 }

func (a64) caller(base, fn uint64, regs []uint64) ([]byte, int, int) {
	var a a64asm
	for i, v := range regs {
		a = a.mov64(i, v)
	}
	a = a.mov64(16, fn)
	a = a.w(a64BlrX16)
	after := len(a)
	a = a.w(a64Subs28)
	a = a.w(0x54000001 | uint32(-len(a)/4)&0x7ffff<<5) // b.ne loop
	done := len(a)
	return a.w(a64Wfi), after, done
}

func (a64) site(s *siteSpec) (uint64, []byte, uint64, error) {
	if s.ip < 4 || s.ip&3 != 0 || s.fn&3 != 0 || s.ip > s.fn+64 {
		return 0, nil, 0, fmt.Errorf("patch site %#x does not fit function %#x", s.ip, s.fn)
	}
	start := min(s.fn, s.ip-4)
	var a a64asm
	for at := start; at < s.ip-4; at += 4 {
		if at == start && s.ibt {
			a = a.w(a64BtiC)
		} else {
			a = a.w(a64Nop)
		}
	}
	if s.progTarget {
		a = a.w(a64AddX9)
	} else {
		a = a.w(a64MovX9)
	}
	// Near: bl image. Far: bl a veneer that branches with x9/x30 intact, as
	// ftrace_caller's direct-call path does (br x17).
	a2, err := a.branch(true, s.ip, s.image)
	if err != nil {
		if a2, err = a.branch(true, s.ip, s.ool); err != nil {
			return 0, nil, 0, err
		}
	}
	body := s.ip + 4
	a2, err = a2.branch(false, body, s.ool+a64Veneer)
	return start, a2, body, err
}

// a64Veneer is the veneer's length at the start of the out-of-line code.
const a64Veneer = 16

func (t a64) outOfLine(s *siteSpec) []byte {
	code := a64asm(nil).w(a64LdrX17, a64BrX17)
	code = binary.LittleEndian.AppendUint64(code, s.image)
	if s.fail != 0 {
		chk, _ := t.nativeBody(s.ool+a64Veneer, s.fail, s.slots) // range: checked when the fail is placed
		code = append(code, chk...)
	}
	if s.constRet != nil {
		code = code.mov64(0, *s.constRet)
	} else {
		code = code.mov64(11, bodySeed).w(a64Mov31)
		for _, l := range s.slots {
			src := l.reg
			if src < 0 {
				code = code.w(0xf9400000 | uint32(l.stack)<<10 | 31<<5 | 12) // ldr x12, [sp, #8j]
				src = 12
			}
			code = code.w(0x9b000000 | 10<<16 | uint32(src)<<10 | 11<<5 | 11) // madd x11, x11, x10, src
		}
		code = code.w(a64MovX0)
		switch s.retSize {
		case 1:
			code = code.w(0x92401c00) // and x0, x0, #0xff
		case 2:
			code = code.w(0x92403c00) // and x0, x0, #0xffff
		case 4:
			code = code.w(0x2a0003e0) // mov w0, w0
		}
	}
	switch {
	case s.fail != 0 && s.clobber: // the clobber overwrites x15: test it first
		b := &ab{a: code, at: s.ool, fail: s.fail}
		b.flush()
		code = b.a.clobber(true)
	case s.fail != 0:
		code, _ = code.finish(s.ool, s.fail, 0) // nativeBody's differences, tested at the return
		return code
	case s.clobber:
		code = code.clobber(true)
	}
	return code.w(a64Ret)
}

// finish ends checking code at at+len(a) without a branch of its own (see
// x86asm.finish): on to routine (0: the return address in x30) when x15 is zero, else to
// fail. adr reaches ±1 MiB: a stub too far from its cluster's fail is placed past the
// cluster instead.
func (a a64asm) finish(at, fail, routine uint64) (a64asm, error) {
	a, err := a.adr(16, at+uint64(len(a)), fail)
	sel := uint32(0x9a9003d0) // csel x16, x30, x16, eq
	if routine != 0 && err == nil {
		a, err = a.adr(17, at+uint64(len(a)), routine)
		sel = 0x9a900230 // csel x16, x17, x16, eq
	}
	return a.w(0xf10001ff, sel, 0xd61f0200), err // cmp x15, #0; csel; br x16
}

// adr is adr xd, to (from pc).
func (a a64asm) adr(rd int, pc, to uint64) (a64asm, error) {
	d := int64(to - pc)
	if d < -(1<<20) || d >= 1<<20 {
		return a.w(0x10000000 | uint32(rd)), fmt.Errorf("adr from %#x to %#x out of range", pc, to)
	}
	return a.w(0x10000000 | uint32(d&3)<<29 | uint32(d>>2)&0x7ffff<<5 | uint32(rd)), nil
}

func (a64) helperStub(at, routine uint64) ([]byte, error) {
	a := a64asm(nil).voidRet() // the helpers return void: x0 is garbage
	if routine == 0 {
		return a.w(a64Ret), nil
	}
	return a.branch(false, at+uint64(len(a)), routine)
}

// voidRet leaves voidRet in x0: movz x0, #lo; movk x0, #hi, lsl 16.
func (a a64asm) voidRet() a64asm {
	return a.w(0xd2800000|uint32(voidRet&0xffff)<<5, 0xf2a00000|uint32(voidRet>>16)<<5)
}

func (a64) progStub(at, ret, routine uint64) ([]byte, error) {
	a := a64asm(nil).mov64(0, ret)
	if routine == 0 {
		return a.w(a64Ret), nil
	}
	return a.branch(false, at+uint64(len(a)), routine)
}

func (a64) clobberRoutine(keepRet bool) []byte { return a64asm(nil).clobber(keepRet).w(a64Ret) }

func (a64) enterStub(at, routine uint64) ([]byte, error) {
	a := a64asm(nil).w(0xaa1003e0) // mov x0, x16
	if routine == 0 {
		return a.w(a64Ret), nil
	}
	return a.branch(false, at+uint64(len(a)), routine)
}

func (a64) scratch() uc.Reg { return uc.X16 }

func (a64) jump(at, to uint64) ([]byte, error) { return a64asm(nil).branch(false, at, to) }

func (a64) retStub() []byte { return a64asm(nil).w(a64Ret) }

// failStub is a fail address of the checks; a halt sentinel hooks it.
func (t a64) failStub() []byte { return t.retStub() }

func (a64) argRegs() []uc.Reg {
	return []uc.Reg{uc.X0, uc.X1, uc.X2, uc.X3, uc.X4, uc.X5, uc.X6, uc.X7}
}
func (a64) retReg() uc.Reg  { return uc.X0 }
func (a64) spReg() uc.Reg   { return uc.SP }
func (a64) linkReg() uc.Reg { return uc.X30 }
func (a64) calleeSaved() []uc.Reg {
	return []uc.Reg{uc.X19, uc.X20, uc.X21, uc.X22, uc.X23, uc.X24, uc.X25, uc.X26, uc.X27, uc.X29, uc.X28}
}

func (a64) names() map[uc.Reg]string {
	m := map[uc.Reg]string{uc.SP: "sp"}
	for n := 0; n <= 30; n++ {
		m[uc.X(n)] = fmt.Sprintf("x%d", n)
	}
	return m
}

// ab assembles native checks at a known address; x16/x17 are its scratch registers.
type ab struct {
	a    a64asm
	at   uint64
	fail uint64
	err  error
}

// As on x86_64, every compare's difference is or-ed into x15 and tested once (finish).

// flush branches to fail if any accumulated compare differed: cbz x15, +8; b fail
// (cbnz would reach only ±1 MiB; the size must not depend on where fail is).
func (b *ab) flush() {
	b.a = b.a.w(0xb4000040 | 15)
	var err error
	if b.a, err = b.a.branch(false, b.pc(), b.fail); err != nil && b.err == nil {
		b.err = err
	}
}

// differ ors xn ^ x17 into x15.
func (b *ab) differ(n int) {
	b.a = b.a.w(0xca000000|17<<16|uint32(n)<<5|17, 0xaa000000|17<<16|15<<5|15) // eor x17, xn, x17; orr x15, x15, x17
}

func (b *ab) pc() uint64 { return b.at + uint64(len(b.a)) }

// cmpScript ors xreg's difference from the script word at off into x15.
func (b *ab) cmpScript(reg, off int) {
	b.a = b.a.w(0xf9400000 | uint32(off/8)<<10 | 21<<5 | 17) // ldr x17, [x21, #off]
	b.differ(reg)
}

// load is ldur x16, [base, #disp].
func (b *ab) load(base, disp int) {
	b.a = b.a.w(0xf8400000 | uint32(disp&0x1ff)<<12 | uint32(base)<<5 | 16)
}

func (b *ab) advance() { b.a = b.a.w(0x91000000 | entrySize<<10 | 21<<5 | 21) } // add x21, x21, #entrySize

func (a64) nativeStub(p *piece, routine, fail uint64, c *nativeCfg) ([]byte, error) {
	b := &ab{at: p.addr, fail: fail}
	if p.hook == stubStray {
		return a64asm(nil).branch(false, p.addr, fail)
	}
	// The identity is one more difference (see the x86_64 stubs): ldr x17, [x21];
	// sub x15, x17, #id. As there, nothing is stored before the test, and the exit's
	// cookie is read through x22, which x2 must equal.
	b.a = b.a.w(0xf9400000|21<<5|17, 0xd1000000|uint32(p.id)<<10|17<<5|15)
	switch p.hook {
	case stubEnter:
		b.cmpScript(0, entPtr)
		b.load(1, 0) // the cookie in run_ctx
		b.cmpScript(16, entCookie)
		b.a = b.a.w(0xaa0103f6, 0xf9400000|entVal/8<<10|21<<5|16) // mov x22, x1; ldr x16, [x21, #entVal]
		b.advance()
		b.a = b.a.w(0xaa1003e0) // mov x0, x16
	case stubExit:
		b.cmpScript(0, entPtr)
		b.cmpScript(1, entVal)
		b.a = b.a.w(0xaa0203f1) // mov x17, x2: the run_ctx enter got
		b.differ(22)
		b.load(22, 0)
		b.cmpScript(16, entCookie)
		b.advance()
		b.a = b.a.voidRet()
	case stubTramp:
		b.cmpScript(0, entPtr)
		b.advance()
		b.a = b.a.voidRet()
	case stubProg:
		for _, k := range c.progWords(p.prog) {
			b.load(0, 8*k)
			b.cmpScript(16, ctxOff(k))
		}
		b.load(22, 0) // the cookie bpf_get_attach_cookie would read
		b.cmpScript(16, entCookie)
		if idx, ok := c.sessIdx[p.prog]; ok {
			// The session cookie, then the mark into it (again on exit: the value the
			// check just found, so nothing changes), stored once the checks passed.
			b.load(0, -8*idx)
			b.cmpScript(16, entSess)
			b.flush()
			b.a = b.a.mov64(16, sessionMark(p.prog))
			b.a = b.a.w(0xf8000000 | uint32(-8*idx&0x1ff)<<12 | 0<<5 | 16) // stur x16, [x0, #-8*idx]
		}
		b.advance()
		b.a = b.a.mov64(0, p.ret)
	}
	var err error
	if b.a, err = b.a.finish(b.at, b.fail, routine); err != nil && b.err == nil {
		b.err = err
	}
	return b.a, b.err
}

func (a64) nativeBody(at, fail uint64, locs []slotLoc) ([]byte, error) {
	b := &ab{at: at, fail: fail}
	b.a = b.a.w(0xf9400000|21<<5|17, 0xd1000000|idOriginal<<10|17<<5|15) // ldr x17, [x21]; sub x15, x17, #id
	for k, l := range locs {
		reg := l.reg
		if reg < 0 {
			b.a = b.a.w(0xf9400000 | uint32(l.stack)<<10 | 31<<5 | 16) // ldr x16, [sp, #8j]
			reg = 16
		}
		b.cmpScript(reg, ctxOff(k))
	}
	b.advance() // the difference in x15 is tested where the body returns (outOfLine)
	return b.a, b.err
}

func (a64) nativeCaller(base, fn uint64, regs []uint64, cc *callerCheck) ([]byte, int, int, int) {
	var a a64asm
	a = a.mov64(21, scriptBase)
	for i, v := range regs {
		a = a.mov64(i, v)
	}
	a = a.mov64(16, fn).w(a64BlrX16)
	after := len(a)
	// Every difference is or-ed into x15 and one cbnz goes to fail (one translated
	// block; the replay says what differed).
	differ := func(n int) { a = a.w(0xca000000|17<<16|uint32(n)<<5|17, 0xaa000000|17<<16|15<<5|15) }
	a = a.w(0xaa1f03ef) // mov x15, xzr
	a = a.mov64(17, cc.scriptEnd)
	differ(21)
	switch cc.retMask {
	case 0: // a void struct_ops member: nothing is required of x0
	case ^uint64(0):
		a = a.mov64(17, cc.ret)
		differ(0)
	default: // the member's width, zero-extended into x16
		ext := map[uint64]uint32{0xff: 0x53001c10, 0xffff: 0x53003c10, 0xffffffff: 0x2a0003f0} // uxtb, uxth, mov w16, w0
		a = a.w(ext[cc.retMask]).mov64(17, cc.ret&cc.retMask)
		differ(16)
	}
	a = a.w(0x910003f0).mov64(17, sp0) // mov x16, sp
	differ(16)
	for _, n := range []int{19, 20, 23, 24, 25, 26, 27, 29} {
		a = a.mov64(17, cc.canaries[uc.X(n)])
		differ(n)
	}
	bnes := []int{len(a)}
	a = a.w(0xb5000000 | 15) // cbnz x15, fail
	a = a.w(a64Subs28)
	a = a.w(0x54000001 | uint32(-len(a)/4)&0x7ffff<<5) // b.ne loop
	done := len(a)
	a = a.w(a64Wfi)
	fail := len(a)
	a = a.w(a64Wfi)
	for _, at := range bnes {
		w := binary.LittleEndian.Uint32(a[at:]) | uint32((fail-at)/4)&0x7ffff<<5
		binary.LittleEndian.PutUint32(a[at:], w)
	}
	return a, after, done, fail
}
