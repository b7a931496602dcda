package btfmodel

// Function lists the kernel consults at attach time. A list that arrived with a release is
// consulted under its capability; names a kernel's BTF lacks simply never match. Upstream
// homes are cited per list.

// btfIDDeny is btf_id_deny (kernel/bpf/verifier.c): TRACING programs of every attach type
// are refused on these, with EINVAL and no log message in 6.1 and 6.12. Entries depend on
// config (SMP, PREEMPT_RCU, DEBUG_PREEMPT).
var btfIDDeny = []string{"migrate_disable", "migrate_enable", "rcu_read_unlock_strict", "preempt_count_add", "preempt_count_sub"}

// btfIDDenyRCULock joins btf_id_deny with CapBTFIDDenyRCULock.
var btfIDDenyRCULock = []string{"__rcu_read_lock", "__rcu_read_unlock"}

// noreturnDeny is noreturn_deny (kernel/bpf/verifier.c, CapNoreturnDeny; Debian 6.12.117
// refuses fexit on do_exit with noreturnMsg): fexit and fmod_ret are refused on functions
// that never return.
var noreturnDeny = []string{"__ia32_sys_exit", "__ia32_sys_exit_group", "__kunit_abort", "kunit_try_catch_throw",
	"__module_put_and_kthread_exit", "__x64_sys_exit", "__x64_sys_exit_group", "do_exit",
	"do_group_exit", "kthread_complete_and_exit", "kthread_exit", "make_task_dead"}

// noreturnMsg is the backport's wording (it names no function; later kernels do).
const noreturnMsg = "Attaching fexit/fmod_ret to __noreturn functions is rejected."

// fmodRetIDs are the BTF ids registered with BTF_KFUNC_HOOK_FMODRET (CapFmodRetIDSet;
// net/bpf/test_run.c bpf_test_modify_return_ids). Before it these functions are
// ALLOW_ERROR_INJECTION instead.
var fmodRetIDs = map[string]bool{"bpf_modify_return_test": true, "bpf_modify_return_test2": true, "bpf_fentry_test1": true}

// fmodRetSleepable are the fmod_ret set entries flagged KF_SLEEPABLE.
var fmodRetSleepable = map[string]bool{"bpf_fentry_test1": true}

// nonSleepableErrorInject is btf_non_sleepable_error_inject (kernel/bpf/verifier.c).
var nonSleepableErrorInject = map[string]bool{
	"__filemap_add_folio": true, "should_fail_alloc_page": true, "should_failslab": true,
}

// sleepableLSMHooks is sleepable_lsm_hooks (kernel/bpf/bpf_lsm.c, 6.12.y): the LSM hooks
// called where a program may sleep. Confirmed by capture: bpf_lsm_file_open and
// bpf_lsm_task_alloc accept sleepable programs, bpf_lsm_task_free refuses them.
var sleepableLSMHooks = setOf("bpf_lsm_bpf", "bpf_lsm_bpf_map", "bpf_lsm_bpf_map_alloc_security",
	"bpf_lsm_bpf_map_free_security", "bpf_lsm_bpf_prog", "bpf_lsm_bprm_check_security",
	"bpf_lsm_bprm_committed_creds", "bpf_lsm_bprm_committing_creds", "bpf_lsm_bprm_creds_for_exec",
	"bpf_lsm_bprm_creds_from_file", "bpf_lsm_capget", "bpf_lsm_capset", "bpf_lsm_cred_prepare",
	"bpf_lsm_file_ioctl", "bpf_lsm_file_lock", "bpf_lsm_file_open", "bpf_lsm_file_receive",
	"bpf_lsm_inet_conn_established", "bpf_lsm_inode_create", "bpf_lsm_inode_free_security",
	"bpf_lsm_inode_getattr", "bpf_lsm_inode_getxattr", "bpf_lsm_inode_mknod",
	"bpf_lsm_inode_need_killpriv", "bpf_lsm_inode_post_setxattr", "bpf_lsm_inode_readlink",
	"bpf_lsm_inode_rename", "bpf_lsm_inode_rmdir", "bpf_lsm_inode_setattr", "bpf_lsm_inode_setxattr",
	"bpf_lsm_inode_symlink", "bpf_lsm_inode_unlink", "bpf_lsm_kernel_module_request",
	"bpf_lsm_kernel_read_file", "bpf_lsm_kernfs_init_security", "bpf_lsm_key_free",
	"bpf_lsm_mmap_file", "bpf_lsm_netlink_send", "bpf_lsm_path_notify", "bpf_lsm_release_secctx",
	"bpf_lsm_sb_alloc_security", "bpf_lsm_sb_eat_lsm_opts", "bpf_lsm_sb_kern_mount",
	"bpf_lsm_sb_mount", "bpf_lsm_sb_remount", "bpf_lsm_sb_set_mnt_opts", "bpf_lsm_sb_show_options",
	"bpf_lsm_sb_statfs", "bpf_lsm_sb_umount", "bpf_lsm_settime", "bpf_lsm_socket_accept",
	"bpf_lsm_socket_bind", "bpf_lsm_socket_connect", "bpf_lsm_socket_create",
	"bpf_lsm_socket_getpeername", "bpf_lsm_socket_getpeersec_dgram", "bpf_lsm_socket_getsockname",
	"bpf_lsm_socket_getsockopt", "bpf_lsm_socket_listen", "bpf_lsm_socket_post_create",
	"bpf_lsm_socket_recvmsg", "bpf_lsm_socket_sendmsg", "bpf_lsm_socket_shutdown",
	"bpf_lsm_socket_socketpair", "bpf_lsm_syslog", "bpf_lsm_task_alloc",
	"bpf_lsm_current_getsecid_subj", "bpf_lsm_task_getsecid_obj", "bpf_lsm_task_prctl",
	"bpf_lsm_task_setscheduler", "bpf_lsm_userns_create")

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// lsmDisabledHooks is bpf_lsm_disabled_hooks (kernel/bpf/bpf_lsm.c, CapLSMDisabledHooks): hooks whose
// return conventions a BPF program cannot honour.
var lsmDisabledHooks = map[string]bool{"bpf_lsm_vm_enough_memory": true, "bpf_lsm_inode_need_killpriv": true,
	"bpf_lsm_inode_getsecurity": true, "bpf_lsm_inode_listsecurity": true,
	"bpf_lsm_inode_copy_up_xattr": true, "bpf_lsm_getselfattr": true,
	"bpf_lsm_getprocattr": true, "bpf_lsm_setprocattr": true,
	"bpf_lsm_key_getsecurity": true, "bpf_lsm_audit_rule_match": true,
	"bpf_lsm_ismaclabel": true,
	// Captured refused on 6.12 and 7.2 ("points to disabled hook"), found by kernel fuzz.
	"bpf_lsm_xfrm_decode_session": true}

// lsmNotHooks are kernel/bpf/bpf_lsm.c's own functions: named bpf_lsm_ but not LSM_HOOK
// stubs, so not in the bpf_lsm_hooks set bpf_lsm_verify_prog checks (the ones of the 6.1,
// 6.12 and 7.2 BTF that are no member of security_hook_heads / lsm_static_calls_table).
var lsmNotHooks = setOf("bpf_lsm_find_cgroup_shim", "bpf_lsm_func_proto", "bpf_lsm_get_retval_range",
	"bpf_lsm_has_d_inode_locked", "bpf_lsm_hook_returns_errno", "bpf_lsm_init", "bpf_lsm_is_sleepable_hook",
	"bpf_lsm_is_trusted", "bpf_lsm_verify_prog")

func inList(list []string, name string) bool {
	for _, n := range list {
		if n == name {
			return true
		}
	}
	return false
}
