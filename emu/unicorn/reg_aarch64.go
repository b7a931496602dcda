package unicorn

// arm64 registers. X0..X28 are contiguous in Unicorn's enum but X29, X30, SP
// and PC are not; use X(n) or ARM64GPRs rather than arithmetic.
const (
	X0   = Reg(199) // UC_ARM64_REG_X0
	X1   = Reg(200) // UC_ARM64_REG_X1
	X2   = Reg(201) // UC_ARM64_REG_X2
	X3   = Reg(202) // UC_ARM64_REG_X3
	X4   = Reg(203) // UC_ARM64_REG_X4
	X5   = Reg(204) // UC_ARM64_REG_X5
	X6   = Reg(205) // UC_ARM64_REG_X6
	X7   = Reg(206) // UC_ARM64_REG_X7
	X8   = Reg(207) // UC_ARM64_REG_X8
	X9   = Reg(208) // UC_ARM64_REG_X9
	X10  = Reg(209) // UC_ARM64_REG_X10
	X11  = Reg(210) // UC_ARM64_REG_X11
	X12  = Reg(211) // UC_ARM64_REG_X12
	X13  = Reg(212) // UC_ARM64_REG_X13
	X14  = Reg(213) // UC_ARM64_REG_X14
	X15  = Reg(214) // UC_ARM64_REG_X15
	X16  = Reg(215) // UC_ARM64_REG_X16
	X17  = Reg(216) // UC_ARM64_REG_X17
	X18  = Reg(217) // UC_ARM64_REG_X18
	X19  = Reg(218) // UC_ARM64_REG_X19
	X20  = Reg(219) // UC_ARM64_REG_X20
	X21  = Reg(220) // UC_ARM64_REG_X21
	X22  = Reg(221) // UC_ARM64_REG_X22
	X23  = Reg(222) // UC_ARM64_REG_X23
	X24  = Reg(223) // UC_ARM64_REG_X24
	X25  = Reg(224) // UC_ARM64_REG_X25
	X26  = Reg(225) // UC_ARM64_REG_X26
	X27  = Reg(226) // UC_ARM64_REG_X27
	X28  = Reg(227) // UC_ARM64_REG_X28
	X29  = Reg(1)   // UC_ARM64_REG_X29: fp
	X30  = Reg(2)   // UC_ARM64_REG_X30: lr
	SP   = Reg(4)   // UC_ARM64_REG_SP
	PC   = Reg(260) // UC_ARM64_REG_PC
	NZCV = Reg(3)   // UC_ARM64_REG_NZCV

	// PSTATE holds the exception level (bits 3:2) and DAIF; the default is
	// EL1, where the kernel's trampolines run.
	PSTATE = Reg(265) // UC_ARM64_REG_PSTATE
	// SPEL0 holds `current` in the arm64 kernel (mrs x, sp_el0).
	SPEL0 = Reg(270) // UC_ARM64_REG_SP_EL0
	// TPIDREL1 is the per-cpu offset register of the arm64 kernel.
	TPIDREL1 = Reg(264) // UC_ARM64_REG_TPIDR_EL1
	TPIDREL0 = Reg(262) // UC_ARM64_REG_TPIDR_EL0
	// CPACREL1 gates FP/SIMD (FPEN, bits 21:20).
	CPACREL1 = Reg(261) // UC_ARM64_REG_CPACR_EL1
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
