// The file is not named reg_riscv64.go: that suffix would build it on riscv64 hosts only.

package unicorn

// riscv64 registers: UC_RISCV_REG_X0..X31 are contiguous (1..32), so XR(n)
// may index them; the ABI names below are the ones the kernel's JIT uses.
const (
	RVX0 = Reg(1)   // UC_RISCV_REG_X0: zero
	RVRA = Reg(2)   // UC_RISCV_REG_X1: ra
	RVSP = Reg(3)   // UC_RISCV_REG_X2: sp
	RVT0 = Reg(6)   // UC_RISCV_REG_X5: t0, the ftrace patch site's link register
	RVT1 = Reg(7)   // UC_RISCV_REG_X6: t1
	RVS0 = Reg(9)   // UC_RISCV_REG_X8: s0/fp
	RVA0 = Reg(11)  // UC_RISCV_REG_X10: a0
	RVPC = Reg(190) // UC_RISCV_REG_PC
)

// XR returns register xn (0..31).
func XR(n int) Reg { return RVX0 + Reg(n) }

// RISCV64ABINames are the psABI names of x0..x31.
var RISCV64ABINames = [32]string{"zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2",
	"s0", "s1", "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7",
	"s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11",
	"t3", "t4", "t5", "t6"}
