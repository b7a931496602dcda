package btfmodel

import "sort"

// kfunc registrations per profile: which kernel functions a tracing or LSM program may call
// and with what flags. The kernel keeps these tables in code, not in BTF
// (register_btf_kfunc_id_set over BTF_KFUNCS_START/BTF_SET8 blocks), so they are stated here
// as data, one table per profile version, read from each version's sources:
// kernel/bpf/helpers.c (generic_btf_ids, common_btf_ids), kernel/bpf/cpumask.c,
// kernel/trace/bpf_trace.c (key_sig_kfunc_set), fs/bpf_fs_kfuncs.c, net/core/filter.c.
// The prototype of each comes from the profile's BTF (the FUNC's FuncProto), never from here.

// KfuncFlag is one KF_* flag (include/linux/btf.h).
type KfuncFlag uint32

const (
	KFAcquire      KfuncFlag = 1 << iota // KF_ACQUIRE: returns a reference
	KFRelease                            // KF_RELEASE: releases its referenced argument
	KFRetNull                            // KF_RET_NULL: the return may be NULL
	KFTrustedArgs                        // KF_TRUSTED_ARGS: pointer arguments must be trusted
	KFSleepable                          // KF_SLEEPABLE: sleepable programs only
	KFDestructive                        // KF_DESTRUCTIVE: needs CAP_SYS_BOOT
	KFRCU                                // KF_RCU: arguments may be RCU pointers
	KFIterNew                            // KF_ITER_NEW
	KFIterNext                           // KF_ITER_NEXT
	KFIterDestroy                        // KF_ITER_DESTROY
	KFRCUProtected                       // KF_RCU_PROTECTED: only inside an RCU read section
	KFKptrGet                            // KF_KPTR_GET (6.1): arg 0 is a map value's kptr
)

// Kfunc is one registered kfunc as a tracing or LSM program sees it.
type Kfunc struct {
	Name  string
	Flags KfuncFlag
	// LSMOnly: registered with a filter that admits BPF_PROG_TYPE_LSM only
	// (bpf_fs_kfuncs_filter).
	LSMOnly bool
}

// Has reports whether the kfunc carries flag f.
func (k Kfunc) Has(f KfuncFlag) bool { return k.Flags&f != 0 }

// LookupKfunc finds name in the profile's registration tables: false when no set a tracing
// or LSM program may use registers it ("calling kernel function %s is not allowed").
func LookupKfunc(k Kernel, name string) (Kfunc, bool) {
	t := kfuncTables[k]
	if t == nil {
		return Kfunc{}, false
	}
	f, ok := t[name]
	return f, ok
}

const (
	acqNull = KFAcquire | KFRetNull
	acqRCU  = KFAcquire | KFRCU | KFRetNull
)

// kfuncs61 is 6.1: kfuncs came to tracing with the key verification set only
// (kernel/trace/bpf_trace.c, registered for BPF_PROG_TYPE_TRACING; LSM programs share the
// tracing hook: bpf_prog_type_to_kfunc_hook).
var kfuncs61 = []Kfunc{
	{Name: "bpf_lookup_user_key", Flags: acqNull | KFSleepable},
	{Name: "bpf_lookup_system_key", Flags: acqNull},
	{Name: "bpf_key_put", Flags: KFRelease},
	{Name: "bpf_verify_pkcs7_signature", Flags: KFSleepable},
}

// testKfuncs61 is 6.1's net/bpf/test_run.c test_sk_check_kfunc_ids, registered for tracing
// as well (later kernels moved them to the bpf_testmod module).
var testKfuncs61 = []Kfunc{
	{Name: "bpf_kfunc_call_test1"},
	{Name: "bpf_kfunc_call_test2"},
	{Name: "bpf_kfunc_call_test3"},
	{Name: "bpf_kfunc_call_test_acquire", Flags: acqNull},
	{Name: "bpf_kfunc_call_memb_acquire", Flags: acqNull},
	{Name: "bpf_kfunc_call_test_release", Flags: KFRelease},
	{Name: "bpf_kfunc_call_memb_release", Flags: KFRelease},
	{Name: "bpf_kfunc_call_memb1_release", Flags: KFRelease},
	{Name: "bpf_kfunc_call_test_kptr_get", Flags: acqNull | KFKptrGet},
	{Name: "bpf_kfunc_call_int_mem_release", Flags: KFRelease},
	{Name: "bpf_kfunc_call_test_get_rdwr_mem", Flags: KFRetNull},
	{Name: "bpf_kfunc_call_test_get_rdonly_mem", Flags: KFRetNull},
	{Name: "bpf_kfunc_call_test_acq_rdonly_mem", Flags: acqNull},
	{Name: "bpf_kfunc_call_test_pass_ctx"},
	{Name: "bpf_kfunc_call_test_pass1"},
	{Name: "bpf_kfunc_call_test_pass2"},
	{Name: "bpf_kfunc_call_test_fail1"},
	{Name: "bpf_kfunc_call_test_fail2"},
	{Name: "bpf_kfunc_call_test_fail3"},
	{Name: "bpf_kfunc_call_test_mem_len_pass1"},
	{Name: "bpf_kfunc_call_test_mem_len_fail1"},
	{Name: "bpf_kfunc_call_test_mem_len_fail2"},
	{Name: "bpf_kfunc_call_test_ref", Flags: KFTrustedArgs},
	{Name: "bpf_kfunc_call_test_destructive", Flags: KFDestructive},
}

// kfuncs612 is Debian 6.12.117: generic and common kfuncs (kernel/bpf/helpers.c), cpumasks,
// keys, the LSM-only file kfuncs (fs/bpf_fs_kfuncs.c, bpf_path_d_path without KF_SLEEPABLE
// in this build) and the skb dynptr (net/core/filter.c registers it for tracing too).
var kfuncs612 = append(append([]Kfunc{}, kfuncs61...), []Kfunc{
	// generic_btf_ids
	{Name: "crash_kexec", Flags: KFDestructive}, // the kernel's own function, tagged __bpf_kfunc
	{Name: "bpf_obj_new_impl", Flags: acqNull},
	{Name: "bpf_percpu_obj_new_impl", Flags: acqNull},
	{Name: "bpf_obj_drop_impl", Flags: KFRelease},
	{Name: "bpf_percpu_obj_drop_impl", Flags: KFRelease},
	{Name: "bpf_refcount_acquire_impl", Flags: acqRCU},
	{Name: "bpf_list_push_front_impl"},
	{Name: "bpf_list_push_back_impl"},
	{Name: "bpf_list_pop_front", Flags: acqNull},
	{Name: "bpf_list_pop_back", Flags: acqNull},
	{Name: "bpf_task_acquire", Flags: acqRCU},
	{Name: "bpf_task_release", Flags: KFRelease},
	{Name: "bpf_rbtree_remove", Flags: acqNull},
	{Name: "bpf_rbtree_add_impl"},
	{Name: "bpf_rbtree_first", Flags: KFRetNull},
	{Name: "bpf_cgroup_acquire", Flags: acqRCU},
	{Name: "bpf_cgroup_release", Flags: KFRelease},
	{Name: "bpf_cgroup_ancestor", Flags: acqRCU},
	{Name: "bpf_cgroup_from_id", Flags: acqNull},
	{Name: "bpf_task_under_cgroup", Flags: KFRCU},
	{Name: "bpf_task_get_cgroup1", Flags: acqRCU},
	{Name: "bpf_task_from_pid", Flags: acqNull},
	{Name: "bpf_throw"},
	// common_btf_ids
	{Name: "bpf_cast_to_kern_ctx"},
	{Name: "bpf_rdonly_cast"},
	{Name: "bpf_rcu_read_lock"},
	{Name: "bpf_rcu_read_unlock"},
	{Name: "bpf_dynptr_slice", Flags: KFRetNull},
	{Name: "bpf_dynptr_slice_rdwr", Flags: KFRetNull},
	{Name: "bpf_iter_num_new", Flags: KFIterNew},
	{Name: "bpf_iter_num_next", Flags: KFIterNext | KFRetNull},
	{Name: "bpf_iter_num_destroy", Flags: KFIterDestroy},
	{Name: "bpf_iter_task_vma_new", Flags: KFIterNew | KFRCU},
	{Name: "bpf_iter_task_vma_next", Flags: KFIterNext | KFRetNull},
	{Name: "bpf_iter_task_vma_destroy", Flags: KFIterDestroy},
	{Name: "bpf_iter_css_task_new", Flags: KFIterNew | KFTrustedArgs},
	{Name: "bpf_iter_css_task_next", Flags: KFIterNext | KFRetNull},
	{Name: "bpf_iter_css_task_destroy", Flags: KFIterDestroy},
	{Name: "bpf_iter_css_new", Flags: KFIterNew | KFTrustedArgs | KFRCUProtected},
	{Name: "bpf_iter_css_next", Flags: KFIterNext | KFRetNull},
	{Name: "bpf_iter_css_destroy", Flags: KFIterDestroy},
	{Name: "bpf_iter_task_new", Flags: KFIterNew | KFTrustedArgs | KFRCUProtected},
	{Name: "bpf_iter_task_next", Flags: KFIterNext | KFRetNull},
	{Name: "bpf_iter_task_destroy", Flags: KFIterDestroy},
	{Name: "bpf_dynptr_adjust"},
	{Name: "bpf_dynptr_is_null"},
	{Name: "bpf_dynptr_is_rdonly"},
	{Name: "bpf_dynptr_size"},
	{Name: "bpf_dynptr_clone"},
	{Name: "bpf_wq_init"},
	{Name: "bpf_wq_set_callback_impl"},
	{Name: "bpf_wq_start"},
	{Name: "bpf_preempt_disable"},
	{Name: "bpf_preempt_enable"},
	{Name: "bpf_iter_bits_new", Flags: KFIterNew},
	{Name: "bpf_iter_bits_next", Flags: KFIterNext | KFRetNull},
	{Name: "bpf_iter_bits_destroy", Flags: KFIterDestroy},
	{Name: "bpf_copy_from_user_str", Flags: KFSleepable},
	// kernel/bpf/cpumask.c (registered for tracing; LSM shares the hook)
	{Name: "bpf_cpumask_create", Flags: acqNull},
	{Name: "bpf_cpumask_release", Flags: KFRelease},
	{Name: "bpf_cpumask_acquire", Flags: KFAcquire | KFTrustedArgs},
	{Name: "bpf_cpumask_first", Flags: KFRCU},
	{Name: "bpf_cpumask_first_zero", Flags: KFRCU},
	{Name: "bpf_cpumask_first_and", Flags: KFRCU},
	{Name: "bpf_cpumask_set_cpu", Flags: KFRCU},
	{Name: "bpf_cpumask_clear_cpu", Flags: KFRCU},
	{Name: "bpf_cpumask_test_cpu", Flags: KFRCU},
	{Name: "bpf_cpumask_test_and_set_cpu", Flags: KFRCU},
	{Name: "bpf_cpumask_test_and_clear_cpu", Flags: KFRCU},
	{Name: "bpf_cpumask_setall", Flags: KFRCU},
	{Name: "bpf_cpumask_clear", Flags: KFRCU},
	{Name: "bpf_cpumask_and", Flags: KFRCU},
	{Name: "bpf_cpumask_or", Flags: KFRCU},
	{Name: "bpf_cpumask_xor", Flags: KFRCU},
	{Name: "bpf_cpumask_equal", Flags: KFRCU},
	{Name: "bpf_cpumask_intersects", Flags: KFRCU},
	{Name: "bpf_cpumask_subset", Flags: KFRCU},
	{Name: "bpf_cpumask_empty", Flags: KFRCU},
	{Name: "bpf_cpumask_full", Flags: KFRCU},
	{Name: "bpf_cpumask_copy", Flags: KFRCU},
	{Name: "bpf_cpumask_any_distribute", Flags: KFRCU},
	{Name: "bpf_cpumask_any_and_distribute", Flags: KFRCU},
	{Name: "bpf_cpumask_weight", Flags: KFRCU},
	// fs/bpf_fs_kfuncs.c (bpf_fs_kfuncs_filter: LSM programs only)
	{Name: "bpf_get_task_exe_file", Flags: KFAcquire | KFTrustedArgs | KFRetNull, LSMOnly: true},
	{Name: "bpf_put_file", Flags: KFRelease, LSMOnly: true},
	{Name: "bpf_path_d_path", Flags: KFTrustedArgs, LSMOnly: true},
	{Name: "bpf_get_dentry_xattr", Flags: KFSleepable | KFTrustedArgs, LSMOnly: true},
	{Name: "bpf_get_file_xattr", Flags: KFSleepable | KFTrustedArgs, LSMOnly: true},
	{Name: "bpf_get_fsverity_digest", Flags: KFTrustedArgs, LSMOnly: true},
	// net/core/filter.c bpf_kfunc_set_skb
	{Name: "bpf_dynptr_from_skb", Flags: KFTrustedArgs},
	// kernel/bpf/map_iter.c and kernel/bpf/arena.c (registered for every program type)
	{Name: "bpf_map_sum_elem_count", Flags: KFTrustedArgs},
	{Name: "bpf_arena_alloc_pages", Flags: KFTrustedArgs | KFSleepable},
	{Name: "bpf_arena_free_pages", Flags: KFTrustedArgs | KFSleepable},
	// net/bpf/test_run.c: test_sk_check_kfunc_ids and bpf_test_modify_return_ids keep
	// these in vmlinux, registered for tracing (the kfunc probe: allowed from every type)
	{Name: "bpf_kfunc_call_test_release", Flags: KFRelease},
	{Name: "bpf_kfunc_call_memb_release", Flags: KFRelease},
	{Name: "bpf_modify_return_test_tp"},
	// kernel/cgroup/rstat.c (tracing)
	{Name: "cgroup_rstat_updated"},
	{Name: "cgroup_rstat_flush", Flags: KFSleepable},
}...)

// kfuncs72 is Debian 7.2.13: 6.12's tables plus what arrived since for tracing. The
// entries after 6.12 are read from the sources but, apart from those the ground truth
// programs call, not yet confirmed on the 7.2 kernel (KNOWN_GAPS.md).
var kfuncs72 = append(append([]Kfunc{}, kfuncs612...), []Kfunc{
	// kernel/bpf/helpers.c generic_btf_ids and common_btf_ids since 6.12
	{Name: "bpf_send_signal_task", Flags: KFTrustedArgs},
	{Name: "bpf_task_from_vpid", Flags: acqNull},
	{Name: "bpf_get_kmem_cache"}, // not KF_RET_NULL (the kfunc probe: a load through R0 gets to the BTF walk)
	{Name: "bpf_local_irq_save"},
	{Name: "bpf_local_irq_restore"},
	{Name: "bpf_copy_from_user_task_str", Flags: KFSleepable | KFTrustedArgs},
	{Name: "bpf_obj_new", Flags: acqNull},
	{Name: "bpf_percpu_obj_new", Flags: acqNull},
	{Name: "bpf_obj_drop", Flags: KFRelease},
	{Name: "bpf_percpu_obj_drop", Flags: KFRelease},
	{Name: "bpf_refcount_acquire", Flags: acqRCU},
	{Name: "bpf_list_push_front"},
	{Name: "bpf_list_push_back"},
	{Name: "bpf_list_front", Flags: KFRetNull},
	{Name: "bpf_list_back", Flags: KFRetNull},
	{Name: "bpf_list_add"},
	{Name: "bpf_list_del", Flags: acqNull},
	{Name: "bpf_list_empty"},
	{Name: "bpf_list_is_first"},
	{Name: "bpf_list_is_last"},
	{Name: "bpf_rbtree_add"},
	{Name: "bpf_rbtree_root", Flags: KFRetNull},
	{Name: "bpf_rbtree_left", Flags: KFRetNull},
	{Name: "bpf_rbtree_right", Flags: KFRetNull},
	{Name: "bpf_res_spin_lock"},
	{Name: "bpf_res_spin_unlock"},
	{Name: "bpf_res_spin_lock_irqsave"},
	{Name: "bpf_res_spin_unlock_irqrestore"},
	{Name: "bpf_wq_set_callback"},
	{Name: "bpf_timer_cancel_async"},
	{Name: "bpf_task_work_schedule_signal"},
	{Name: "bpf_task_work_schedule_resume"},
	{Name: "bpf_dynptr_copy"},
	{Name: "bpf_dynptr_memset"},
	{Name: "bpf_copy_from_user_dynptr", Flags: KFSleepable},
	{Name: "bpf_copy_from_user_str_dynptr", Flags: KFSleepable},
	{Name: "bpf_copy_from_user_task_dynptr", Flags: KFSleepable | KFTrustedArgs},
	{Name: "bpf_copy_from_user_task_str_dynptr", Flags: KFSleepable | KFTrustedArgs},
	{Name: "bpf_probe_read_kernel_dynptr"},
	{Name: "bpf_probe_read_kernel_str_dynptr"},
	{Name: "bpf_probe_read_user_dynptr"},
	{Name: "bpf_probe_read_user_str_dynptr"},
	{Name: "bpf_strcmp"}, {Name: "bpf_strcasecmp"}, {Name: "bpf_strncasecmp"},
	{Name: "bpf_strchr"}, {Name: "bpf_strchrnul"}, {Name: "bpf_strnchr"}, {Name: "bpf_strrchr"},
	{Name: "bpf_strlen"}, {Name: "bpf_strnlen"}, {Name: "bpf_strspn"}, {Name: "bpf_strcspn"},
	{Name: "bpf_strstr"}, {Name: "bpf_strnstr"}, {Name: "bpf_strcasestr"}, {Name: "bpf_strncasestr"},
	{Name: "bpf_stream_vprintk"},
	{Name: "bpf_stream_print_stack"},
	{Name: "__bpf_trap"},
	{Name: "bpf_cgroup_read_xattr", Flags: KFRCU},
	{Name: "bpf_cpumask_populate", Flags: KFRCU},
	{Name: "bpf_iter_kmem_cache_new", Flags: KFIterNew | KFSleepable},
	{Name: "bpf_iter_kmem_cache_next", Flags: KFIterNext | KFRetNull | KFSleepable},
	{Name: "bpf_iter_kmem_cache_destroy", Flags: KFIterDestroy | KFSleepable},
	{Name: "bpf_iter_dmabuf_new", Flags: KFIterNew | KFSleepable},
	{Name: "bpf_iter_dmabuf_next", Flags: KFIterNext | KFRetNull | KFSleepable},
	{Name: "bpf_iter_dmabuf_destroy", Flags: KFIterDestroy | KFSleepable},
	// mm/bpf_memcontrol.c
	{Name: "bpf_get_mem_cgroup", Flags: acqRCU},
	{Name: "bpf_get_root_mem_cgroup", Flags: acqNull},
	{Name: "bpf_put_mem_cgroup", Flags: KFRelease},
	{Name: "bpf_mem_cgroup_vm_events"},
	{Name: "bpf_mem_cgroup_usage"},
	{Name: "bpf_mem_cgroup_page_state"},
	{Name: "bpf_mem_cgroup_memory_events"},
	{Name: "bpf_mem_cgroup_flush_stats", Flags: KFSleepable},
	// kernel/cgroup/rstat.c renamed its kfuncs for css
	{Name: "css_rstat_updated"},
	{Name: "css_rstat_flush", Flags: KFSleepable},
	// fs/bpf_fs_kfuncs.c
	{Name: "bpf_set_dentry_xattr", Flags: KFSleepable | KFTrustedArgs, LSMOnly: true},
	{Name: "bpf_remove_dentry_xattr", Flags: KFSleepable | KFTrustedArgs, LSMOnly: true},
	{Name: "bpf_real_data_inode", Flags: KFSleepable | KFTrustedArgs | KFRetNull, LSMOnly: true},
	{Name: "bpf_dynptr_from_file", Flags: KFTrustedArgs},
	{Name: "bpf_dynptr_file_discard"},
	// kernel/bpf/arena.c: no longer KF_SLEEPABLE (the kfunc probe: a non-sleepable fentry
	// gets past the sleepable check); these entries replace 6.12's
	{Name: "bpf_arena_alloc_pages", Flags: KFTrustedArgs},
	{Name: "bpf_arena_free_pages", Flags: KFTrustedArgs},
	{Name: "bpf_arena_reserve_pages", Flags: KFTrustedArgs},
	// kernel/sched/ext.c and ext_idle.c: scx_kfunc_ids_any and scx_kfunc_ids_idle are
	// registered for BPF_PROG_TYPE_TRACING too (the kfunc probe: allowed from every type)
	{Name: "scx_bpf_kick_cpu"}, {Name: "scx_bpf_kick_cid"},
	{Name: "scx_bpf_dsq_nr_queued"}, {Name: "scx_bpf_destroy_dsq"},
	{Name: "scx_bpf_dsq_peek", Flags: KFRCUProtected | KFRetNull},
	{Name: "scx_bpf_dsq_reenq"}, {Name: "scx_bpf_reenqueue_local___v2"},
	{Name: "bpf_iter_scx_dsq_new", Flags: KFIterNew | KFRCUProtected},
	{Name: "bpf_iter_scx_dsq_next", Flags: KFIterNext | KFRetNull},
	{Name: "bpf_iter_scx_dsq_destroy", Flags: KFIterDestroy},
	{Name: "scx_bpf_exit_bstr"}, {Name: "scx_bpf_error_bstr"}, {Name: "scx_bpf_dump_bstr"},
	{Name: "scx_bpf_cpuperf_cap"}, {Name: "scx_bpf_cpuperf_cur"}, {Name: "scx_bpf_cpuperf_set"},
	{Name: "scx_bpf_cidperf_cap"}, {Name: "scx_bpf_cidperf_cur"}, {Name: "scx_bpf_cidperf_set"},
	{Name: "scx_bpf_nr_node_ids"}, {Name: "scx_bpf_nr_cpu_ids"}, {Name: "scx_bpf_nr_cids"},
	{Name: "scx_bpf_nr_online_cids"}, {Name: "scx_bpf_cpu_node"},
	{Name: "scx_bpf_cid_to_cpu"}, {Name: "scx_bpf_cpu_to_cid"}, {Name: "scx_bpf_this_cid"},
	{Name: "scx_bpf_cid_topo"},
	{Name: "scx_bpf_get_possible_cpumask", Flags: KFAcquire},
	{Name: "scx_bpf_get_online_cpumask", Flags: KFAcquire},
	{Name: "scx_bpf_put_cpumask", Flags: KFRelease},
	{Name: "scx_bpf_task_running"}, {Name: "scx_bpf_task_cpu"}, {Name: "scx_bpf_task_cid"},
	{Name: "scx_bpf_task_set_slice"}, {Name: "scx_bpf_task_set_dsq_vtime"},
	{Name: "scx_bpf_cpu_rq"},
	{Name: "scx_bpf_locked_rq", Flags: KFRetNull},
	{Name: "scx_bpf_cpu_curr", Flags: KFRetNull | KFRCUProtected},
	{Name: "scx_bpf_cid_curr", Flags: KFRetNull | KFRCUProtected},
	{Name: "scx_bpf_tid_to_task", Flags: KFRetNull | KFRCUProtected},
	{Name: "scx_bpf_task_cgroup", Flags: KFRCU | KFAcquire},
	{Name: "scx_bpf_now"}, {Name: "scx_bpf_events"},
	{Name: "scx_bpf_get_idle_cpumask", Flags: KFAcquire},
	{Name: "scx_bpf_get_idle_cpumask_node", Flags: KFAcquire},
	{Name: "scx_bpf_get_idle_smtmask", Flags: KFAcquire},
	{Name: "scx_bpf_get_idle_smtmask_node", Flags: KFAcquire},
	{Name: "scx_bpf_put_idle_cpumask", Flags: KFRelease},
	{Name: "scx_bpf_test_and_clear_cpu_idle"},
	{Name: "scx_bpf_pick_idle_cpu"}, {Name: "scx_bpf_pick_idle_cpu_node"},
	{Name: "scx_bpf_pick_any_cpu"}, {Name: "scx_bpf_pick_any_cpu_node"},
}...)

var kfuncTables = map[Kernel]map[string]Kfunc{
	Kernel61:  kfuncIndex(append(append([]Kfunc{}, kfuncs61...), testKfuncs61...)),
	Kernel612: kfuncIndex(kfuncs612),
	Kernel72:  kfuncIndex(kfuncs72),
}

func kfuncIndex(l []Kfunc) map[string]Kfunc {
	m := make(map[string]Kfunc, len(l))
	for _, k := range l {
		m[k.Name] = k
	}
	return m
}

// KfuncNames lists the kfuncs of k's tables, sorted.
func KfuncNames(k Kernel) []string {
	var out []string
	for n := range kfuncTables[k] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// kfuncNoSymbol are FUNCs a profile's BTF keeps for kfuncs whose kernel symbol is gone
// (add_kfunc_call: "cannot find address for kernel function %s"; the kfunc probe found
// them).
var kfuncNoSymbol = map[Kernel]map[string]bool{
	Kernel72: {"bpf_wq_set_callback_impl": true},
}

// KfuncHasSymbol reports whether kallsyms has the kfunc name on k.
func KfuncHasSymbol(k Kernel, name string) bool { return !kfuncNoSymbol[k][name] }
