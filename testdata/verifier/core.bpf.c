/* libbpf-style CO-RE in the shapes tools write: bpf_core_read chains through
 * preserve_access_index structs, field existence and size, type existence and size, enum
 * value relocations, a bitfield read, and relocations the kernel cannot satisfy (libbpf and
 * cilium/ebpf poison the instruction: the verifier then refuses it unless it is dead code). */
#include "common.h"

/* bpf_core_read.h's shapes, written out */
#define core_read(dst, sz, src) bpf_probe_read_kernel(dst, sz, (const void *)__builtin_preserve_access_index(src))
#define field_exists(f) __builtin_preserve_field_info(f, 2)
#define field_size(f) __builtin_preserve_field_info(f, 1)
#define field_off(f) __builtin_preserve_field_info(f, 0)
#define field_lshift(f) __builtin_preserve_field_info(f, 4)
#define field_rshift(f) __builtin_preserve_field_info(f, 5)
#define type_exists(t) __builtin_preserve_type_info(*(typeof(t) *)0, 0)
#define type_size(t) __builtin_preserve_type_info(*(typeof(t) *)0, 1)
#define enum_exists(e, v) __builtin_preserve_enum_value(*(typeof(e) *)v, 0)
#define enum_value(e, v) __builtin_preserve_enum_value(*(typeof(e) *)v, 1)

/* flavours: the ___suffix is dropped when matching kernel types */
struct task_struct___old { long state; } CORE;
struct task_struct___new { unsigned int __state; u64 start_time; } CORE;
struct task_struct___bits { unsigned int sched_reset_on_fork : 1; unsigned int sched_contributes_to_load : 1; } CORE;
struct no_such_struct___x { int a; } CORE;
enum skb_drop_reason___x { SKB_DROP_REASON_NOT_SPECIFIED___x = 2, SKB_DROP_REASON_NO_SUCH___x = 9999 };
enum skb_drop_reason { SKB_DROP_REASON_NOT_SPECIFIED = 2, SKB_DROP_REASON_NO_SOCKET = 3 };

u64 core_sink;

SEC("fentry/tcp_v4_connect") int core_read_chain(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	struct socket *so = 0;
	struct file *f = 0;
	unsigned long ino = 0;
	core_read(&so, sizeof(so), &sk->sk_socket);
	core_read(&f, sizeof(f), &so->file);
	core_read(&ino, sizeof(ino), &f->f_inode->i_ino);
	core_sink = ino;
	return 0;
}
SEC("fentry/tcp_v4_connect") int core_direct_chain(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	core_sink = sk->sk_socket->file->f_inode->i_ino + sk->__sk_common.skc_dport;
	return 0;
}
SEC("tp_btf/sched_switch") int core_parent_tgid(u64 *ctx)
{
	struct task_struct *t = (void *)ctx[2];
	int tgid = 0;
	struct task_struct *parent = 0;
	core_read(&parent, sizeof(parent), &t->real_parent);
	core_read(&tgid, sizeof(tgid), &parent->tgid);
	core_sink = tgid;
	return 0;
}
/* task_struct.state became __state in 5.14: the tools' two-branch read */
SEC("tp_btf/sched_switch") int core_state_either(u64 *ctx)
{
	void *t = (void *)ctx[1];
	long state = 0;
	if (field_exists(((struct task_struct___new *)t)->__state)) {
		unsigned int s = 0;
		core_read(&s, sizeof(s), &((struct task_struct___new *)t)->__state);
		state = s;
	} else {
		core_read(&state, sizeof(state), &((struct task_struct___old *)t)->state);
	}
	core_sink = state;
	return 0;
}
SEC("tp_btf/sched_switch") int core_state_old_unguarded(u64 *ctx)
{
	struct task_struct___old *t = (void *)ctx[1];
	long state = 0;
	core_read(&state, sizeof(state), &t->state);
	core_sink = state;
	return 0;
}
SEC("tp_btf/sched_switch") int core_state_old_direct(u64 *ctx)
{
	struct task_struct___old *t = (void *)ctx[1];
	core_sink = t->state;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int core_field_size(u64 *ctx)
{
	struct task_struct___new *t = 0;
	core_sink = field_size(t->__state) + field_size(t->start_time) + field_off(t->start_time);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int core_type_exists(u64 *ctx)
{
	core_sink = type_exists(struct sock) * 100 + type_exists(struct no_such_struct___x) + type_size(struct sock);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int core_enum_value(u64 *ctx)
{
	core_sink = enum_value(enum skb_drop_reason, SKB_DROP_REASON_NO_SOCKET);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int core_enum_exists_guard(u64 *ctx)
{
	if (enum_exists(enum skb_drop_reason___x, SKB_DROP_REASON_NO_SUCH___x))
		core_sink = enum_value(enum skb_drop_reason___x, SKB_DROP_REASON_NO_SUCH___x);
	else
		core_sink = 1;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int core_enum_missing(u64 *ctx)
{
	core_sink = enum_value(enum skb_drop_reason___x, SKB_DROP_REASON_NO_SUCH___x);
	return 0;
}
SEC("tp_btf/sched_switch") int core_bitfield(u64 *ctx)
{
	struct task_struct___bits *t = (void *)ctx[2];
	u64 v = 0;
	unsigned int off = field_off(t->sched_reset_on_fork);
	unsigned int sz = field_size(t->sched_reset_on_fork);
	if (sz > sizeof(v))
		return 0;
	bpf_probe_read_kernel(&v, sz, (char *)t + off);
	v <<= field_lshift(t->sched_reset_on_fork);
	v >>= field_rshift(t->sched_reset_on_fork);
	core_sink = v;
	return 0;
}
/* skb_drop_reason in a tp_btf argument compared with a relocated enumerator */
SEC("tp_btf/kfree_skb") int core_drop_reason(u64 *ctx)
{
	if (ctx[2] == enum_value(enum skb_drop_reason, SKB_DROP_REASON_NO_SOCKET))
		core_sink++;
	return 0;
}
/* BPF_CORE_READ(sk, sk_socket, file, f_inode, i_ino): one probe read per link */
SEC("fentry/tcp_v4_connect") int core_read_chain4(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	struct socket *so = 0;
	struct file *f = 0;
	struct inode *ino = 0;
	unsigned long n = 0;
	core_read(&so, sizeof(so), &sk->sk_socket);
	core_read(&f, sizeof(f), &so->file);
	core_read(&ino, sizeof(ino), &f->f_inode);
	core_read(&n, sizeof(n), &ino->i_ino);
	core_sink = n;
	return 0;
}
/* bpf_core_type_id_kernel: the kernel's BTF id of a type, a constant */
SEC("fentry/bpf_fentry_test1") int core_type_id_kernel(u64 *ctx)
{
	core_sink = __builtin_btf_type_id(*(typeof(struct task_struct) *)0, 1);
	return 0;
}
/* bpf_core_field_size as a read length (the field's size may differ between kernels) */
SEC("fentry/tcp_v4_connect") int core_field_size_guarded_read(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	u64 v = 0;
	unsigned int sz = field_size(sk->sk_mark);
	if (sz <= sizeof(v))
		core_read(&v, sz, &sk->sk_mark);
	core_sink = v;
	return 0;
}

char _license[] SEC("license") = "GPL";
