package unicorn

/*
#include <unicorn/unicorn.h>
*/
import "C"

// x86_64 registers.
const (
	RAX    = Reg(C.UC_X86_REG_RAX)
	RBX    = Reg(C.UC_X86_REG_RBX)
	RCX    = Reg(C.UC_X86_REG_RCX)
	RDX    = Reg(C.UC_X86_REG_RDX)
	RSI    = Reg(C.UC_X86_REG_RSI)
	RDI    = Reg(C.UC_X86_REG_RDI)
	RBP    = Reg(C.UC_X86_REG_RBP)
	RSP    = Reg(C.UC_X86_REG_RSP)
	R8     = Reg(C.UC_X86_REG_R8)
	R9     = Reg(C.UC_X86_REG_R9)
	R10    = Reg(C.UC_X86_REG_R10)
	R11    = Reg(C.UC_X86_REG_R11)
	R12    = Reg(C.UC_X86_REG_R12)
	R13    = Reg(C.UC_X86_REG_R13)
	R14    = Reg(C.UC_X86_REG_R14)
	R15    = Reg(C.UC_X86_REG_R15)
	RIP    = Reg(C.UC_X86_REG_RIP)
	RFLAGS = Reg(C.UC_X86_REG_RFLAGS)
	// FSBase and GSBase: the kernel reaches per-cpu data through gs.
	FSBase = Reg(C.UC_X86_REG_FS_BASE)
	GSBase = Reg(C.UC_X86_REG_GS_BASE)
)

// X86GPRs lists the 16 general-purpose registers in hardware encoding order
// (rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8..r15), so X86GPRs[n] is the
// register an instruction's ModRM/REX number n names.
var X86GPRs = [16]Reg{RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI,
	R8, R9, R10, R11, R12, R13, R14, R15}
