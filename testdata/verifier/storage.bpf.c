/* Local storage: per-task, per-inode and per-socket state kept in storage maps
 * (created with key and value BTF and BPF_F_NO_PREALLOC), reached through the
 * *_storage_get/delete helpers with a BTF pointer to the owner. */
#include "common.h"

struct st_val { u64 count; u64 last; };

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct st_val);
} task_st SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_INODE_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct st_val);
} inode_st SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct st_val);
} sk_st SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, u32);
	__type(value, struct st_val);
} st_hash SEC(".maps");

u64 st_sink;

SEC("fentry/bpf_fentry_test1") int st_task_current(u64 *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct st_val *v = bpf_task_storage_get(&task_st, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!v)
		return 0;
	v->count++;
	v->last = bpf_ktime_get_ns();
	return 0;
}
SEC("fentry/bpf_fentry_test1") int st_task_no_null_check(u64 *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct st_val *v = bpf_task_storage_get(&task_st, t, 0, 0);
	v->count++;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int st_task_scalar_owner(u64 *ctx)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct st_val *v = bpf_task_storage_get(&task_st, t, 0, 0);
	if (v)
		st_sink = v->count;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int st_task_null_owner(u64 *ctx)
{
	struct st_val *v = bpf_task_storage_get(&task_st, 0, 0, 0);
	if (v)
		st_sink = v->count;
	return 0;
}
SEC("lsm/file_open") int st_task_wrong_struct(u64 *ctx)
{
	struct file *f = (struct file *)ctx[0];
	struct st_val *v = bpf_task_storage_get(&task_st, (struct task_struct *)f, 0, 0);
	if (v)
		st_sink = v->count;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int st_task_init_value(u64 *ctx)
{
	struct st_val init = { .count = 1 };
	struct st_val *v = bpf_task_storage_get(&task_st, bpf_get_current_task_btf(), &init,
						BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (v)
		st_sink = v->count;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int st_task_stack_value_small(u64 *ctx)
{
	u64 init = 1;
	struct st_val *v = bpf_task_storage_get(&task_st, bpf_get_current_task_btf(), &init,
						BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (v)
		st_sink = v->count;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int st_task_value_past_end(u64 *ctx)
{
	struct st_val *v = bpf_task_storage_get(&task_st, bpf_get_current_task_btf(), 0, 0);
	if (v)
		st_sink = ((u64 *)v)[2];
	return 0;
}
SEC("fentry/bpf_fentry_test1") int st_task_delete(u64 *ctx)
{
	st_sink = bpf_task_storage_delete(&task_st, bpf_get_current_task_btf());
	return 0;
}
SEC("fentry/bpf_fentry_test1") int st_task_wrong_map(u64 *ctx)
{
	struct st_val *v = bpf_task_storage_get(&st_hash, bpf_get_current_task_btf(), 0, 0);
	if (v)
		st_sink = v->count;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int st_lookup_task_map(u64 *ctx)
{
	int k = 0;
	struct st_val *v = bpf_map_lookup_elem(&task_st, &k);
	if (v)
		st_sink = v->count;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int st_task_parent(u64 *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct st_val *v = bpf_task_storage_get(&task_st, t->real_parent, 0, 0);
	if (v)
		st_sink = v->count;
	return 0;
}
SEC("lsm/file_open") int st_inode_open(u64 *ctx)
{
	struct file *f = (struct file *)ctx[0];
	struct st_val *v = bpf_inode_storage_get(&inode_st, f->f_inode, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!v)
		return 0;
	v->count++;
	return 0;
}
SEC("lsm/file_open") int st_inode_delete(u64 *ctx)
{
	struct file *f = (struct file *)ctx[0];
	st_sink = bpf_inode_storage_delete(&inode_st, f->f_inode);
	return 0;
}
SEC("fentry/vfs_read") int st_inode_fentry(u64 *ctx)
{
	struct file *f = (struct file *)ctx[0];
	struct st_val *v = bpf_inode_storage_get(&inode_st, f->f_inode, 0, 0);
	if (v)
		st_sink = v->count;
	return 0;
}
SEC("lsm/file_open") int st_inode_task_map(u64 *ctx)
{
	struct file *f = (struct file *)ctx[0];
	struct st_val *v = bpf_inode_storage_get(&task_st, f->f_inode, 0, 0);
	if (v)
		st_sink = v->count;
	return 0;
}
SEC("lsm/socket_post_create") int st_sk_lsm(u64 *ctx)
{
	struct socket *s = (struct socket *)ctx[0];
	struct st_val *v = bpf_sk_storage_get(&sk_st, s->sk, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (v)
		v->count++;
	return 0;
}
SEC("fentry/tcp_v4_connect") int st_sk_fentry(u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	struct st_val *v = bpf_sk_storage_get(&sk_st, sk, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (v)
		v->last = bpf_ktime_get_ns();
	return 0;
}
SEC("fentry/tcp_v4_connect") int st_sk_delete(u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	st_sink = bpf_sk_storage_delete(&sk_st, sk);
	return 0;
}
SEC("fmod_ret/bpf_modify_return_test") int st_sk_fmod_ret(u64 *ctx)
{
	struct st_val *v = bpf_sk_storage_get(&sk_st, (void *)0, 0, 0);
	if (v)
		st_sink = v->count;
	return 0;
}
SEC("fentry/tcp_v4_connect") int st_sk_scalar_owner(u64 *ctx)
{
	struct st_val *v = bpf_sk_storage_get(&sk_st, (void *)ctx[2], 0, 0);
	if (v)
		st_sink = v->count;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int st_cgrp_wrong_owner(u64 *ctx)
{
	struct st_val *v = bpf_cgrp_storage_get(&task_st, (struct cgroup *)bpf_get_current_task_btf(), 0, 0);
	if (v)
		st_sink = v->count;
	return 0;
}
SEC("lsm/socket_sock_rcv_skb") int st_sk_lsm_sock(u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	struct st_val *v = bpf_sk_storage_get(&sk_st, sk, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (v)
		v->count++;
	return 0;
}
SEC("lsm/file_open") int st_inode_scalar_owner(u64 *ctx)
{
	struct st_val *v = bpf_inode_storage_get(&inode_st, (void *)bpf_get_current_task(), 0, 0);
	if (v)
		st_sink = v->count;
	return 0;
}
SEC("lsm/file_open") int st_task_and_inode(u64 *ctx)
{
	struct file *f = (struct file *)ctx[0];
	struct st_val *t = bpf_task_storage_get(&task_st, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	struct st_val *i = bpf_inode_storage_get(&inode_st, f->f_inode, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (t && i)
		t->last = i->count;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int st_task_delete_null(u64 *ctx)
{
	st_sink = bpf_task_storage_delete(&task_st, 0);
	return 0;
}
SEC("lsm/file_open") int st_inode_null_owner(u64 *ctx)
{
	struct st_val *v = bpf_inode_storage_get(&inode_st, 0, 0, 0);
	if (v)
		st_sink = v->count;
	return 0;
}
SEC("fentry/tcp_v4_connect") int st_sk_null_owner(u64 *ctx)
{
	struct st_val *v = bpf_sk_storage_get(&sk_st, 0, 0, 0);
	if (v)
		st_sink = v->count;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int st_task_value_write_past(u64 *ctx)
{
	struct st_val *v = bpf_task_storage_get(&task_st, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (v)
		((u32 *)v)[4] = 1;
	return 0;
}

char _license[] SEC("license") = "GPL";
