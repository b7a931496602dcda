package btfmodel

// ArchVerifier is what the verifier (kernel/bpf/verifier.c) asks of the architecture it
// runs on, beyond the trampoline JIT's limits (ArchLimits): Kconfig symbols the arch selects
// and the bpf_jit_supports_* answers of its JIT that change a verdict. Each arch's answers
// are stated once, in VerifierFor; the verifier model reads them from there.
type ArchVerifier struct {
	// StrictAlignment: the arch does not select CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS, so
	// bpf_check sets env->strict_alignment for every program (BPF_F_ANY_ALIGNMENT aside) and
	// check_ptr_alignment refuses a load or store through any pointer, or a scalar, whose
	// offset is not a multiple of the access size: "misaligned %saccess off %s+%d+%d size
	// %d". Elsewhere only stack accesses and atomics are checked.
	StrictAlignment bool
	// PrivateStack is bpf_jit_supports_private_stack: with the profile's
	// CapVerifierPrivStack, a tracing program's frame of 64 bytes or more gets a private
	// stack (bpf_enable_priv_stack) and leaves the combined stack depth.
	PrivateStack bool
	// Exceptions is bpf_jit_supports_exceptions: without it check_kfunc_call refuses
	// bpf_throw, "JIT does not support calling kfunc bpf_throw#%d" (ENOTSUPP).
	Exceptions bool
}

// VerifierFor returns what the verifier asks of arch a under profile k.
func VerifierFor(a Arch, k Kernel) ArchVerifier {
	switch a {
	case AMD64:
		// arch/x86/Kconfig selects HAVE_EFFICIENT_UNALIGNED_ACCESS;
		// arch/x86/net/bpf_jit_comp.c bpf_jit_supports_private_stack returns true and
		// bpf_jit_supports_exceptions does with CONFIG_UNWINDER_ORC (Debian's).
		return ArchVerifier{PrivateStack: true, Exceptions: true}
	case ARM64:
		// arch/arm64/Kconfig selects HAVE_EFFICIENT_UNALIGNED_ACCESS;
		// arch/arm64/net/bpf_jit_comp.c bpf_jit_supports_private_stack and
		// bpf_jit_supports_exceptions return true.
		return ArchVerifier{PrivateStack: true, Exceptions: true}
	case RISCV64:
		// arch/riscv/Kconfig selects HAVE_EFFICIENT_UNALIGNED_ACCESS only with
		// RISCV_EFFICIENT_UNALIGNED_ACCESS, which Debian's 6.12 and 7.2 kernels are not
		// built with (the captures: "misaligned access off (0x0; 0xffffffffffffffff)+0+0
		// size 4" where arm64 says "R1 invalid mem access 'scalar'").
		// arch/riscv/net/bpf_jit_comp64.c defines neither bpf_jit_supports_private_stack
		// nor bpf_jit_supports_exceptions: the weak defaults in kernel/bpf/core.c are false
		// (the kfunc probe: bpf_throw is refused from every program type on 6.12 and 7.2;
		// 7.2-riscv64 refuses the 4x512-byte frames of subprog.json that 7.2-arm64 and
		// 7.2-amd64 accept).
		return ArchVerifier{StrictAlignment: true}
	}
	return ArchVerifier{}
}
