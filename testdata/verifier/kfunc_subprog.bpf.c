/* kfunc references and RCU regions across bpf-to-bpf calls: a reference taken or released in
 * a static subprogram, a region opened in one frame and closed in another, a global function
 * called inside a region. */
#include "kfuncs.h"

u64 sink;

static __attribute__((noinline)) void put_task(struct task_struct *t)
{
	bpf_task_release(t);
}
static __attribute__((noinline)) struct task_struct *get_current_ref(void)
{
	return bpf_task_acquire(bpf_get_current_task_btf());
}
static __attribute__((noinline)) int parent_pid_locked(struct task_struct *t)
{
	int pid;
	bpf_rcu_read_lock();
	pid = t->real_parent->pid;
	bpf_rcu_read_unlock();
	return pid;
}
static __attribute__((noinline)) void lock_only(void)
{
	bpf_rcu_read_lock();
}
__attribute__((noinline)) int global_helper(int x)
{
	return x + 1;
}

SEC("fentry/bpf_fentry_test1") int ks_release_in_subprog(u64 *ctx)
{
	struct task_struct *t = bpf_task_acquire(bpf_get_current_task_btf());
	if (t)
		put_task(t);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int ks_acquire_in_subprog(u64 *ctx)
{
	struct task_struct *t = get_current_ref();
	if (t)
		bpf_task_release(t);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int ks_acquire_in_subprog_leak(u64 *ctx)
{
	struct task_struct *t = get_current_ref();
	return t ? 1 : 0;
}
SEC("fentry/bpf_fentry_test1") int ks_release_in_subprog_twice(u64 *ctx)
{
	struct task_struct *t = bpf_task_acquire(bpf_get_current_task_btf());
	if (t) {
		put_task(t);
		put_task(t);
	}
	return 0;
}
SEC("lsm.s/file_open") int ks_region_in_subprog(u64 *ctx)
{
	sink = parent_pid_locked(bpf_get_current_task_btf());
	return 0;
}
SEC("fentry/bpf_fentry_test1") int ks_lock_in_subprog_unlock_in_main(u64 *ctx)
{
	lock_only();
	sink = bpf_get_current_task_btf()->real_parent->pid;
	bpf_rcu_read_unlock();
	return 0;
}
SEC("fentry/bpf_fentry_test1") int ks_lock_in_subprog_no_unlock(u64 *ctx)
{
	lock_only();
	return 0;
}
SEC("fentry/bpf_fentry_test1") int ks_global_in_region(u64 *ctx)
{
	bpf_rcu_read_lock();
	sink = global_helper(ctx[0]);
	bpf_rcu_read_unlock();
	return 0;
}

char _license[] SEC("license") = "GPL";
