package btfmodel

import (
	"fmt"
	"strings"
)

// MaxTrampLinks is the largest BPF_MAX_TRAMP_LINKS of any modelled profile and architecture
// (kernel/bpf/trampoline.c): a bound for flag and array sizes. What one profile links is
// ArchLimits.MaxTrampLinks (Profile.TrampLinks); the next link fails with E2BIG.
const MaxTrampLinks = 38

// The BPF_TRAMP_F_* bits the attach rules name (include/linux/bpf.h; jit.Flags spells all).
const (
	TrampFlagOrigStack     uint32 = 1 << 5 // BPF_TRAMP_F_ORIG_STACK
	TrampFlagShareIPModify uint32 = 1 << 6 // BPF_TRAMP_F_SHARE_IPMODIFY
)

// ArchLimits are what an architecture's trampoline JIT accepts under one profile. The attach
// rules (archLimit) and the backends (amd64/, arm64/, riscv64/) all read them from here.
type ArchLimits struct {
	// ArgRegs is the number of argument registers (x86_64 rdi..r9, arm64 x0..x7, riscv64
	// a0..a7).
	ArgRegs int
	// MaxRegSlots is the most argument slots the trampoline takes (-ENOTSUPP above).
	MaxRegSlots int
	// MaxArgs is the most C arguments (nr_args) the trampoline takes, whatever their slots
	// (-ENOTSUPP above); 0 where the JIT counts slots only.
	MaxArgs int
	// StackArgs: slots past ArgRegs are copied from the caller's stack.
	StackArgs bool
	// StructArgs: struct-by-value arguments are accepted (else -ENOTSUPP for any).
	StructArgs bool
	// Trampolines: the arch implements arch_prepare_bpf_trampoline. Without it the weak
	// default (kernel/bpf/trampoline.c) fails every link with -ENOTSUPP, whatever the target.
	Trampolines bool
	// KernelFuncTargets: kernel functions can be traced; else only BPF-program targets.
	KernelFuncTargets bool
	// Fsession: bpf_jit_supports_fsession; without it an fsession program is refused at load.
	Fsession bool
	// RefusedFlags are the BPF_TRAMP_F_* bits arch_prepare_bpf_trampoline answers with
	// -ENOTSUPP instead of an image (0: none that trampjit states).
	RefusedFlags uint32
	// MaxTrampLinks is BPF_MAX_TRAMP_LINKS.
	MaxTrampLinks int
}

// MaxArgSlots is the most argument slots any modelled trampoline stores in its ctx: riscv64
// takes MAX_BPF_FUNC_ARGS arguments of up to 16 bytes each (x86_64 and arm64: MaxFuncArgs).
const MaxArgSlots = 2 * MaxFuncArgs

// riscv64ArgRegs is RV_MAX_REG_ARGS (arch/riscv/net/bpf_jit_comp64.c): a0-a7.
const riscv64ArgRegs = 8

// LimitsFor returns the limits of arch under profile k.
func LimitsFor(a Arch, k Kernel) ArchLimits {
	switch a {
	case AMD64:
		l := ArchLimits{ArgRegs: 6, MaxRegSlots: 6, StructArgs: true, Trampolines: true, KernelFuncTargets: true,
			Fsession: k.Has(CapFsession), MaxTrampLinks: trampLinks(a, k)}
		if k.Has(CapX86StackArgs) {
			l.StackArgs, l.MaxRegSlots = true, MaxFuncArgs
		}
		return l
	case ARM64:
		l := ArchLimits{ArgRegs: 8, MaxRegSlots: 8, StructArgs: k.Has(CapArm64StructArgs), Trampolines: true,
			KernelFuncTargets: k.Has(CapArm64DirectCalls), Fsession: k.Has(CapFsession), MaxTrampLinks: trampLinks(a, k)}
		if k.Has(CapArm64StackArgs) {
			l.StackArgs, l.MaxRegSlots = true, MaxFuncArgs
		}
		return l
	case RISCV64:
		// __arch_prepare_bpf_trampoline: ORIG_STACK and SHARE_IPMODIFY are -ENOTSUPP (a
		// BPF fexit cannot share a function with a livepatch); a struct is as many slots as
		// its size takes (arg_flags are not read).
		l := ArchLimits{ArgRegs: riscv64ArgRegs, MaxRegSlots: riscv64ArgRegs, StructArgs: true,
			Trampolines:       k.Has(CapRiscvTrampoline),
			KernelFuncTargets: k.Has(CapRiscvTrampoline) && k.Has(CapRiscvDirectCalls),
			Fsession:          k.Has(CapFsession) && k.Has(CapRiscvFsession),
			RefusedFlags:      TrampFlagOrigStack | TrampFlagShareIPModify,
			MaxTrampLinks:     trampLinks(a, k)}
		if k.Has(CapRiscvStackArgs) {
			// Only nr_args > MAX_BPF_FUNC_ARGS is refused; slots past a7 are copied from
			// the caller's stack.
			l.StackArgs, l.MaxArgs, l.MaxRegSlots = true, MaxFuncArgs, MaxArgSlots
		}
		return l
	}
	return ArchLimits{}
}

// RefusesFlags is arch_prepare_bpf_trampoline's answer to flags: the errno and why when one
// of them is a bit the arch's JIT does not build ("" when it builds them all).
func (l ArchLimits) RefusesFlags(a Arch, flags uint32) (errno, why string) {
	bad := flags & l.RefusedFlags
	if bad == 0 {
		return "", ""
	}
	var names []string
	if bad&TrampFlagOrigStack != 0 {
		names = append(names, "BPF_TRAMP_F_ORIG_STACK")
	}
	if bad&TrampFlagShareIPModify != 0 {
		names = append(names, "BPF_TRAMP_F_SHARE_IPMODIFY")
	}
	return "ENOTSUPP", fmt.Sprintf("the %s trampoline JIT refuses %s (arch_prepare_bpf_trampoline: -ENOTSUPP)", a, strings.Join(names, " and "))
}

func trampLinks(a Arch, k Kernel) int {
	if p := ProfileFor(k); p != nil {
		return p.TrampLinks[a]
	}
	return 0
}
