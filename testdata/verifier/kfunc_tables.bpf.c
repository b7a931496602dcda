/* kfuncs that arrived after 6.1 or 6.12, one call each, to check the registration tables
 * (btfmodel/kfunc.go) against the kernels: allowed or not for tracing and LSM programs,
 * sleepable or not, KF_RCU_PROTECTED. */
#include "kfuncs.h"

u64 sink;
static const char greeting[] = "hello";

SEC("fentry/bpf_fentry_test1") int kt_strlen(u64 *ctx)
{
	sink = bpf_strlen(greeting);
	return 0;
}
SEC("lsm/file_open") int kt_strcmp_lsm(u64 *ctx)
{
	sink = bpf_strcmp(greeting, greeting);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kt_send_signal_task(u64 *ctx)
{
	sink = bpf_send_signal_task(bpf_get_current_task_btf(), 0, 0, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kt_task_from_vpid(u64 *ctx)
{
	struct task_struct *t = bpf_task_from_vpid(1);
	if (t)
		bpf_task_release(t);
	return 0;
}
SEC("lsm.s/file_open") int kt_copy_from_user_str(u64 *ctx)
{
	char buf[16];
	sink = bpf_copy_from_user_str(buf, sizeof(buf), (void *)ctx[1], 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kt_copy_from_user_str_fentry(u64 *ctx)
{
	char buf[16];
	sink = bpf_copy_from_user_str(buf, sizeof(buf), (void *)ctx[1], 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kt_rstat_updated(u64 *ctx)
{
	struct cgroup *cg = bpf_cgroup_from_id(1);
	if (!cg)
		return 0;
	cgroup_rstat_updated(cg, 0);
	bpf_cgroup_release(cg);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kt_get_kmem_cache(u64 *ctx)
{
	struct kmem_cache___k *s = bpf_get_kmem_cache(ctx[0]);
	if (s)
		sink = s->size;
	return 0;
}
SEC("lsm.s/file_open") int kt_iter_task_no_rcu(u64 *ctx)
{
	struct bpf_iter_task it;
	struct task_struct *t;
	bpf_iter_task_new(&it, 0, 0);
	while ((t = bpf_iter_task_next(&it)))
		if (t->pid == 1)
			sink = 1;
	bpf_iter_task_destroy(&it);
	return 0;
}
SEC("lsm.s/file_open") int kt_iter_task_rcu(u64 *ctx)
{
	struct bpf_iter_task it;
	struct task_struct *t;
	bpf_rcu_read_lock();
	bpf_iter_task_new(&it, 0, 0);
	while ((t = bpf_iter_task_next(&it)))
		if (t->pid == 1)
			sink = 1;
	bpf_iter_task_destroy(&it);
	bpf_rcu_read_unlock();
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kt_iter_task_fentry(u64 *ctx)
{
	struct bpf_iter_task it;
	struct task_struct *t;
	bpf_iter_task_new(&it, 0, 0);
	while ((t = bpf_iter_task_next(&it)))
		if (t->pid == 1)
			sink = 1;
	bpf_iter_task_destroy(&it);
	return 0;
}

SEC("lsm/file_open") int kt_real_data_inode(u64 *ctx)
{
	struct inode *i = bpf_real_data_inode((struct file *)ctx[0]);
	if (i)
		sink = i->i_ino;
	return 0;
}
SEC("lsm.s/file_open") int kt_real_data_inode_no_check(u64 *ctx)
{
	struct inode *i = bpf_real_data_inode((struct file *)ctx[0]);
	sink = i->i_ino;
	return 0;
}
SEC("lsm.s/file_open") int kt_real_data_inode_sleepable(u64 *ctx)
{
	struct inode *i = bpf_real_data_inode((struct file *)ctx[0]);
	if (i)
		sink = i->i_ino;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kt_real_data_inode_fentry(u64 *ctx)
{
	struct inode *i = bpf_real_data_inode((struct file *)ctx[0]);
	return i ? 1 : 0;
}
SEC("lsm.s/file_open") int kt_real_data_inode_untrusted(u64 *ctx)
{
	struct file *f = (struct file *)ctx[0];
	struct inode *i = bpf_real_data_inode(f->f_path.dentry->d_inode ? (struct file *)f->f_inode : f);
	return i ? -1 : 0;
}

SEC("fentry/tcp_v4_connect") int kt_test_kfunc(u64 *ctx)
{
	return bpf_kfunc_call_test1((struct sock *)ctx[0], 1, 2, 3, 4) ? 0 : 0;
}

SEC("fentry/bpf_fentry_test1") int kt_rdonly_cast(u64 *ctx)
{
	struct task_struct *t = bpf_rdonly_cast((void *)ctx[0], bpf_core_type_id_kernel(struct task_struct));
	sink = t->pid;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kt_rdonly_cast_write(u64 *ctx)
{
	struct task_struct *t = bpf_rdonly_cast((void *)ctx[0], bpf_core_type_id_kernel(struct task_struct));
	t->pid = 1;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kt_rdonly_cast_acquire(u64 *ctx)
{
	struct task_struct *t = bpf_rdonly_cast(bpf_get_current_task_btf(), bpf_core_type_id_kernel(struct task_struct));
	t = bpf_task_acquire(t);
	if (t)
		bpf_task_release(t);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kt_rdonly_cast_int(u64 *ctx)
{
	int *p = bpf_rdonly_cast((void *)ctx[0], bpf_core_type_id_kernel(int));
	return *p ? 0 : 0;
}
SEC("fentry/bpf_fentry_test1") int kt_rdonly_cast_var_id(u64 *ctx)
{
	struct task_struct *t = bpf_rdonly_cast((void *)ctx[0], ctx[0] & 0xff);
	sink = t->pid;
	return 0;
}

char _license[] SEC("license") = "GPL";
