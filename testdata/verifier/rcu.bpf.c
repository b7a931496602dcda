/* bpf_rcu_read_lock/unlock regions: nesting, unmatched unlocks, a region left open at exit,
 * MEM_RCU pointers (task->real_parent, task->cgroups) loaded inside a region and what they
 * become after it, sleepable programs that need a region for KF_RCU arguments. */
#include "kfuncs.h"

u64 sink;

SEC("fentry/bpf_fentry_test1") int rcu_empty_region(u64 *ctx)
{
	bpf_rcu_read_lock();
	bpf_rcu_read_unlock();
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rcu_parent_pid(u64 *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	bpf_rcu_read_lock();
	sink = t->real_parent->pid;
	bpf_rcu_read_unlock();
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rcu_nested(u64 *ctx)
{
	bpf_rcu_read_lock();
	bpf_rcu_read_lock();
	bpf_rcu_read_unlock();
	bpf_rcu_read_unlock();
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rcu_unmatched_unlock(u64 *ctx)
{
	bpf_rcu_read_unlock();
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rcu_missing_unlock(u64 *ctx)
{
	bpf_rcu_read_lock();
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rcu_missing_unlock_one_path(u64 *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	bpf_rcu_read_lock();
	if (t->real_parent->pid == 1)
		return 1;
	bpf_rcu_read_unlock();
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rcu_acquire_parent(u64 *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf(), *p;
	bpf_rcu_read_lock();
	p = bpf_task_acquire(t->real_parent);
	bpf_rcu_read_unlock();
	if (p)
		bpf_task_release(p);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rcu_acquire_after_unlock(u64 *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf(), *p, *a;
	bpf_rcu_read_lock();
	p = t->real_parent;
	bpf_rcu_read_unlock();
	a = bpf_task_acquire(p);
	if (a)
		bpf_task_release(a);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rcu_read_after_unlock(u64 *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf(), *p;
	bpf_rcu_read_lock();
	p = t->real_parent;
	bpf_rcu_read_unlock();
	sink = p->pid;
	return 0;
}
SEC("lsm.s/file_open") int rcu_sleepable_region(u64 *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf(), *p;
	bpf_rcu_read_lock();
	p = bpf_task_acquire(t->real_parent);
	bpf_rcu_read_unlock();
	if (p)
		bpf_task_release(p);
	return 0;
}
SEC("lsm.s/file_open") int rcu_sleepable_no_region(u64 *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf(), *p;
	p = bpf_task_acquire(t->real_parent);
	if (p)
		bpf_task_release(p);
	return 0;
}
SEC("lsm.s/file_open") int rcu_sleepable_parent_pid(u64 *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	sink = t->real_parent->pid;
	return 0;
}
SEC("lsm.s/file_open") int rcu_sleepable_kfunc_in_region(u64 *ctx)
{
	struct bpf_key *k;
	bpf_rcu_read_lock();
	k = bpf_lookup_user_key(1, 0);
	bpf_rcu_read_unlock();
	if (k)
		bpf_key_put(k);
	return 0;
}
SEC("lsm.s/file_open") int rcu_sleepable_helper_in_region(u64 *ctx)
{
	char buf[8] = {};
	bpf_rcu_read_lock();
	bpf_copy_from_user(buf, sizeof(buf), (void *)ctx[1]);
	bpf_rcu_read_unlock();
	return buf[0];
}
SEC("lsm.s/file_open") int rcu_sleepable_d_path_after_region(u64 *ctx)
{
	struct file *f = (struct file *)ctx[0];
	char buf[32] = {};
	bpf_rcu_read_lock();
	sink = ((struct task_struct *)bpf_get_current_task_btf())->real_parent->pid;
	bpf_rcu_read_unlock();
	sink += bpf_path_d_path(&f->f_path, buf, sizeof(buf));
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rcu_cgroup_level(u64 *ctx)
{
	struct task_struct___k *t = (void *)bpf_get_current_task_btf();
	bpf_rcu_read_lock();
	sink = ((struct cgroup___k *)t->cgroups->dfl_cgrp)->level;
	bpf_rcu_read_unlock();
	return 0;
}
SEC("lsm.s/file_open") int rcu_sleepable_cgroup_acquire(u64 *ctx)
{
	struct task_struct___k *t = (void *)bpf_get_current_task_btf();
	struct cgroup *cg;
	bpf_rcu_read_lock();
	cg = bpf_cgroup_acquire(t->cgroups->dfl_cgrp);
	bpf_rcu_read_unlock();
	if (cg)
		bpf_cgroup_release(cg);
	return 0;
}
SEC("lsm.s/file_open") int rcu_sleepable_cgroup_no_region(u64 *ctx)
{
	struct task_struct___k *t = (void *)bpf_get_current_task_btf();
	struct cgroup *cg = bpf_cgroup_acquire(t->cgroups->dfl_cgrp);
	if (cg)
		bpf_cgroup_release(cg);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rcu_group_leader_under_cgroup(u64 *ctx)
{
	struct task_struct___k *t = (void *)bpf_get_current_task_btf();
	struct cgroup *cg = bpf_cgroup_from_id(ctx[0]);
	if (!cg)
		return 0;
	bpf_rcu_read_lock();
	sink = bpf_task_under_cgroup(t->group_leader, cg);
	bpf_rcu_read_unlock();
	bpf_cgroup_release(cg);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rcu_ref_released_in_region(u64 *ctx)
{
	struct task_struct *t = bpf_task_from_pid(1);
	if (!t)
		return 0;
	bpf_rcu_read_lock();
	sink = t->real_parent->pid;
	bpf_task_release(t);
	bpf_rcu_read_unlock();
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rcu_leak_in_region(u64 *ctx)
{
	struct task_struct *t;
	bpf_rcu_read_lock();
	t = bpf_task_from_pid(1);
	bpf_rcu_read_unlock();
	return t ? 1 : 0;
}
SEC("fentry/bpf_fentry_test1") int rcu_lock_on_branch(u64 *ctx)
{
	u64 x = ctx[0];
	if (x)
		bpf_rcu_read_lock();
	sink = x;
	if (x)
		bpf_rcu_read_unlock();
	return 0;
}
SEC("fexit/bpf_fentry_test1") int rcu_fexit_parent(u64 *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	bpf_rcu_read_lock();
	sink = t->real_parent->real_parent->pid;
	bpf_rcu_read_unlock();
	return 0;
}
SEC("lsm/file_open") int rcu_lsm_parent_acquire(u64 *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct task_struct *p = bpf_task_acquire(t->real_parent);
	if (p)
		bpf_task_release(p);
	return 0;
}

char _license[] SEC("license") = "GPL";
