package btfmodel

// MaxTrampLinks is the largest BPF_MAX_TRAMP_LINKS of any modelled profile and architecture
// (kernel/bpf/trampoline.c): a bound for flag and array sizes. What one profile links is
// ArchLimits.MaxTrampLinks (Profile.TrampLinks); the next link fails with E2BIG.
const MaxTrampLinks = 38

// ArchLimits are what an architecture's trampoline JIT accepts under one profile. The attach
// rules (archLimit) and the backends (amd64/, arm64/) both read them from here.
type ArchLimits struct {
	// ArgRegs is the number of argument registers (x86_64 rdi..r9, arm64 x0..x7).
	ArgRegs int
	// MaxRegSlots is the most argument slots the trampoline takes (-ENOTSUPP above).
	MaxRegSlots int
	// StackArgs: slots past ArgRegs are copied from the caller's stack.
	StackArgs bool
	// StructArgs: struct-by-value arguments are accepted (else -ENOTSUPP for any).
	StructArgs bool
	// KernelFuncTargets: kernel functions can be traced; else only BPF-program targets.
	KernelFuncTargets bool
	// MaxTrampLinks is BPF_MAX_TRAMP_LINKS.
	MaxTrampLinks int
}

// LimitsFor returns the limits of arch under profile k.
func LimitsFor(a Arch, k Kernel) ArchLimits {
	switch a {
	case AMD64:
		l := ArchLimits{ArgRegs: 6, MaxRegSlots: 6, StructArgs: true, KernelFuncTargets: true, MaxTrampLinks: trampLinks(a, k)}
		if k.Has(CapX86StackArgs) {
			l.StackArgs, l.MaxRegSlots = true, MaxFuncArgs
		}
		return l
	case ARM64:
		l := ArchLimits{ArgRegs: 8, MaxRegSlots: 8, StructArgs: k.Has(CapArm64StructArgs),
			KernelFuncTargets: k.Has(CapArm64DirectCalls), MaxTrampLinks: trampLinks(a, k)}
		if k.Has(CapArm64StackArgs) {
			l.StackArgs, l.MaxRegSlots = true, MaxFuncArgs
		}
		return l
	}
	return ArchLimits{}
}

func trampLinks(a Arch, k Kernel) int {
	if p := ProfileFor(k); p != nil {
		return p.TrampLinks[a]
	}
	return 0
}
