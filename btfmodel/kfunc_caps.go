package btfmodel

// Capabilities of kfunc calls, reference leaks and RCU regions (kernel/bpf/verifier.c:
// check_kfunc_call, check_kfunc_args, check_reference_leak, do_check's BPF_EXIT). They are
// declared here, beside the kfunc tables, and joined to Capabilities and to each profile's
// statement at init, so that this file is the one place to read them.

type kfuncCap struct {
	info CapInfo
	has  map[Kernel]bool
}

const (
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
)

var kfuncCaps = []kfuncCap{
	{CapInfo{Cap: CapVerifierKfuncMeta, After: v(6, 1), Since: v(6, 12),
		Doc: "kfunc calls go through fetch_kfunc_meta/check_kfunc_args: KF_TRUSTED_ARGS, KF_RCU, 'program must be sleepable to call sleepable kfunc' (6.1: btf_check_kfunc_arg_match)"},
		map[Kernel]bool{Kernel61: false, Kernel612: true, Kernel72: true}},
	{CapInfo{Cap: CapVerifierKfuncRegMsg, After: v(6, 12), Since: v(7, 2),
		Doc: "kfunc argument messages name the register (R1) instead of the argument (arg#0)"},
		map[Kernel]bool{Kernel61: false, Kernel612: false, Kernel72: true}},
	{CapInfo{Cap: CapVerifierReleaseArgRef, After: v(6, 12), Since: v(7, 2),
		Doc: "a release kfunc's unreferenced argument is refused at the argument: 'release kfunc F expects referenced PTR_TO_BTF_ID passed to R1'"},
		map[Kernel]bool{Kernel61: false, Kernel612: false, Kernel72: true}},
	{CapInfo{Cap: CapVerifierKfuncRetTrusted, After: v(6, 12), Since: v(7, 2),
		Doc: "struct pointers returned by kfuncs are PTR_TRUSTED (trusted_ptr_ in the log)"},
		map[Kernel]bool{Kernel61: false, Kernel612: false, Kernel72: true}},
	{CapInfo{Cap: CapVerifierRCUProtectedCall, After: v(6, 12), Since: v(7, 2),
		Doc: "a KF_RCU_PROTECTED kfunc outside an RCU read section is refused at the call (6.12: at the iterator's next, 'expected an RCU CS when using F')"},
		map[Kernel]bool{Kernel61: false, Kernel612: false, Kernel72: true}},
	{CapInfo{Cap: CapVerifierRdonlyCastVoid, After: v(6, 12), Since: v(7, 2),
		Doc: "bpf_rdonly_cast takes a struct or void type id ('kfunc bpf_rdonly_cast type ID argument must be of a struct or void'; 6.12: struct only)"},
		map[Kernel]bool{Kernel61: false, Kernel612: false, Kernel72: true}},
	{CapInfo{Cap: CapVerifierRCUNesting, After: v(6, 12), Since: v(7, 2),
		Doc: "bpf_rcu_read_lock regions nest instead of 'nested rcu read lock'"},
		map[Kernel]bool{Kernel61: false, Kernel612: false, Kernel72: true}},
	{CapInfo{Cap: CapVerifierKfuncTrustedDefault, After: v(6, 12), Since: v(7, 2),
		Doc: "KF_TRUSTED_ARGS is the default: a NULL pointer argument of any kfunc is 'Possibly NULL pointer passed to trusted R1' (the kfunc probe: 7.2 refuses it for kfuncs that never had the flag)"},
		map[Kernel]bool{Kernel61: false, Kernel612: false, Kernel72: true}},
}

func init() {
	for _, kc := range kfuncCaps {
		Capabilities = append(Capabilities, kc.info)
		for i := range Profiles {
			if has, ok := kc.has[Profiles[i].Kernel]; ok {
				Profiles[i].caps[kc.info.Cap] = has
			}
		}
	}
}
