/* kfunc calls from tracing and LSM programs: which kfuncs a program type may call, acquire /
 * release pairs and the references they leave, NULL checks after KF_RET_NULL, trusted and RCU
 * arguments, sleepable kfuncs, an unknown kfunc. See kfuncs.h for the declarations. */
#include "kfuncs.h"

u64 sink;

/* --- tasks --- */
SEC("fentry/bpf_fentry_test1") int kf_task_acquire_current(u64 *ctx)
{
	struct task_struct *t = bpf_task_acquire(bpf_get_current_task_btf());
	if (t) {
		sink = t->pid;
		bpf_task_release(t);
	}
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_task_acquire_no_null_check(u64 *ctx)
{
	struct task_struct *t = bpf_task_acquire(bpf_get_current_task_btf());
	bpf_task_release(t);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_task_acquire_deref_null(u64 *ctx)
{
	struct task_struct *t = bpf_task_acquire(bpf_get_current_task_btf());
	sink = t->pid;
	if (t)
		bpf_task_release(t);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_task_leak(u64 *ctx)
{
	struct task_struct *t = bpf_task_acquire(bpf_get_current_task_btf());
	if (t)
		sink = t->pid;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_task_leak_one_path(u64 *ctx)
{
	struct task_struct *t = bpf_task_acquire(bpf_get_current_task_btf());
	if (!t)
		return 0;
	if (t->pid == 1)
		return 0;
	bpf_task_release(t);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_task_double_release(u64 *ctx)
{
	struct task_struct *t = bpf_task_acquire(bpf_get_current_task_btf());
	if (t) {
		bpf_task_release(t);
		bpf_task_release(t);
	}
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_task_release_unacquired(u64 *ctx)
{
	bpf_task_release(bpf_get_current_task_btf());
	return 0;
}
SEC("fentry/wake_up_new_task") int kf_task_acquire_fentry_arg(u64 *ctx)
{
	struct task_struct *t = bpf_task_acquire((struct task_struct *)ctx[0]);
	if (t)
		bpf_task_release(t);
	return 0;
}
SEC("lsm/task_alloc") int kf_task_acquire_lsm_arg(u64 *ctx)
{
	struct task_struct *t = bpf_task_acquire((struct task_struct *)ctx[0]);
	if (t)
		bpf_task_release(t);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_task_from_pid(u64 *ctx)
{
	struct task_struct *t = bpf_task_from_pid(1);
	if (t) {
		sink = t->pid;
		bpf_task_release(t);
	}
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_task_from_pid_leak(u64 *ctx)
{
	struct task_struct *t = bpf_task_from_pid(ctx[0]);
	return t ? 0 : 1;
}
SEC("fentry/bpf_fentry_test1") int kf_task_acquire_scalar(u64 *ctx)
{
	struct task_struct *t = bpf_task_acquire((struct task_struct *)ctx[0]);
	if (t)
		bpf_task_release(t);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_task_acquire_stack(u64 *ctx)
{
	u64 buf[4] = {};
	struct task_struct *t = bpf_task_acquire((struct task_struct *)buf);
	if (t)
		bpf_task_release(t);
	return 0;
}
SEC("lsm/file_open") int kf_task_acquire_wrong_type(u64 *ctx)
{
	struct task_struct *t = bpf_task_acquire((struct task_struct *)ctx[0]);
	if (t)
		bpf_task_release(t);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_task_acquire_parent(u64 *ctx)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct task_struct *t = bpf_task_acquire(cur->real_parent);
	if (t)
		bpf_task_release(t);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_task_release_twice_paths(u64 *ctx)
{
	struct task_struct *t = bpf_task_acquire(bpf_get_current_task_btf());
	if (!t)
		return 0;
	if (ctx[0])
		bpf_task_release(t);
	else
		bpf_task_release(t);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_task_two_refs(u64 *ctx)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct task_struct *a = bpf_task_acquire(cur);
	struct task_struct *b;
	if (!a)
		return 0;
	b = bpf_task_acquire(a);
	if (b)
		bpf_task_release(b);
	bpf_task_release(a);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_task_two_refs_leak_second(u64 *ctx)
{
	struct task_struct *a = bpf_task_acquire(bpf_get_current_task_btf());
	struct task_struct *b;
	if (!a)
		return 0;
	b = bpf_task_acquire(a);
	bpf_task_release(a);
	return b ? 1 : 0;
}
SEC("fentry/bpf_fentry_test1") int kf_task_use_after_release(u64 *ctx)
{
	struct task_struct *t = bpf_task_acquire(bpf_get_current_task_btf());
	if (!t)
		return 0;
	bpf_task_release(t);
	sink = t->pid;
	return 0;
}

/* --- cgroups --- */
SEC("fentry/bpf_fentry_test1") int kf_cgroup_ancestor(u64 *ctx)
{
	struct cgroup *cg = bpf_cgroup_from_id(1), *anc;
	if (!cg)
		return 0;
	anc = bpf_cgroup_ancestor(cg, 1);
	if (anc)
		bpf_cgroup_release(anc);
	bpf_cgroup_release(cg);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_cgroup_ancestor_leak(u64 *ctx)
{
	struct cgroup *cg = bpf_cgroup_from_id(1), *anc;
	if (!cg)
		return 0;
	anc = bpf_cgroup_ancestor(cg, 1);
	bpf_cgroup_release(cg);
	return anc ? 1 : 0;
}
SEC("fentry/bpf_fentry_test1") int kf_cgroup_from_id_no_check(u64 *ctx)
{
	struct cgroup *cg = bpf_cgroup_from_id(ctx[0]);
	bpf_cgroup_release(cg);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_cgroup_ancestor_walk(u64 *ctx)
{
	struct cgroup *cg = bpf_cgroup_from_id(ctx[0]);
	int level;
	if (!cg)
		return 0;
#pragma clang loop unroll(full)
	for (level = 0; level < 4; level++) {
		struct cgroup *anc = bpf_cgroup_ancestor(cg, level);
		if (!anc)
			break;
		sink += ((struct cgroup___k *)anc)->level;
		bpf_cgroup_release(anc);
	}
	bpf_cgroup_release(cg);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_cgroup_release_task(u64 *ctx)
{
	struct task_struct *t = bpf_task_acquire(bpf_get_current_task_btf());
	if (t)
		bpf_cgroup_release((struct cgroup *)t);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_cgroup_acquire_task_cgroup(u64 *ctx)
{
	struct task_struct___k *cur = (void *)bpf_get_current_task_btf();
	struct cgroup *cg = bpf_cgroup_acquire(cur->cgroups->dfl_cgrp);
	if (cg)
		bpf_cgroup_release(cg);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_task_under_cgroup(u64 *ctx)
{
	struct cgroup *cg = bpf_cgroup_from_id(ctx[0]);
	if (!cg)
		return 0;
	sink = bpf_task_under_cgroup(bpf_get_current_task_btf(), cg);
	bpf_cgroup_release(cg);
	return 0;
}

/* --- cpumasks: tracing may, LSM may not --- */
SEC("fentry/bpf_fentry_test1") int kf_cpumask_create(u64 *ctx)
{
	struct bpf_cpumask *m = bpf_cpumask_create();
	if (m)
		bpf_cpumask_release(m);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_cpumask_leak(u64 *ctx)
{
	struct bpf_cpumask *m = bpf_cpumask_create();
	return m ? 1 : 0;
}
SEC("lsm/file_open") int kf_cpumask_lsm(u64 *ctx)
{
	struct bpf_cpumask *m = bpf_cpumask_create();
	if (m)
		bpf_cpumask_release(m);
	return 0;
}

/* --- files: LSM only --- */
SEC("lsm/file_open") int kf_exe_file_lsm(u64 *ctx)
{
	struct file *f = bpf_get_task_exe_file(bpf_get_current_task_btf());
	if (f) {
		sink = f->f_flags;
		bpf_put_file(f);
	}
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_exe_file_fentry(u64 *ctx)
{
	struct file *f = bpf_get_task_exe_file(bpf_get_current_task_btf());
	if (f)
		bpf_put_file(f);
	return 0;
}
SEC("lsm/file_open") int kf_exe_file_leak(u64 *ctx)
{
	struct file *f = bpf_get_task_exe_file(bpf_get_current_task_btf());
	return f ? -1 : 0;
}
SEC("lsm/file_open") int kf_put_file_arg(u64 *ctx)
{
	bpf_put_file((struct file *)ctx[0]);
	return 0;
}
SEC("lsm.s/file_open") int kf_d_path_sleepable(u64 *ctx)
{
	struct file *f = (struct file *)ctx[0];
	char buf[64] = {};
	sink = bpf_path_d_path(&f->f_path, buf, sizeof(buf));
	return 0;
}
SEC("lsm/file_open") int kf_d_path_not_sleepable(u64 *ctx)
{
	struct file *f = (struct file *)ctx[0];
	char buf[64] = {};
	sink = bpf_path_d_path(&f->f_path, buf, sizeof(buf));
	return 0;
}
SEC("lsm.s/file_open") int kf_d_path_uninit_buf(u64 *ctx)
{
	struct file *f = (struct file *)ctx[0];
	char buf[64];
	bpf_path_d_path(&f->f_path, buf, sizeof(buf));
	return buf[0];
}
SEC("lsm.s/file_open") int kf_d_path_stack_too_small(u64 *ctx)
{
	struct file *f = (struct file *)ctx[0];
	char buf[16] = {};
	sink = bpf_path_d_path(&f->f_path, buf, 32);
	return 0;
}
char xattr_value[32];
SEC("lsm.s/file_open") int kf_get_file_xattr(u64 *ctx)
{
	static const char name[] = "user.trampjit";
	struct bpf_dynptr dp;
	bpf_dynptr_from_mem(xattr_value, sizeof(xattr_value), 0, &dp);
	sink = bpf_get_file_xattr((struct file *)ctx[0], name, &dp);
	return 0;
}
SEC("lsm/file_open") int kf_get_file_xattr_not_sleepable(u64 *ctx)
{
	static const char name[] = "user.trampjit";
	struct bpf_dynptr dp;
	bpf_dynptr_from_mem(xattr_value, sizeof(xattr_value), 0, &dp);
	sink = bpf_get_file_xattr((struct file *)ctx[0], name, &dp);
	return 0;
}
SEC("lsm.s/file_open") int kf_get_file_xattr_name_on_stack(u64 *ctx)
{
	char name[8] = "user.x";
	struct bpf_dynptr dp;
	bpf_dynptr_from_mem(xattr_value, sizeof(xattr_value), 0, &dp);
	sink = bpf_get_file_xattr((struct file *)ctx[0], name, &dp);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_get_file_xattr_fentry(u64 *ctx)
{
	static const char name[] = "user.trampjit";
	struct bpf_dynptr dp;
	bpf_dynptr_from_mem(xattr_value, sizeof(xattr_value), 0, &dp);
	return bpf_get_file_xattr((struct file *)ctx[0], name, &dp);
}

/* --- keys (6.1 has these) --- */
SEC("lsm.s/file_open") int kf_user_key(u64 *ctx)
{
	struct bpf_key *k = bpf_lookup_user_key(1, 0);
	if (k)
		bpf_key_put(k);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_user_key_not_sleepable(u64 *ctx)
{
	struct bpf_key *k = bpf_lookup_user_key(1, 0);
	if (k)
		bpf_key_put(k);
	return 0;
}
SEC("lsm.s/file_open") int kf_user_key_leak(u64 *ctx)
{
	struct bpf_key *k = bpf_lookup_user_key(1, 0);
	return k ? -1 : 0;
}
SEC("lsm.s/file_open") int kf_user_key_no_null_check(u64 *ctx)
{
	struct bpf_key *k = bpf_lookup_user_key(1, 0);
	bpf_key_put(k);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_system_key(u64 *ctx)
{
	struct bpf_key *k = bpf_lookup_system_key(0);
	if (k)
		bpf_key_put(k);
	return 0;
}
SEC("lsm/file_open") int kf_system_key_lsm(u64 *ctx)
{
	struct bpf_key *k = bpf_lookup_system_key(0);
	if (k)
		bpf_key_put(k);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_key_put_ctx(u64 *ctx)
{
	bpf_key_put((struct bpf_key *)ctx);
	return 0;
}

/* --- dynptr kfuncs, a kfunc of another program type, an unknown kfunc --- */
SEC("fentry/bpf_fentry_test1") int kf_dynptr_size(u64 *ctx)
{
	struct bpf_dynptr dp;
	bpf_dynptr_from_mem(xattr_value, sizeof(xattr_value), 0, &dp);
	sink = bpf_dynptr_size(&dp);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_dynptr_slice(u64 *ctx)
{
	struct bpf_dynptr dp;
	u64 *p;
	bpf_dynptr_from_mem(xattr_value, sizeof(xattr_value), 0, &dp);
	p = bpf_dynptr_slice(&dp, 0, 0, 8);
	if (p)
		sink = *p;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_dynptr_slice_no_null_check(u64 *ctx)
{
	struct bpf_dynptr dp;
	u64 *p;
	bpf_dynptr_from_mem(xattr_value, sizeof(xattr_value), 0, &dp);
	p = bpf_dynptr_slice(&dp, 0, 0, 8);
	sink = *p;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_dynptr_slice_beyond(u64 *ctx)
{
	struct bpf_dynptr dp;
	u64 *p;
	bpf_dynptr_from_mem(xattr_value, sizeof(xattr_value), 0, &dp);
	p = bpf_dynptr_slice(&dp, 0, 0, 8);
	if (p)
		sink = p[1];
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_dynptr_slice_var_size(u64 *ctx)
{
	struct bpf_dynptr dp;
	u64 *p;
	bpf_dynptr_from_mem(xattr_value, sizeof(xattr_value), 0, &dp);
	p = bpf_dynptr_slice(&dp, 0, 0, ctx[0] & 7);
	if (p)
		sink = *(u8 *)p;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_not_a_kfunc(u64 *ctx)
{
	return trampjit_plain_kernel_function(1);
}
SEC("fentry/bpf_fentry_test1") int kf_cgroup_ancestor_var_level(u64 *ctx)
{
	struct cgroup *cg = bpf_cgroup_from_id(1), *anc;
	if (!cg)
		return 0;
	anc = bpf_cgroup_ancestor(cg, ctx[0]);
	if (anc)
		bpf_cgroup_release(anc);
	bpf_cgroup_release(cg);
	return 0;
}
SEC("lsm/task_alloc") int kf_task_release_arg_plus_offset(u64 *ctx)
{
	struct task_struct *t = bpf_task_acquire((struct task_struct *)ctx[0]);
	if (t)
		bpf_task_release((struct task_struct *)((char *)t + 8));
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_dynptr_uninit(u64 *ctx)
{
	struct bpf_dynptr dp;
	sink = bpf_dynptr_size(&dp);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_iter_num_find(u64 *ctx)
{
	struct bpf_iter_num it;
	int *v;
	bpf_iter_num_new(&it, 0, 8);
	while ((v = bpf_iter_num_next(&it)))
		if (*v == 3)
			sink = 1;
	bpf_iter_num_destroy(&it);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_iter_num_deref_null(u64 *ctx)
{
	struct bpf_iter_num it;
	int *v;
	bpf_iter_num_new(&it, 0, 8);
	v = bpf_iter_num_next(&it);
	sink = *v;
	bpf_iter_num_destroy(&it);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_dynptr_from_skb_fentry(u64 *ctx)
{
	struct bpf_dynptr dp;
	bpf_dynptr_from_skb(ctx, 0, &dp);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_unknown(u64 *ctx)
{
	trampjit_no_such_kfunc();
	return 0;
}

/* --- references and RCU pointers spilled to the stack --- */
SEC("fentry/bpf_fentry_test1") int kf_task_spilled_release(u64 *ctx)
{
	struct task_struct *volatile slot;
	struct task_struct *t = bpf_task_acquire(bpf_get_current_task_btf());
	if (!t)
		return 0;
	slot = t;
	bpf_task_release(slot);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_task_spilled_use_after_release(u64 *ctx)
{
	struct task_struct *volatile slot;
	struct task_struct *t = bpf_task_acquire(bpf_get_current_task_btf());
	if (!t)
		return 0;
	slot = t;
	bpf_task_release(t);
	sink = slot->pid;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_rcu_spilled_after_unlock(u64 *ctx)
{
	struct task_struct *volatile slot;
	struct task_struct *t;
	bpf_rcu_read_lock();
	slot = bpf_get_current_task_btf()->real_parent;
	bpf_rcu_read_unlock();
	t = bpf_task_acquire(slot);
	if (t)
		bpf_task_release(t);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kf_rcu_spilled_in_region(u64 *ctx)
{
	struct task_struct *volatile slot;
	struct task_struct *t;
	bpf_rcu_read_lock();
	slot = bpf_get_current_task_btf()->real_parent;
	t = bpf_task_acquire(slot);
	bpf_rcu_read_unlock();
	if (t)
		bpf_task_release(t);
	return 0;
}

char _license[] SEC("license") = "GPL";
