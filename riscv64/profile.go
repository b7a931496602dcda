package riscv64

import (
	"fmt"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// Profile is what differs in the riscv64 trampoline JIT (__arch_prepare_bpf_trampoline in
// arch/riscv/net/bpf_jit_comp64.c) between the modelled kernels, Debian's 6.12.117 and
// 7.2.13.
type Profile struct {
	Kernel btfmodel.Kernel

	// RVC: CONFIG_RISCV_ISA_C, so the emit_* helpers pick compressed forms where the
	// operands fit (Debian builds every riscv64 kernel with it).
	RVC bool
	// RetvalA5First: the epilogue reloads a5 (BPF R0) before a0 ("riscv, bpf: Sign extend
	// struct ops return values properly", mainline 6.18, in 6.12.y from 6.12.53).
	RetvalA5First bool
	// FuncMeta: the count slot is func_meta, stored through emit_imm into t1 (7.x; the
	// same bytes as 6.12's emit_li for a plain count).
	FuncMeta bool
	// ProgSkipNop: each program block starts with a NOP that detaching patches into a jump
	// past the block, and the call-original block has no ip_after_call NOPs (Debian's
	// 7.2.13, captured: the per-program skip site arm64 and x86_64 7.2 have too).
	ProgSkipNop bool
	// Limits are the argument and target limits (btfmodel.LimitsFor): MAX_BPF_FUNC_ARGS,
	// the flags the JIT refuses (ORIG_STACK, SHARE_IPMODIFY), fsession
	// (bpf_jit_supports_fsession, 7.x), the link limit.
	Limits btfmodel.ArchLimits
}

// PageSize is the riscv64 PAGE_SIZE: a trampoline's sizing pass over it is -E2BIG.
const PageSize = 4096

// Debian's 6.12.117 has the 6.12.53 reload order; its 7.2.13 adds func_meta and the skip NOPs.
var profiles = map[btfmodel.Kernel]Profile{
	btfmodel.Kernel612: {Kernel: btfmodel.Kernel612, RVC: true, RetvalA5First: true},
	btfmodel.Kernel72:  {Kernel: btfmodel.Kernel72, RVC: true, RetvalA5First: true, FuncMeta: true, ProgSkipNop: true},
}

// ProfileFor returns the profile of a kernel. A kernel without a riscv64 trampoline JIT
// (before 6.3) is refused as its weak arch_prepare_bpf_trampoline refuses every link.
func ProfileFor(k btfmodel.Kernel) (Profile, error) {
	lim := btfmodel.LimitsFor(btfmodel.RISCV64, k)
	p, ok := profiles[k]
	if !ok && btfmodel.ProfileFor(k) != nil && !lim.Trampolines {
		return Profile{}, reject(jit.ENOTSUPP, fmt.Sprintf("the %s kernel has no riscv64 trampoline JIT (arch_prepare_bpf_trampoline arrived in 6.3)", k))
	}
	if !ok {
		return Profile{}, fmt.Errorf("riscv64: no profile for kernel %q", k)
	}
	p.Limits = lim
	return p, nil
}
