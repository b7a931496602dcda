/* PTR_TO_BTF_ID dereferences (btf_struct_access): members, nested members, arrays, unions,
 * pointer members becoming PTR_TO_BTF_ID, char pointers becoming scalars, writes, variable
 * offsets, and the pointers helpers return. */
#include "common.h"

u64 sink;

SEC("fentry/tcp_v4_connect") int bt_nested_member(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	sink = sk->__sk_common.skc_family;
	return 0;
}
SEC("fentry/tcp_v4_connect") int bt_member_u32(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	sink = sk->__sk_common.skc_daddr + sk->sk_mark;
	return 0;
}
SEC("fentry/tcp_v4_connect") int bt_ptr_member(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	sink = sk->sk_socket->type;
	return 0;
}
SEC("fentry/tcp_v4_connect") int bt_ptr_chain(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	sink = sk->sk_socket->file->f_inode->i_ino;
	return 0;
}
SEC("fentry/tcp_v4_connect") int bt_back_pointer(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	sink = sk->sk_socket->sk->sk_rcvbuf;
	return 0;
}
SEC("fentry/tcp_v4_connect") int bt_union_array(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	sink = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32[2];
	return 0;
}
SEC("fentry/tcp_v4_connect") int bt_union_byte(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	sink = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr8[15];
	return 0;
}
SEC("fentry/tcp_v4_connect") int bt_array_var_index(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	u32 i = ctx[2] & 3;
	sink = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32[i];
	return 0;
}
SEC("fentry/tcp_v4_connect") int bt_write_member(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	sk->sk_mark = 7;
	return 0;
}
SEC("fentry/tcp_v4_connect") int bt_write_ptr_member(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	sk->sk_socket = 0;
	return 0;
}
SEC("fentry/tcp_v4_connect") int bt_sockaddr_in_cast(u64 *ctx)
{
	struct sockaddr_in *sin = (void *)ctx[1];
	sink = sin->sin_port;
	return 0;
}
SEC("fentry/tcp_v4_connect") int bt_char_array(u64 *ctx)
{
	struct sockaddr *sa = (void *)ctx[1];
	sink = sa->sa_data[13];
	return 0;
}
SEC("fentry/tcp_v4_connect") int bt_null_check(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	struct socket *so = sk->sk_socket;
	if (!so)
		return 0;
	sink = so->type;
	return 0;
}
SEC("fentry/tcp_v4_connect") int bt_probe_read_member(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	struct socket *so;
	bpf_probe_read_kernel(&so, sizeof(so), &sk->sk_socket);
	sink = (u64)so;
	return 0;
}
SEC("fentry/tcp_v4_connect") int bt_ptr_escape_to_map(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	sink = (u64)sk->sk_socket;
	return 0;
}
SEC("fentry/bpf_fentry_test7") int bt_self_chain(u64 *ctx)
{
	struct bpf_fentry_test_t *t = (void *)ctx[0];
	sink = (u64)t->a->a->a;
	return 0;
}
SEC("lsm/file_open") int bt_lsm_file_inode(u64 *ctx)
{
	struct file *f = (void *)ctx[0];
	sink = f->f_inode->i_mode + f->f_flags;
	return 0;
}
SEC("lsm/file_open") int bt_lsm_dentry_inode(u64 *ctx)
{
	struct file *f = (void *)ctx[0];
	sink = f->f_path.dentry->d_inode->i_ino;
	return 0;
}
SEC("lsm/file_open") int bt_lsm_dentry_iname(u64 *ctx)
{
	struct file *f = (void *)ctx[0];
	sink = f->f_path.dentry->d_iname[3];
	return 0;
}
SEC("lsm/file_open") int bt_lsm_qstr_name_deref(u64 *ctx)
{
	struct file *f = (void *)ctx[0];
	sink = f->f_path.dentry->d_name.name[0];
	return 0;
}
SEC("lsm/bprm_check_security") int bt_lsm_char_ptr_deref(u64 *ctx)
{
	struct linux_binprm *b = (void *)ctx[0];
	sink = b->filename[0];
	return 0;
}
SEC("lsm/bprm_check_security") int bt_lsm_char_ptr_value(u64 *ctx)
{
	struct linux_binprm *b = (void *)ctx[0];
	sink = (u64)b->filename + b->file->f_flags;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int bt_current_task(u64 *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	sink = t->pid + t->comm[1];
	return 0;
}
SEC("fentry/bpf_fentry_test1") int bt_current_task_parent(u64 *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	sink = t->real_parent->tgid;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int bt_current_task_write(u64 *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	t->pid = 0;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int bt_current_task_comm_var(u64 *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	sink = t->comm[ctx[0] & 15];
	return 0;
}

char _license[] SEC("license") = "GPL";
