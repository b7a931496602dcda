package btfmodel

// Function lists the kernel consults at attach time. Each list is per profile; names that a
// given kernel's BTF lacks simply never match. Upstream homes are cited per list.

// btfIDDeny is btf_id_deny (kernel/bpf/verifier.c): TRACING programs of every attach type
// are refused on these, with EINVAL and no log message in 6.1 and 6.12. Entries depend on
// config (SMP, PREEMPT_RCU, DEBUG_PREEMPT); 6.12 added __rcu_read_lock/unlock.
var btfIDDeny = map[Kernel][]string{
	Kernel61:  {"migrate_disable", "migrate_enable", "rcu_read_unlock_strict", "preempt_count_add", "preempt_count_sub"},
	Kernel612: {"migrate_disable", "migrate_enable", "rcu_read_unlock_strict", "preempt_count_add", "preempt_count_sub", "__rcu_read_lock", "__rcu_read_unlock"},
}

// noreturnDeny is noreturn_deny (kernel/bpf/verifier.c, 2025, backported to 6.12.y stable):
// fexit and fmod_ret are refused on functions that never return. Absent in 6.1.
// open: whether Debian's 6.12 carries the backport is settled by the kernel corpus.
var noreturnDeny = map[Kernel][]string{
	Kernel612: {"__ia32_sys_exit", "__ia32_sys_exit_group", "__kunit_abort", "kunit_try_catch_throw",
		"__module_put_and_kthread_exit", "__x64_sys_exit", "__x64_sys_exit_group", "do_exit",
		"do_group_exit", "kthread_complete_and_exit", "kthread_exit", "make_task_dead"},
}

// noreturnMsg is the backport's wording (it names no function; later kernels do).
const noreturnMsg = "Attaching fexit/fmod_ret to __noreturn functions is rejected."

// fmodRetIDs are the BTF ids registered with BTF_KFUNC_HOOK_FMODRET (6.3+; net/bpf/test_run.c
// bpf_test_modify_return_ids). In 6.1 these functions are ALLOW_ERROR_INJECTION instead.
var fmodRetIDs = map[Kernel]map[string]bool{
	Kernel612: {"bpf_modify_return_test": true, "bpf_modify_return_test2": true, "bpf_fentry_test1": true},
}

// fmodRetSleepable are the fmod_ret set entries flagged KF_SLEEPABLE.
var fmodRetSleepable = map[Kernel]map[string]bool{
	Kernel612: {"bpf_fentry_test1": true},
}

// nonSleepableErrorInject is btf_non_sleepable_error_inject (kernel/bpf/verifier.c).
var nonSleepableErrorInject = map[string]bool{
	"__filemap_add_folio": true, "should_fail_alloc_page": true, "should_failslab": true,
}

// syscallPrefix is the arch's syscall-wrapper prefix. Without CONFIG_FUNCTION_ERROR_INJECTION
// (the Debian cloud kernels: their guests have no error_injection/list) the kernel's
// within_error_injection_list fallback accepts exactly the functions with this prefix.
var syscallPrefix = map[Arch]string{AMD64: "__x64_sys_", ARM64: "__arm64_sys_"}

// lsmDisabledHooks is bpf_lsm_disabled_hooks (kernel/bpf/bpf_lsm.c, 6.12): hooks whose
// return conventions a BPF program cannot honour.
var lsmDisabledHooks = map[Kernel]map[string]bool{
	Kernel612: {"bpf_lsm_vm_enough_memory": true, "bpf_lsm_inode_need_killpriv": true,
		"bpf_lsm_inode_getsecurity": true, "bpf_lsm_inode_listsecurity": true,
		"bpf_lsm_inode_copy_up_xattr": true, "bpf_lsm_getselfattr": true,
		"bpf_lsm_getprocattr": true, "bpf_lsm_setprocattr": true,
		"bpf_lsm_key_getsecurity": true, "bpf_lsm_audit_rule_match": true,
		"bpf_lsm_ismaclabel": true},
}

func inList(list []string, name string) bool {
	for _, n := range list {
		if n == name {
			return true
		}
	}
	return false
}
