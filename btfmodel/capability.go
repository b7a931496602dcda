package btfmodel

// Capability names one version-dependent behaviour of the kernel. Rules ask a profile for a
// capability (Kernel.Has), never for a version, so each difference between kernels is named
// once, here, with when it arrived.
type Capability string

// CapInfo is what is known about a capability.
type CapInfo struct {
	Cap Capability
	// Since is the upstream release that brought it. When After is set the exact release is
	// not established here: it arrived after After and by Since (Since zero: not bounded).
	Since, After Version
	// Config is the CONFIG_ option that decides it in a given build (Debian's, for the
	// profiles), when a version alone does not.
	Config string
	// Backport names the modelled builds that have it before Since through stable backports.
	Backport []Kernel
	Doc      string
}

func v(major, minor int) Version { return Version{major, minor, 0} }

// Attach rules and the function model (kernel/bpf/verifier.c, kernel/bpf/btf.c).
const (
	CapSignedArgFlag     Capability = "signed-arg-flag"
	CapBTFIDDenyRCULock  Capability = "btf-id-deny-rcu-lock"
	CapNoreturnDeny      Capability = "noreturn-deny"
	CapNoreturnMsgNamed  Capability = "noreturn-deny-msg-named"
	CapBTFIDDenyMsg      Capability = "btf-id-deny-msg"
	CapUnionArgs         Capability = "union-args"
	CapSyscallPrefix     Capability = "syscall-prefix-modifiable"
	CapFmodRetIDSet      Capability = "fmod-ret-id-set"
	CapLSMDisabledHooks  Capability = "lsm-disabled-hooks"
	CapX86StackArgs      Capability = "x86-stack-args"
	CapX86CleanStack     Capability = "x86-clean-stack-garbage"
	CapX86KernelIBT      Capability = "x86-kernel-ibt"
	CapX86JmpMode        Capability = "x86-jmp-mode"
	CapX86ProgNop        Capability = "x86-prog-nop"
	CapX86FineIBTEAX     Capability = "x86-fineibt-eax"
	CapX86IndirectArgs   Capability = "x86-indirect-stack-args"
	CapArm64DirectCalls  Capability = "arm64-ftrace-direct-calls"
	CapArm64StructArgs   Capability = "arm64-struct-args"
	CapArm64StackArgs    Capability = "arm64-stack-args"
	CapArm64KCFI         Capability = "arm64-kcfi"
	CapHelperCgrpStorage Capability = "helper-cgrp-storage"
	CapFsession          Capability = "fsession"
	CapKfuncImplicitArgs Capability = "kfunc-implicit-args"
	CapWideReturnDeny    Capability = "wide-return-deny"
	// The riscv64 trampoline JIT (arch/riscv/net/bpf_jit_comp64.c) and the ftrace it attaches
	// through (arch/riscv/kernel/ftrace.c).
	CapRiscvTrampoline  Capability = "riscv64-trampoline"
	CapRiscvDirectCalls Capability = "riscv64-ftrace-direct-calls"
	CapRiscvStackArgs   Capability = "riscv64-stack-args"
	CapRiscvFsession    Capability = "riscv64-fsession"
	CapRiscvCallOps     Capability = "riscv64-ftrace-call-ops"
	CapRiscvKCFI        Capability = "riscv64-kcfi"
	// struct_ops images (kernel/bpf/bpf_struct_ops.c).
	CapStructOpsIndirect Capability = "struct-ops-indirect"
	// sched_ext's dispatch asks for a private stack.
	CapStructOpsSchedExtPrivStack Capability = "struct-ops-sched-ext-priv-stack"
)

// struct_ops programs.
const (
	CapVerifierStructOpsSleep Capability = "verifier-struct-ops-sleepable"
	CapVerifierOpsWriteOnly   Capability = "verifier-struct-access-write-only"
	CapVerifierOpsWriteMsg    Capability = "verifier-struct-ops-write-msg"
	CapHelperBasePidTgid      Capability = "helper-base-pid-tgid"
	CapHelperBaseTracing      Capability = "helper-base-tracing"
	CapVerifierTCPCAWriteMore Capability = "verifier-tcp-ca-write-more"
)

// The verifier's instruction walk (kernel/bpf/verifier.c).
const (
	CapVerifierCPUv4            Capability = "verifier-cpu-v4"
	CapVerifierALURangeAnySrc   Capability = "verifier-alu-range-any-src"
	CapVerifierBoundsCross      Capability = "verifier-bounds-cross-32-64"
	CapVerifierMovNoConstID     Capability = "verifier-mov-no-const-id"
	CapVerifierMov32ID          Capability = "verifier-mov32-id"
	CapVerifierBTFNeedsGPL      Capability = "verifier-btf-access-needs-gpl"
	CapVerifierTrustedPtr       Capability = "verifier-ptr-trusted"
	CapVerifierRCUPtr           Capability = "verifier-mem-rcu"
	CapVerifierUnionUntrusted   Capability = "verifier-union-untrusted"
	CapVerifierIntArrayScalar   Capability = "verifier-int-array-scalar"
	CapVerifierSparsePruneMarks Capability = "verifier-sparse-prune-marks"
	CapVerifierLSMRetRange      Capability = "verifier-lsm-ret-range"
	CapVerifierRetvalRange      Capability = "verifier-retval-range"
	CapVerifierCtxArgSize8      Capability = "verifier-ctx-arg-size-8"
	CapVerifierNullableArgs     Capability = "verifier-nullable-args"
	CapVerifierLSMTrustedArgs   Capability = "verifier-lsm-trusted-args"
	CapVerifierRawTPTrustedArgs Capability = "verifier-raw-tp-trusted-args"
	CapVerifierRawTPNullArgs    Capability = "verifier-raw-tp-null-args"
	CapHelperRawTPCookie        Capability = "helper-raw-tp-cookie"
	CapHelperRawTPFuncArg       Capability = "helper-raw-tp-func-arg"
	CapVerifierHelperMightSleep Capability = "verifier-helper-might-sleep"
	CapVerifierHelperProtoMsg   Capability = "verifier-helper-proto-msg"
	// Helpers and maps of tracing tools (verifier/helper*.go).
	CapVerifierBTFRecord         Capability = "verifier-btf-record"
	CapVerifierResourceLeakMsg   Capability = "verifier-resource-leak-msg"
	CapVerifierReleaseOffMsg     Capability = "verifier-release-off-msg"
	CapHelperStorageOwnerOrNull  Capability = "helper-storage-owner-or-null"
	CapHelperDPathUninitBuf      Capability = "helper-d-path-uninit-buf"
	CapVerifierConstKeyNotNull   Capability = "verifier-const-key-not-null"
	CapVerifierSleepableSpinLock Capability = "verifier-sleepable-spin-lock"
	CapHelperGetStackUninitBuf   Capability = "helper-get-stack-uninit-buf"
	CapVerifierMemSizeRaw        Capability = "verifier-mem-size-raw"
	CapVerifierMapArgAsMem       Capability = "verifier-map-arg-as-mem"
	CapVerifierRegNotNullMem     Capability = "verifier-reg-not-null-mem"
	CapVerifierRangeVsRange      Capability = "verifier-range-vs-range"
	CapVerifierSTIntoCtx         Capability = "verifier-st-into-ctx"
	CapVerifierExitR0Precise     Capability = "verifier-exit-r0-precise"
	CapVerifierPruneScalarIDs    Capability = "verifier-prune-scalar-ids"
	CapVerifierStackReadAll      Capability = "verifier-stack-read-all"
	CapVerifierSpillAnyScalar    Capability = "verifier-spill-any-scalar"
	CapVerifierSTImmSpill        Capability = "verifier-st-imm-spill"
	// CapVerifierSTImmSpillNonZero: BPF_ST of a non-zero immediate to an aligned stack slot
	// spills a constant; a zero one stays STACK_ZERO (check_stack_write_fixed_off).
	CapVerifierSTImmSpillNonZero  Capability = "verifier-st-imm-spill-nonzero"
	CapVerifierStackZeroKept      Capability = "verifier-stack-zero-kept"
	CapVerifierNarrowFill         Capability = "verifier-narrow-fill"
	CapVerifierAttachAfterCFG     Capability = "verifier-attach-after-cfg"
	CapVerifierNoMainArgMatch     Capability = "verifier-no-main-arg-match"
	CapVerifierCtxFixedOff        Capability = "verifier-ctx-fixed-off"
	CapVerifierNoRegOff           Capability = "verifier-no-reg-off"
	CapVerifierSleepableHelperMsg Capability = "verifier-sleepable-helper-msg"
	CapVerifierHelperStackRW      Capability = "verifier-helper-stack-rw"
	CapVerifierCtxAsMem           Capability = "verifier-ctx-as-mem"
	CapVerifierNegEndTrack        Capability = "verifier-neg-end-track"
	CapVerifierDivModTrack        Capability = "verifier-div-mod-track"
	CapVerifierConstVoidPtrArg    Capability = "verifier-const-void-ptr-arg"
	CapVerifierSameRegBranch      Capability = "verifier-same-reg-branch"
	CapVerifierNonStructPtrMem    Capability = "verifier-non-struct-ptr-mem"
	CapVerifierTnumSignedNeedSign Capability = "verifier-tnum-signed-need-sign"
	CapLogRegTypeAllPrefixes      Capability = "log-reg-type-all-prefixes"
	// bpf-to-bpf calls, global functions and callbacks.
	CapVerifierGlobalMainFirst  Capability = "verifier-global-main-first"
	CapVerifierCallbackIterate  Capability = "verifier-callback-iterate"
	CapVerifierCFGPerSubprog    Capability = "verifier-cfg-per-subprog"
	CapVerifierRecursiveCallMsg Capability = "verifier-recursive-call-msg"
	CapVerifierStackRound16     Capability = "verifier-stack-round16"
	CapVerifierPrivStack        Capability = "verifier-priv-stack"
	CapVerifierGlobalVoidReturn Capability = "verifier-global-void-return"
	CapVerifierMemArgNoCtx      Capability = "verifier-mem-arg-no-ctx"
	CapVerifierCallFrames16     Capability = "verifier-call-frames-16"
	CapLogLinfoFileLine         Capability = "log-linfo-file-line"
	CapVerifierRefsInState      Capability = "verifier-refs-in-state"
	CapLogStateCompact          Capability = "log-state-compact"
	CapLogConstVarOff           Capability = "log-const-var-off"
	CapLogVarOffStackOff        Capability = "log-var-off-stack-off"
	CapLogInfiniteLoopStates    Capability = "log-infinite-loop-states"
	// CapVerifierStaticLiveness: register liveness is computed before the walk on a CFG
	// whose constant branches were folded (const_fold.c, compute_live_registers); the
	// REG_LIVE_* marks are gone.
	CapVerifierStaticLiveness Capability = "verifier-static-liveness"
	// CapVerifierDynptrOverwrite: a dynptr constructor may overwrite an unreferenced dynptr
	// (6.1: "Dynptr has to be an uninitialized dynptr"; a referenced one: "cannot overwrite
	// referenced dynptr").
	CapVerifierDynptrOverwrite Capability = "verifier-dynptr-overwrite"
	// CapVerifierDynptrReleaseMsg: a dynptr passed to a release helper is checked as any
	// dynptr argument (6.1, 6.12: "arg %d is an unacquired reference" first).
	CapVerifierDynptrReleaseMsg Capability = "verifier-dynptr-release-msg"
	// kfunc calls, references and RCU regions (verifier/kfunc*.go, refs.go).
	// CapVerifierKfuncMeta: fetch_kfunc_meta and check_kfunc_args (6.1:
	// btf_check_kfunc_arg_match, no trusted or RCU arguments).
	CapVerifierKfuncMeta Capability = "verifier-kfunc-meta"
	// CapVerifierKfuncRegMsg: kfunc argument messages name the register ("R1") rather than
	// the argument ("arg#0", "args#0", "arg0").
	CapVerifierKfuncRegMsg Capability = "verifier-kfunc-reg-msg"
	// CapVerifierReleaseArgRef: a release kfunc's argument without a reference is refused
	// at the argument ("release kfunc %s expects referenced PTR_TO_BTF_ID passed to R%d").
	CapVerifierReleaseArgRef Capability = "verifier-release-arg-ref"
	// CapVerifierKfuncRetTrusted: a struct pointer a kfunc returns is PTR_TRUSTED.
	CapVerifierKfuncRetTrusted Capability = "verifier-kfunc-ret-trusted"
	// CapVerifierRCUProtectedCall: a KF_RCU_PROTECTED kfunc outside an RCU read section is
	// refused at its call ("kernel func %s requires RCU critical section protection");
	// 6.12 marks the iterator untrusted and refuses its next/destroy ("expected an RCU CS
	// when using %s", EPROTO).
	CapVerifierRCUProtectedCall Capability = "verifier-rcu-protected-call"
	// CapVerifierRdonlyCastVoid: bpf_rdonly_cast also casts to void (read-only untrusted
	// memory); its refusal says "must be of a struct or void".
	CapVerifierRdonlyCastVoid Capability = "verifier-rdonly-cast-void"
	// CapVerifierRCUNesting: bpf_rcu_read_lock regions nest (active_rcu_locks counts).
	CapVerifierRCUNesting Capability = "verifier-rcu-nesting"
	// CapVerifierKfuncTrustedDefault: every kfunc's pointer arguments are trusted, as
	// KF_TRUSTED_ARGS once said (a NULL one is "Possibly NULL pointer passed to trusted
	// R%d" unless __nullable/__opt).
	CapVerifierKfuncTrustedDefault Capability = "verifier-kfunc-trusted-default"
	// CapVerifierStaticArgMsg: a call of a static subprogram logs btf_check_func_arg_match's
	// "R%d is not a scalar" before the "caller:" dump.
	CapVerifierStaticArgMsg Capability = "verifier-static-arg-msg"
)

var after61by612 = struct{ after, since Version }{v(6, 1), v(6, 12)}

// bounded is a capability whose release is known only to lie after 6.1 and by 6.12: both
// modelled kernels were checked, the commit was not pinned.
func bounded(c Capability, doc string) CapInfo {
	return CapInfo{Cap: c, After: after61by612.after, Since: after61by612.since, Doc: doc}
}

// Capabilities is every capability, with what is known about it.
var Capabilities = []CapInfo{
	{Cap: CapSignedArgFlag, Since: v(6, 3), Doc: "btf_func_model carries BTF_FMODEL_SIGNED_ARG for signed integer arguments"},
	bounded(CapBTFIDDenyRCULock, "btf_id_deny also lists __rcu_read_lock and __rcu_read_unlock"),
	{Cap: CapNoreturnDeny, After: v(6, 12), Backport: []Kernel{Kernel612},
		Doc: "fexit and fmod_ret are refused on noreturn_deny's __noreturn functions (upstream 2025; Debian 6.12.117 has it from 6.12.y stable)"},
	{Cap: CapNoreturnMsgNamed, Since: v(7, 0),
		Doc: "the __noreturn refusal names the function and covers fsession: \"Attaching fexit/fsession/fmod_ret to __noreturn function 'F' is rejected.\""},
	{Cap: CapBTFIDDenyMsg, After: v(6, 12), Since: v(7, 2),
		Doc: "btf_id_deny refusals log \"Attaching tracing programs to function 'F' is rejected.\" (6.12: EINVAL without a message)"},
	{Cap: CapUnionArgs, After: v(6, 12), Since: v(7, 2),
		Doc: "btf_distill_func_proto takes unions of up to 16 bytes by value as arguments, like structs (a union return is still refused)"},
	{Cap: CapSyscallPrefix, After: v(6, 12), Since: v(7, 2),
		Doc: "built without CONFIG_FUNCTION_ERROR_INJECTION, check_attach_modify_return and check_attach_sleepable accept functions with the arch's syscall prefix (has_arch_syscall_prefix: __x64_, __arm64_) instead of an error-injection list"},
	{Cap: CapFmodRetIDSet, After: v(6, 1), Since: v(6, 3), Doc: "BTF_KFUNC_HOOK_FMODRET id sets admit fmod_ret (and, with KF_SLEEPABLE, sleepable programs)"},
	bounded(CapLSMDisabledHooks, "bpf_lsm_disabled_hooks refuses LSM hooks whose return convention a program cannot honour"),
	bounded(CapX86StackArgs, "the x86_64 trampoline copies stack-passed arguments, up to MAX_BPF_FUNC_ARGS slots (6.1: six registers)"),
	bounded(CapX86CleanStack, "x86_64 clean_stack_garbage zeroes the upper half of a lone stack slot"),
	{Cap: CapX86KernelIBT, Since: v(5, 18), Config: "CONFIG_X86_KERNEL_IBT",
		Doc: "traced x86_64 functions start with ENDBR (Debian builds 6.12 with it, 6.1 without)"},
	{Cap: CapX86JmpMode, Since: v(6, 19), Config: "CONFIG_DYNAMIC_FTRACE_WITH_JMP",
		Doc: "x86_64 enters a trampoline that calls the original by jmp: no SKIP_FRAME, no return address to drop, stack arguments 8 bytes closer"},
	{Cap: CapX86ProgNop, After: v(6, 12), Since: v(7, 2),
		Doc: "each x86_64 program block starts with a NOP5 (a per-program skip site) and the ip_after_call NOP5 after the original call is gone"},
	{Cap: CapX86FineIBTEAX, After: v(6, 12), Since: v(7, 2), Config: "CONFIG_FINEIBT (cfi=fineibt at boot)",
		Doc: "the x86_64 FineIBT preamble of a struct_ops image (emit_fineibt) checks the hash in eax, not r10d: endbr64, sub eax,hash, cs jne.d32 +3 into the UDB byte of the ENDBR poison, which is nopl -42(%rax) (0f 1f 40 d6) instead of 6.12's nopw (%rax); the eax/UDB form came with 'x86,ibt: Use UDB instead of 0xEA' (Aug 2025, about 6.18; 6.15-6.17 had sub r10d, jne.d8 .-7, nop3), the jne.d32 form is the one of the 2026 sources modelled for 7.2. Debian builds with GCC: no FineIBT"},
	{Cap: CapX86IndirectArgs, After: v(6, 12), Since: v(7, 2),
		Doc: "the x86_64 trampoline reads the stack-passed arguments of a struct_ops member (BPF_TRAMP_F_INDIRECT: called, not entered from a patched call) 16 bytes above rbp, like jmp mode (save_args' stack_args_off); 6.12 reads them at rbp+24, 8 bytes too high. Only members with more than six argument slots show it"},
	{Cap: CapArm64DirectCalls, Since: v(6, 4), Doc: "arm64 has ftrace direct calls: trampolines attach to kernel functions, not only to BPF programs"},
	{Cap: CapArm64StructArgs, Since: v(6, 5), Doc: "the arm64 trampoline accepts struct-by-value arguments and counts register slots"},
	{Cap: CapArm64StackArgs, After: v(6, 12), Since: v(7, 2), Doc: "the arm64 trampoline copies stack-passed arguments, up to MAX_BPF_FUNC_ARGS slots (6.12: eight registers; 7.2 attaches 9 to 12 and stack-passed structs)"},
	{Cap: CapArm64KCFI, Since: v(6, 18), Config: "CONFIG_CFI_CLANG (CONFIG_CFI from 6.18)",
		Doc: "the arm64 JIT emits kCFI type hashes ('arm64/cfi,bpf: Support kCFI + BPF on arm64', emit_kcfi): with kCFI on, an INDIRECT (struct_ops) image starts with the 4-byte hash of the member's CFI stub, before bti jc, and the ops table points past it (cfi_get_offset() = 4); Debian builds arm64 with GCC, without kCFI"},
	{Cap: CapRiscvTrampoline, Since: v(6, 3),
		Doc: "riscv64 has arch_prepare_bpf_trampoline ('riscv, bpf: Add bpf trampoline support for RV64', 49b5e77ae3e2); before, the weak default in kernel/bpf/trampoline.c fails every link, to a kernel function or a BPF program, with -ENOTSUPP"},
	{Cap: CapRiscvDirectCalls, Since: v(6, 8),
		Doc: "riscv64 has ftrace direct calls ('riscv: ftrace: Add DYNAMIC_FTRACE_WITH_DIRECT_CALLS support', 196c79f19a92): trampolines attach to kernel functions, not only to BPF programs (Debian builds 6.12 and 7.2 with CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS)"},
	{Cap: CapRiscvStackArgs, Since: v(6, 11),
		Doc: "the riscv64 trampoline copies stack-passed argument slots and refuses only nr_args > MAX_BPF_FUNC_ARGS ('riscv, bpf: Add 12-argument support for RV64 bpf trampoline', 6801b0aef79d); before, more than eight slots (a0-a7, a struct counted by its size) were -ENOTSUPP"},
	{Cap: CapRiscvFsession, After: v(6, 12), Since: v(7, 2),
		Doc: "the riscv64 JIT emits fsession programs: bpf_jit_supports_fsession is true ('bpf, riscv: add fsession support for trampolines', 2277c14bc90b, bpf-next February 2026); without it bpf_check_attach_target refuses an fsession load: 'JIT does not support fsession', EOPNOTSUPP"},
	{Cap: CapRiscvCallOps, After: v(6, 12), Since: v(7, 2),
		Doc: "riscv64 ftrace has DYNAMIC_FTRACE_WITH_CALL_OPS ('riscv: Implement HAVE_DYNAMIC_FTRACE_WITH_CALL_OPS', c217157bcd1d): a kernel function's patch site calls ftrace_caller, which jumps to the trampoline through the ftrace_ops pointer stored before the function; 6.12's calls the trampoline itself (the captures find 7.2's images through that pointer, 6.12's by decoding the site). The trampoline is entered the same way either way"},
	{Cap: CapRiscvKCFI, Since: v(6, 10), Config: "CONFIG_CFI_CLANG (CONFIG_CFI from 6.18)",
		Doc: "the riscv64 JIT emits kCFI type hashes ('riscv64/cfi,bpf: Support kCFI + BPF on riscv64', emit_kcfi): with kCFI on, a struct_ops image starts with the 4-byte hash of the member's CFI stub and the ops table points past it (cfi_get_offset() = 4); Debian builds riscv64 with GCC, without kCFI"},
	{Cap: CapStructOpsIndirect, Since: v(6, 8),
		Doc: "struct_ops images are built with BPF_TRAMP_F_INDIRECT ('x86/cfi,bpf: Fix bpf_struct_ops CFI'): bpf_struct_ops_prepare_trampoline starts from it and adds RET_FENTRY_RET for a non-void member; 6.1 passes RET_FENTRY_RET alone, or 0"},
	{Cap: CapStructOpsSchedExtPrivStack, After: v(6, 12), Since: v(7, 2),
		Doc: "sched_ext_ops.dispatch (and sched_ext_ops_cid's) programs ask for a private stack (priv_stack_requested, for the sub-scheduler dispatch recursion); a JIT without bpf_jit_supports_private_stack refuses them at load: 'Private stack not supported by jit', EACCES (captured on riscv64 7.2; Debian 6.12 has no sched_ext, so the release it arrived in is not pinned)"},
	{Cap: CapKfuncImplicitArgs, After: v(6, 12), Since: v(7, 2), Doc: "kfuncs with implicit arguments (KF_IMPLICIT_ARGS): BTF has fn without the trailing struct bpf_prog_aux * and fn_impl with it; a trampoline on fn is modelled with fn_impl's prototype (captured: 7.2 arm64 fexit on scx_bpf_cidperf_cap has two argument slots; found by kernel fuzz)"},
	{Cap: CapWideReturnDeny, After: v(6, 12), Since: v(7, 2),
		Doc: "fexit, fsession and fmod_ret are refused at load with EOPNOTSUPP on a function returning more than 8 bytes: \"Attach to function F with a >8 byte return value is not supported for this attach type\" (captured on 7.2; the commit is not pinned here)"},
	{Cap: CapFsession, Since: v(7, 0), Doc: "BPF_TRACE_FSESSION (attach type 58): one program as both fentry and fexit, with a session cookie"},
	{Cap: CapHelperCgrpStorage, Since: v(6, 2), Doc: "bpf_cgrp_storage_get/delete exist: __BPF_FUNC_MAX_ID is 212, not 210"},

	{Cap: CapVerifierCPUv4, Since: v(6, 6), Doc: "cpu v4 encodings (sdiv/smod, movsx, 64-bit bswap, BPF_MEMSX) are not reserved fields"},
	bounded(CapVerifierALURangeAnySrc, "adjust_scalar_min_max_vals tracks |, ^, * with any scalar source (is_safe_to_compute_dst_reg_range)"),
	{Cap: CapVerifierBoundsCross, Since: v(6, 7), Doc: "reg_bounds_sync deduces 32-bit bounds from 64-bit ones and back"},
	bounded(CapVerifierMovNoConstID, "assign_scalar_id_before_mov gives no id to a constant copied by a 64-bit mov"),
	bounded(CapVerifierMov32ID, "a 32-bit mov of a value that fits in 32 bits links the copy to its source"),
	bounded(CapVerifierBTFNeedsGPL, "PTR_TO_BTF_ID loads need a GPL-compatible license"),
	{Cap: CapVerifierTrustedPtr, After: v(6, 1), Since: v(6, 3), Doc: "PTR_TRUSTED: trusted BTF pointers (current task, trusted arguments) pass as memory and are not null"},
	{Cap: CapVerifierRCUPtr, After: v(6, 1), Since: v(6, 3), Doc: "MEM_RCU: __rcu tagged fields load as RCU pointers"},
	bounded(CapVerifierUnionUntrusted, "btf_struct_walk marks a pointer loaded through a union of more than one member untrusted"),
	bounded(CapVerifierIntArrayScalar, "btf_struct_walk reads into an int array member as a scalar"),
	{Cap: CapVerifierSparsePruneMarks, Since: v(6, 3), Doc: "no prune point after a goto (jumps and their targets still are)"},
	bounded(CapVerifierLSMRetRange, "LSM programs' return value and bpf_lsm retval argument are checked against the hook's range"),
	bounded(CapVerifierRetvalRange, "check_return_code compares R0's range with the allowed range (6.1: tnum_in)"),
	bounded(CapVerifierCtxArgSize8, "a ctx load of a pointer argument must be 8 bytes"),
	{Cap: CapVerifierNullableArgs, After: v(6, 1), Since: v(6, 10), Doc: "a __nullable parameter loads as PTR_MAYBE_NULL"},
	bounded(CapVerifierLSMTrustedArgs, "LSM hook pointer arguments are PTR_TRUSTED"),
	{Cap: CapVerifierRawTPTrustedArgs, Since: v(6, 2), Doc: "prog_args_trusted: tp_btf (BPF_TRACE_RAW_TP) pointer arguments are PTR_TRUSTED"},
	{Cap: CapVerifierRawTPNullArgs, Since: v(6, 14), Backport: []Kernel{Kernel612},
		Doc: "btf_ctx_access marks the tp_btf arguments raw_tp_null_args lists PTR_MAYBE_NULL (or scalar, for ERR_PTR ones); Debian 6.12.117 has it from 6.12.y stable"},
	{Cap: CapHelperRawTPCookie, Since: v(6, 10), Doc: "bpf_get_attach_cookie is offered to tp_btf programs (BPF cookie for raw tracepoints)"},
	{Cap: CapHelperRawTPFuncArg, After: v(6, 12), Since: v(7, 2),
		Doc: "bpf_get_func_arg and bpf_get_func_arg_cnt are offered to tp_btf programs (the tracepoint's arguments, __data not counted)"},
	{Cap: CapVerifierHelperMightSleep, Since: v(6, 2), Doc: "sleepable helpers are offered to every program and refused in non-sleepable ones (might_sleep)"},
	bounded(CapVerifierHelperProtoMsg, "an unavailable helper is refused as 'program of this type cannot use helper' (6.1: 'unknown func')"),
	bounded(CapVerifierBTFRecord, "map values' special fields are a btf_record: bpf_spin_lock's argument list is 'map_value, ptr_', a wrong offset is '... that is at %d', a value without a lock 'has no valid bpf_spin_lock'"),
	{Cap: CapVerifierResourceLeakMsg, After: v(6, 12), Since: v(7, 2), Doc: "check_resource_leak: BPF_EXIT with a lock held is 'BPF_EXIT instruction in main prog cannot be used inside bpf_spin_lock-ed region', with a reference it ends in '... would lead to reference leak' (6.12: 'bpf_spin_unlock is missing', the 'Unreleased reference' line)"},
	bounded(CapVerifierReleaseOffMsg, "a released pointer with an offset is 'R%d must have zero offset when passed to release func or trusted arg to kfunc' (6.1: 'dereference of modified alloc_mem ptr')"),
	bounded(CapHelperStorageOwnerOrNull, "the local storage helpers take their owner as ARG_PTR_TO_BTF_ID_OR_NULL: NULL passes (6.1: 'R2 type=scalar expected=ptr_')"),
	{Cap: CapVerifierConstKeyNotNull, After: v(6, 12), Since: v(7, 2), Doc: "bpf_map_lookup_elem on an array or percpu array with a constant key below max_entries returns a map value that is not NULL (can_elide_value_nullness, get_constant_map_key)"},
	bounded(CapVerifierSleepableSpinLock, "sleepable programs may use maps whose value holds a bpf_spin_lock (6.1: 'sleepable progs cannot use bpf_spin_lock yet')"),
	bounded(CapHelperGetStackUninitBuf, "bpf_get_stack (the tracing/raw_tp prototype) and bpf_snprintf_btf write their buffer (6.1: ARG_PTR_TO_MEM, so it must be initialised)"),
	bounded(CapHelperDPathUninitBuf, "bpf_d_path's buffer is written, not read (6.1: ARG_PTR_TO_MEM, so it must be initialised)"),
	bounded(CapVerifierMemSizeRaw, "check_mem_size_reg keeps raw mode for a variable size and checks a zero size itself"),
	bounded(CapVerifierMapArgAsMem, "map key and value arguments are checked as memory (ringbuf_mem, trusted_ptr_ allowed)"),
	bounded(CapVerifierRegNotNullMem, "reg_not_null counts PTR_TO_MEM and trusted BTF pointers as not null"),
	bounded(CapVerifierRangeVsRange, "is_branch_taken and reg_set_min_max compare ranges with ranges, not only with constants"),
	{Cap: CapVerifierSTIntoCtx, Since: v(6, 3), Doc: "BPF_ST may store into ctx"},
	{Cap: CapVerifierExitR0Precise, After: v(6, 1), Since: v(6, 8), Doc: "check_return_code marks R0 precise, so exit states with different R0 do not prune"},
	bounded(CapVerifierPruneScalarIDs, "regsafe checks the scalar id mapping of precise scalars"),
	bounded(CapVerifierStackReadAll, "stack reads are bounded by the frame, not by allocated_stack"),
	bounded(CapVerifierSpillAnyScalar, "every aligned scalar store spills (and links) the register, also zero and unbounded ones"),
	bounded(CapVerifierSTImmSpill, "BPF_ST of an immediate spills a constant"),
	{Cap: CapVerifierSTImmSpillNonZero, Since: v(6, 3), Backport: []Kernel{Kernel61},
		Doc: "BPF_ST of a non-zero immediate to an aligned stack slot spills a constant (upstream 6.3, 'track immediate values written to stack by BPF_ST instruction'; Debian 6.1.176 has it from 6.1.y stable: the fuzz's g1793 logs fp-16_w=1)"},
	bounded(CapVerifierStackZeroKept, "STACK_ZERO survives a partial spill, and a fill of a zero spill is the constant 0"),
	bounded(CapVerifierNarrowFill, "a fill narrower than the spill keeps the spilled value"),
	bounded(CapVerifierAttachAfterCFG, "bpf_check resolves maps and checks the CFG before the attach target"),
	bounded(CapVerifierNoMainArgMatch, "the main program's BTF arguments are not matched against the context (6.1 logs a mismatch)"),
	{Cap: CapVerifierCtxFixedOff, After: v(6, 12), Since: v(7, 2), Doc: "check_ctx_access takes a constant offset on the ctx pointer of TRACING and LSM programs (no convert_ctx_access) and adds it to the access offset (6.12: 'dereference of modified ctx ptr')"},
	{Cap: CapVerifierNoRegOff, After: v(6, 12), Since: v(7, 2), Doc: "reg->off is gone: a pointer's constant offset lives in var_off, so offset messages print it in var_off and off= is the instruction's"},
	{Cap: CapVerifierSleepableHelperMsg, After: v(6, 12), Since: v(7, 2), Doc: "a sleepable helper in a non-sleepable program is refused as 'sleepable helper %s#%d in non-sleepable prog'"},
	{Cap: CapVerifierHelperStackRW, After: v(6, 12), Since: v(7, 2), Doc: "helper stack accesses are checked as reads or writes: 'invalid read from stack' / 'invalid write to stack' (6.12: 'invalid indirect access to stack')"},
	{Cap: CapVerifierCtxAsMem, After: v(6, 12), Since: v(7, 2), Doc: "the helper memory argument types include ctx (the expected= list ends in ', ctx')"},
	{Cap: CapVerifierNegEndTrack, After: v(6, 12), Since: v(7, 2), Doc: "BPF_NEG and BPF_END results are tracked (a constant stays a constant)"},
	{Cap: CapVerifierConstVoidPtrArg, After: v(6, 12), Since: v(7, 2), Doc: "btf_ctx_access loads a 'const void *' argument as a scalar (6.12: 'arg0 type UNKNOWN is not a struct')"},
	{Cap: CapVerifierSameRegBranch, After: v(6, 12), Since: v(7, 2), Doc: "a scalar compared with itself decides the branch (r1 >= r1 is taken, r1 > r1 is not; 6.12 refines both sides and reports REG INVARIANTS VIOLATION)"},
	{Cap: CapVerifierNonStructPtrMem, After: v(6, 12), Since: v(7, 2), Doc: "btf_struct_walk loads a pointer member to a non-struct (char *, void *) as PTR_TO_MEM|MEM_RDONLY|PTR_UNTRUSTED, read through BPF_PROBE_MEM at any offset (6.12: a scalar)"},
	{Cap: CapVerifierTnumSignedNeedSign, After: v(6, 12), Since: v(7, 2), Doc: "after ALU and branch refinement, signed 64-bit bounds come from the tnum only when its sign bit is known (6.12: smin = value | (mask & S64_MIN) also with an unknown sign)"},
	{Cap: CapVerifierDivModTrack, After: v(6, 12), Since: v(7, 2), Doc: "unsigned BPF_DIV and BPF_MOD results are tracked (8 / 9 is 0, 8 % 3 is in [0, 2])"},
	bounded(CapLogRegTypeAllPrefixes, "reg_type_str joins every flag prefix (6.1 keeps only the last)"),
	bounded(CapVerifierGlobalMainFirst, "the main program is verified first and then only the global functions it reached ('Func#%d ('%s') is global and assumed valid.'); 6.1 verifies every global function first"),
	bounded(CapVerifierCallbackIterate, "bpf_loop and bpf_for_each_map_elem callbacks are walked again from the call until the states converge (bpf_loop: at most R1's umax times); 6.1 walks a callback once"),
	bounded(CapVerifierCFGPerSubprog, "check_cfg walks each subprogram on its own: a recursive call is no back-edge (the frame limit stops it); 6.1 follows call edges and reports 'back-edge from insn %d to %d'"),
	{Cap: CapVerifierRecursiveCallMsg, After: v(6, 12), Since: v(7, 2), Doc: "a recursive bpf-to-bpf call is refused before the walk: 'recursive call from %s() to %s()'"},
	bounded(CapVerifierStackRound16, "check_max_stack_depth rounds a JITed frame's stack depth up to 16 bytes (6.1: 32)"),
	{Cap: CapVerifierPrivStack, After: v(6, 12), Since: v(7, 2), Doc: "tracing programs' frames using 64 bytes or more (rounded) get a private stack: they leave the combined stack depth"},
	bounded(CapVerifierStaticArgMsg, "a static subprogram's call logs 'R%d is not a scalar' (its BTF argument check) before 'caller:'; 6.1 logs it after the main program's messages"),
	{Cap: CapVerifierGlobalVoidReturn, After: v(6, 12), Since: v(7, 2), Doc: "a global function may return void ('Global function %s() doesn't return scalar' before)"},
	bounded(CapVerifierStructOpsSleep, "struct_ops programs may be sleepable (6.1: 'Only fentry/fexit/fmod_ret, lsm, and kprobe/uprobe programs can be sleepable')"),
	bounded(CapVerifierOpsWriteOnly, "an ops table's btf_struct_access sees only writes and bounds them itself (bpf_dummy_ops: 'write access at off %d with size %d'); 6.1 walks a write as a read"),
	bounded(CapVerifierTCPCAWriteMore, "a congestion control may also write tcp_sock's app_limited and snd_cwnd_stamp ('no write support to tcp_sock at off %d' on 6.1)"),
	bounded(CapHelperBasePidTgid, "bpf_base_func_proto offers the current task's pid/tgid and cgroup ids and cgroup storage (6.1: tracing programs only; struct_ops programs are refused them)"),
	{Cap: CapHelperBaseTracing, After: v(6, 12), Since: v(7, 2), Doc: "bpf_base_func_proto offers the tracing helpers that need no tracing context: bpf_get_current_uid_gid, _comm, bpf_send_signal, bpf_get_task_stack, task storage, bpf_copy_from_user, bpf_find_vma, ... (struct_ops programs are refused them before)"},
	{Cap: CapVerifierOpsWriteMsg, After: v(6, 12), Since: v(7, 2), Doc: "a write an ops table's btf_struct_access refuses is logged as 'R%d cannot write into ptr_%s at off=%d size=%d' (the tables' own words before)"},
	{Cap: CapVerifierRefsInState, After: v(6, 12), Since: v(7, 2), Doc: "references belong to the verifier state, not a frame: a callback's exit no longer checks them ('Unreleased reference' at the callback's exit before), the main program's exit does"},
	bounded(CapLogLinfoFileLine, "verbose_linfo appends ' @ file:line' to a source line (6.1 prints an empty line as a bare '; ')"),
	{Cap: CapVerifierCallFrames16, After: v(6, 12), Since: v(7, 2), Doc: "MAX_CALL_FRAMES is 16 ('the call stack of 17 frames is too deep'; 8 before)"},
	{Cap: CapVerifierMemArgNoCtx, After: v(6, 12), Since: v(7, 2), Doc: "a ctx pointer passed for a memory argument (check_helper_mem_access) is refused as 'R%d type=ctx expected=fp' (6.12 checks it as a 1-byte ctx read at size-1)"},
	bounded(CapLogStateCompact, "print_verifier_state's compact form: constants with their type, no off=0, bounds only where they say something"),
	bounded(CapLogConstVarOff, "alignment messages print a constant var_off as a number"),
	bounded(CapLogVarOffStackOff, "an out-of-bounds variable-offset stack access is reported with the instruction's off too"),
	bounded(CapLogInfiniteLoopStates, "'infinite loop detected' is followed by the current and the old state"),
	{Cap: CapVerifierDynptrOverwrite, After: v(6, 1), Since: v(6, 12),
		Doc: "a dynptr constructor reinitialises an unreferenced dynptr's slots (destroy_if_dynptr_stack_slot) and refuses a referenced one"},
	{Cap: CapVerifierDynptrReleaseMsg, After: v(6, 12), Since: v(7, 2),
		Doc: "a released dynptr argument gets the dynptr argument messages (Expected an initialized dynptr, of type ringbuf) instead of 'arg N is an unacquired reference'"},
	{Cap: CapVerifierStaticLiveness, After: v(6, 12), Since: v(7, 2),
		Doc: "checkpoints keep only the registers live before their insn, by a liveness computed ahead of the walk on the CFG with constant-decided branches folded (bpf_prune_dead_branches, compute_live_registers); state dumps print no _r/_w marks; singular scalar ids are dropped"},
	{Cap: CapVerifierKfuncMeta, After: v(6, 1), Since: v(6, 12),
		Doc: "kfunc calls go through fetch_kfunc_meta/check_kfunc_args: KF_TRUSTED_ARGS, KF_RCU, 'program must be sleepable to call sleepable kfunc' (6.1: btf_check_kfunc_arg_match)"},
	{Cap: CapVerifierKfuncRegMsg, After: v(6, 12), Since: v(7, 2),
		Doc: "kfunc argument messages name the register (R1) instead of the argument (arg#0)"},
	{Cap: CapVerifierReleaseArgRef, After: v(6, 12), Since: v(7, 2),
		Doc: "a release kfunc's unreferenced argument is refused at the argument: 'release kfunc F expects referenced PTR_TO_BTF_ID passed to R1'"},
	{Cap: CapVerifierKfuncRetTrusted, After: v(6, 12), Since: v(7, 2),
		Doc: "struct pointers returned by kfuncs are PTR_TRUSTED (trusted_ptr_ in the log)"},
	{Cap: CapVerifierRCUProtectedCall, After: v(6, 12), Since: v(7, 2),
		Doc: "a KF_RCU_PROTECTED kfunc outside an RCU read section is refused at the call (6.12: at the iterator's next, 'expected an RCU CS when using F')"},
	{Cap: CapVerifierRdonlyCastVoid, After: v(6, 12), Since: v(7, 2),
		Doc: "bpf_rdonly_cast takes a struct or void type id ('kfunc bpf_rdonly_cast type ID argument must be of a struct or void'; 6.12: struct only)"},
	{Cap: CapVerifierRCUNesting, After: v(6, 12), Since: v(7, 2),
		Doc: "bpf_rcu_read_lock regions nest instead of 'nested rcu read lock'"},
	{Cap: CapVerifierKfuncTrustedDefault, After: v(6, 12), Since: v(7, 2),
		Doc: "KF_TRUSTED_ARGS is the default: a NULL pointer argument of any kfunc is 'Possibly NULL pointer passed to trusted R1' (the kfunc probe: 7.2 refuses it for kfuncs that never had the flag)"},
}

// CapInfoOf returns the table entry of c.
func CapInfoOf(c Capability) (CapInfo, bool) {
	for _, i := range Capabilities {
		if i.Cap == c {
			return i, true
		}
	}
	return CapInfo{}, false
}
