package unicorn

/*
#include <unicorn/unicorn.h>
*/
import "C"

// arm64 registers. X0..X28 are contiguous in Unicorn's enum but X29, X30, SP
// and PC are not; use X(n) or ARM64GPRs rather than arithmetic.
const (
	X0   = Reg(C.UC_ARM64_REG_X0)
	X1   = Reg(C.UC_ARM64_REG_X1)
	X2   = Reg(C.UC_ARM64_REG_X2)
	X3   = Reg(C.UC_ARM64_REG_X3)
	X4   = Reg(C.UC_ARM64_REG_X4)
	X5   = Reg(C.UC_ARM64_REG_X5)
	X6   = Reg(C.UC_ARM64_REG_X6)
	X7   = Reg(C.UC_ARM64_REG_X7)
	X8   = Reg(C.UC_ARM64_REG_X8)
	X9   = Reg(C.UC_ARM64_REG_X9)
	X10  = Reg(C.UC_ARM64_REG_X10)
	X11  = Reg(C.UC_ARM64_REG_X11)
	X12  = Reg(C.UC_ARM64_REG_X12)
	X13  = Reg(C.UC_ARM64_REG_X13)
	X14  = Reg(C.UC_ARM64_REG_X14)
	X15  = Reg(C.UC_ARM64_REG_X15)
	X16  = Reg(C.UC_ARM64_REG_X16)
	X17  = Reg(C.UC_ARM64_REG_X17)
	X18  = Reg(C.UC_ARM64_REG_X18)
	X19  = Reg(C.UC_ARM64_REG_X19)
	X20  = Reg(C.UC_ARM64_REG_X20)
	X21  = Reg(C.UC_ARM64_REG_X21)
	X22  = Reg(C.UC_ARM64_REG_X22)
	X23  = Reg(C.UC_ARM64_REG_X23)
	X24  = Reg(C.UC_ARM64_REG_X24)
	X25  = Reg(C.UC_ARM64_REG_X25)
	X26  = Reg(C.UC_ARM64_REG_X26)
	X27  = Reg(C.UC_ARM64_REG_X27)
	X28  = Reg(C.UC_ARM64_REG_X28)
	X29  = Reg(C.UC_ARM64_REG_X29) // fp
	X30  = Reg(C.UC_ARM64_REG_X30) // lr
	SP   = Reg(C.UC_ARM64_REG_SP)
	PC   = Reg(C.UC_ARM64_REG_PC)
	NZCV = Reg(C.UC_ARM64_REG_NZCV)

	// PSTATE holds the exception level (bits 3:2) and DAIF; the default is
	// EL1, where the kernel's trampolines run.
	PSTATE = Reg(C.UC_ARM64_REG_PSTATE)
	// SPEL0 holds `current` in the arm64 kernel (mrs x, sp_el0).
	SPEL0 = Reg(C.UC_ARM64_REG_SP_EL0)
	// TPIDREL1 is the per-cpu offset register of the arm64 kernel.
	TPIDREL1 = Reg(C.UC_ARM64_REG_TPIDR_EL1)
	TPIDREL0 = Reg(C.UC_ARM64_REG_TPIDR_EL0)
	// CPACREL1 gates FP/SIMD (FPEN, bits 21:20).
	CPACREL1 = Reg(C.UC_ARM64_REG_CPACR_EL1)
)

// ARM64GPRs lists x0..x30 by number: ARM64GPRs[n] is xn.
var ARM64GPRs = [31]Reg{X0, X1, X2, X3, X4, X5, X6, X7, X8, X9, X10, X11,
	X12, X13, X14, X15, X16, X17, X18, X19, X20, X21, X22, X23, X24, X25,
	X26, X27, X28, X29, X30}

// X returns register xn (0..30); n == 31 returns SP, as in load/store bases.
func X(n int) Reg {
	if n == 31 {
		return SP
	}
	return ARM64GPRs[n]
}
