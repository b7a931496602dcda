package emu

import (
	"fmt"

	"github.com/trampjit/trampjit/btfmodel"
	uc "github.com/trampjit/trampjit/emu/unicorn"
)

// target writes the arch-specific machine code the harness maps around an image: the
// caller's loop, the traced function (patch site and body), and the helper and program
// stubs. Every stub starts at the address a Go hook watches (the hook records what the
// trampoline passed before the stub's own code runs) and ends in a plain return, so the
// trampoline sees an ordinary callee.
type target interface {
	ucArch() uc.Arch
	// caller is the batch loop at base: load the register arguments, call fn, count down
	// the loop register; after is the offset of the instruction following the call (the
	// per-hit hook) and done the offset of the loop's exit (the run's sentinel).
	caller(base, fn uint64, regs []uint64) (code []byte, after, done int)
	// site is the traced function from its symbol through the patch site calling the
	// image; at body (just after the patched call, where the original resumes) it branches
	// to the out-of-line code at s.ool. It returns the code's start, where callers enter.
	site(s *siteSpec) (start uint64, code []byte, body uint64, err error)
	// outOfLine is the code at s.ool: the original's body (and, on arm64, the veneer a far
	// patch site branches through).
	outOfLine(s *siteSpec) []byte
	// helperStub at at returns, or branches to routine (a clobberRoutine) when non-zero.
	helperStub(at, routine uint64) ([]byte, error)
	// progStub at at returns ret, through routine when non-zero.
	progStub(at, ret, routine uint64) ([]byte, error)
	// enterStub is a traced enter helper: it returns the scratch register, which its
	// hook sets (start, or 0 for a recursion miss).
	enterStub(at, routine uint64) ([]byte, error)
	scratch() uc.Reg
	// nativeStub is a stub that checks its call against its script entry (native.go)
	// and branches to fail on any difference.
	nativeStub(p *piece, routine, fail uint64, c *nativeCfg) ([]byte, error)
	// nativeBody checks the original's arguments; it goes before the body's code.
	nativeBody(at, fail uint64, locs []slotLoc) ([]byte, error)
	// nativeCaller is caller with the per-call checks; fail is the offset its failed
	// checks branch to.
	nativeCaller(base, fn uint64, regs []uint64, cc *callerCheck) (code []byte, after, done, fail int)
	// clobberRoutine overwrites every caller-saved register (keepRet spares the return
	// register) and returns: stubs branch to it so that they stay a few bytes long.
	clobberRoutine(keepRet bool) []byte
	// retStub is a return thunk: the plain return instruction.
	retStub() []byte
	// failStub is the code at a fail address of the checks (native.go).
	failStub() []byte
	// jump is an unconditional direct jump.
	jump(at, to uint64) ([]byte, error)

	argRegs() []uc.Reg // argument registers in ABI order
	retReg() uc.Reg
	spReg() uc.Reg
	linkReg() uc.Reg // arm64 x30; 0 on x86, where the return address is at [sp]
	// calleeSaved are the registers the caller fills with canaries (sp excluded); the
	// last one is the loop counter.
	calleeSaved() []uc.Reg
	names() map[uc.Reg]string
}

// siteSpec describes the traced function to lay out.
type siteSpec struct {
	fn, ip, image uint64
	ool           uint64 // out-of-line body, placed where there is room
	fail          uint64 // native checks: where the body's check branches on a difference
	progTarget    bool   // a BPF program's entry (arm64: add x9, x30, #0)
	ibt           bool   // x86: sealed ENDBR poison at fn; arm64: bti c
	jmp           bool   // x86 jmp mode: the site jumps to the image (jmpEntry)
	slots         []slotLoc
	retSize       int
	constRet      *uint64 // body returns this instead of its hash
	clobber       bool
	callOps       bool // riscv64 CALL_OPS: the site calls ftrace_caller, which finds the image through the ops pointer before fn
}

// sitePrefixer is a target with data before the traced function (riscv64 CALL_OPS:
// the ftrace_ops pointer); size 0 for none.
type sitePrefixer interface {
	sitePrefix(s *siteSpec) (addr uint64, data []byte)
}

func targetFor(a btfmodel.Arch) (target, error) {
	switch a {
	case btfmodel.AMD64:
		return x86{}, nil
	case btfmodel.ARM64:
		return a64{}, nil
	case btfmodel.RISCV64:
		return rv64{}, nil
	}
	return nil, fmt.Errorf("emu: no target for arch %q", a)
}

// clobberValue is what a clobbering stub leaves in caller-saved register n: recognisable
// in a report, and never a plausible pointer or count.
func clobberValue(n int) uint32 { return 0xdead0000 | uint32(n)<<4 | 0xd }

// voidRet is what the void helpers' stubs leave in the return register.
const voidRet = 0xdead000d

// bodySeed starts the synthetic body's hash.
const bodySeed = 0x1f2e3d4c

// bodyHash is the synthetic original's value: h = h*31 + w over the argument slots as
// it sees them, truncated to the declared return width (zero-extended, as a 32-bit
// write of eax/w0 does; riscv64 sign-extends a 4-byte value, as its psABI has every
// 32-bit value in a register); a void function leaves the whole hash in rax/x0/a0.
func bodyHash(a btfmodel.Arch, words []uint64, retSize int) uint64 {
	h := uint64(bodySeed)
	for _, w := range words {
		h = h*31 + w
	}
	if a == btfmodel.RISCV64 && retSize == 4 {
		return sext32(h)
	}
	return widen(h, retSize)
}

func sext32(v uint64) uint64 { return uint64(int64(int32(uint32(v)))) }

func widen(v uint64, size int) uint64 {
	switch size {
	case 1:
		return v & 0xff
	case 2:
		return v & 0xffff
	case 4:
		return v & 0xffffffff
	}
	return v
}
