package unicorn

// x86_64 registers.
const (
	RAX    = Reg(35)  // UC_X86_REG_RAX
	RBX    = Reg(37)  // UC_X86_REG_RBX
	RCX    = Reg(38)  // UC_X86_REG_RCX
	RDX    = Reg(40)  // UC_X86_REG_RDX
	RSI    = Reg(43)  // UC_X86_REG_RSI
	RDI    = Reg(39)  // UC_X86_REG_RDI
	RBP    = Reg(36)  // UC_X86_REG_RBP
	RSP    = Reg(44)  // UC_X86_REG_RSP
	R8     = Reg(106) // UC_X86_REG_R8
	R9     = Reg(107) // UC_X86_REG_R9
	R10    = Reg(108) // UC_X86_REG_R10
	R11    = Reg(109) // UC_X86_REG_R11
	R12    = Reg(110) // UC_X86_REG_R12
	R13    = Reg(111) // UC_X86_REG_R13
	R14    = Reg(112) // UC_X86_REG_R14
	R15    = Reg(113) // UC_X86_REG_R15
	RIP    = Reg(41)  // UC_X86_REG_RIP
	RFLAGS = Reg(253) // UC_X86_REG_RFLAGS
	// FSBase and GSBase: the kernel reaches per-cpu data through gs.
	FSBase = Reg(250) // UC_X86_REG_FS_BASE
	GSBase = Reg(251) // UC_X86_REG_GS_BASE
)

// X86GPRs lists the 16 general-purpose registers in hardware encoding order
// (rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8..r15), so X86GPRs[n] is the
// register an instruction's ModRM/REX number n names.
var X86GPRs = [16]Reg{RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI,
	R8, R9, R10, R11, R12, R13, R14, R15}
