/* What struct_ops programs may write through their pointer arguments, field by field: the
 * tcp_sock fields bpf_tcp_ca lets a congestion control set (pacing rate and status, the
 * private area's whole range, a pending ACK, app_limited) and the ones it does not, writes
 * wider than their field, a write through a pointer read from the socket (another struct);
 * bpf_dummy_ops' state; a sched_ext task's slice, vtime and disallow; a Qdisc's limit and
 * flags; narrow loads of scalar arguments. */
#include "common.h"

struct sock___w { unsigned long sk_pacing_rate; u32 sk_pacing_status; struct socket *sk_socket; } CORE;
struct inet_connection_sock___w { struct { u8 pending; } icsk_ack; u64 icsk_ca_priv[13]; } CORE;
struct tcp_sock___w { u32 snd_cwnd; u32 app_limited; u32 snd_cwnd_stamp; u32 prior_cwnd; u32 snd_cwnd_clamp; } CORE;

SEC("struct_ops/w_pacing") void w_pacing(u64 *ctx)
{
	struct sock___w *sk = (void *)ctx[0];

	sk->sk_pacing_rate = 125000;
	sk->sk_pacing_status = 1;
}

SEC("struct_ops/w_ack_pending") void w_ack_pending(u64 *ctx)
{
	struct inet_connection_sock___w *icsk = (void *)ctx[0];

	icsk->icsk_ack.pending = 1;
}

SEC("struct_ops/w_app_limited") void w_app_limited(u64 *ctx)
{
	struct tcp_sock___w *tp = (void *)ctx[0];

	tp->app_limited = 0;
}

/* the last 8 bytes of icsk_ca_priv, and 8 bytes starting 4 before its end */
SEC("struct_ops/w_priv_last") void w_priv_last(u64 *ctx)
{
	struct inet_connection_sock___w *icsk = (void *)ctx[0];

	icsk->icsk_ca_priv[12] = 1;
}

SEC("struct_ops/w_priv_over") void w_priv_over(u64 *ctx)
{
	struct inet_connection_sock___w *icsk = (void *)ctx[0];

	*(u64 *)((char *)&icsk->icsk_ca_priv[12] + 4) = 1;
}

/* 8 bytes into the 4-byte snd_cwnd */
SEC("struct_ops/w_cwnd_wide") void w_cwnd_wide(u64 *ctx)
{
	struct tcp_sock___w *tp = (void *)ctx[0];

	*(u64 *)&tp->snd_cwnd = 10;
}

SEC("struct_ops/w_cwnd_stamp") void w_cwnd_stamp(u64 *ctx)
{
	struct tcp_sock___w *tp = (void *)ctx[0];

	tp->snd_cwnd_stamp = 0;
}

SEC("struct_ops/w_clamp") void w_clamp(u64 *ctx)
{
	struct tcp_sock___w *tp = (void *)ctx[0];

	tp->snd_cwnd_clamp = 100;
}

/* sk->sk_socket is a struct socket: not the congestion control's to write */
SEC("struct_ops/w_socket") void w_socket(u64 *ctx)
{
	struct sock___w *sk = (void *)ctx[0];
	struct socket *so = sk->sk_socket;

	if (so)
		so->type = 0;
}

/* reading through the socket's socket pointer is fine */
SEC("struct_ops/r_socket") u32 r_socket(u64 *ctx)
{
	struct sock___w *sk = (void *)ctx[0];
	struct socket *so = sk->sk_socket;

	return so ? so->type : 0;
}

/* set_state's u8 argument read as one byte, cong_avoid's u32 ack as four */
SEC("struct_ops/r_narrow_state") void r_narrow_state(u64 *ctx)
{
	struct tcp_sock___w *tp = (void *)ctx[0];

	if (*(u8 *)&ctx[1] == 4)
		tp->snd_cwnd = 1;
}

SEC("struct_ops/r_narrow_ack") void r_narrow_ack(u64 *ctx)
{
	struct tcp_sock___w *tp = (void *)ctx[0];

	if (*(u32 *)&ctx[1] == 0)
		tp->snd_cwnd = 1;
}

typedef unsigned long uptr;
struct tcp_congestion_ops {
	u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, u32 ack, u32 acked);
	void (*set_state)(struct sock *sk, u8 new_state);
	void (*cwnd_event)(struct sock *sk, int ev);
	void (*in_ack_event)(struct sock *sk, u32 flags);
	u32 (*undo_cwnd)(struct sock *sk);
	u32 (*min_tso_segs)(struct sock *sk);
	u32 (*sndbuf_expand)(struct sock *sk);
	char name[16];
	void (*init)(struct sock *sk);
	void (*release)(struct sock *sk);
};

SEC(".struct_ops.link") struct tcp_congestion_ops w1 = {
	.init = (void *)w_pacing, .release = (void *)w_ack_pending, .cwnd_event = (void *)w_app_limited,
	.in_ack_event = (void *)w_priv_last, .cong_avoid = (void *)r_narrow_ack, .set_state = (void *)r_narrow_state,
	.undo_cwnd = (void *)r_socket, .name = "w1",
};
SEC(".struct_ops.link") struct tcp_congestion_ops w2 = {
	.init = (void *)w_priv_over, .release = (void *)w_cwnd_wide, .cwnd_event = (void *)w_cwnd_stamp,
	.in_ack_event = (void *)w_clamp, .cong_avoid = (void *)w_socket, .name = "w2",
};

/* --- bpf_dummy_ops ------------------------------------------------------------------- */

struct bpf_dummy_ops_state { int val; } CORE;

SEC("struct_ops/d_write_val") int d_write_val(u64 *ctx)
{
	struct bpf_dummy_ops_state *cb = (void *)ctx[0];

	if (cb)
		cb->val = (int)ctx[1] + *(unsigned short *)&ctx[2];
	return 0;
}

/* a one-byte write inside the state */
SEC("struct_ops/d_write_byte") int d_write_byte(u64 *ctx)
{
	struct bpf_dummy_ops_state *cb = (void *)ctx[0];

	if (cb)
		*((u8 *)&cb->val + 3) = 1;
	return 0;
}

struct bpf_dummy_ops {
	int (*test_1)(struct bpf_dummy_ops_state *cb);
	int (*test_2)(struct bpf_dummy_ops_state *cb, int a1, unsigned short a2, char a3, unsigned long a4);
};
SEC(".struct_ops.link") struct bpf_dummy_ops dw = { .test_1 = (void *)d_write_byte, .test_2 = (void *)d_write_val };

/* --- sched_ext_ops ------------------------------------------------------------------- */

struct sched_ext_entity___w { u64 slice; u64 dsq_vtime; u8 disallow; } CORE;
struct task_struct___w { int pid; struct sched_ext_entity___w scx; struct task_struct___w *real_parent; } CORE;
struct scx_init_task_args { u8 fork; } CORE;

/* init_task may set disallow (and may sleep) */
SEC("struct_ops.s/s_init_task") s32 s_init_task(u64 *ctx)
{
	struct task_struct___w *p = (void *)ctx[0];
	struct scx_init_task_args *args = (void *)ctx[1];

	if (args->fork)
		p->scx.disallow = 1;
	return 0;
}

/* half of the slice */
SEC("struct_ops/s_slice_narrow") void s_slice_narrow(u64 *ctx)
{
	struct task_struct___w *p = (void *)ctx[0];

	*(u32 *)&p->scx.slice = 0;
}

/* the slice of the parent task: a pointer read from the task */
SEC("struct_ops/s_parent_slice") void s_parent_slice(u64 *ctx)
{
	struct task_struct___w *p = (void *)ctx[0];
	struct task_struct___w *parent = p->real_parent;

	parent->scx.slice = 0;
}

/* a sleepable callback that may not sleep */
SEC("struct_ops.s/s_enqueue_sleep") void s_enqueue_sleep(u64 *ctx) {}

/* cpu_online may sleep */
SEC("struct_ops.s/s_cpu_online") void s_cpu_online(u64 *ctx) {}

struct sched_ext_ops {
	void (*enqueue)(struct task_struct___w *p, u64 enq_flags);
	void (*running)(struct task_struct___w *p);
	s32 (*init_task)(struct task_struct___w *p, struct scx_init_task_args *args);
	void (*cpu_online)(s32 cpu);
	char name[128];
};
SEC(".struct_ops.link") struct sched_ext_ops sw1 = {
	.init_task = (void *)s_init_task, .enqueue = (void *)s_slice_narrow, .running = (void *)s_parent_slice,
	.cpu_online = (void *)s_cpu_online, .name = "sw1",
};
SEC(".struct_ops.link") struct sched_ext_ops sw2 = { .enqueue = (void *)s_enqueue_sleep, .name = "sw2" };

/* --- Qdisc_ops ------------------------------------------------------------------------ */

struct Qdisc___w { unsigned int flags; u32 limit; } CORE;

SEC("struct_ops/q_init_limit") int q_init_limit(u64 *ctx)
{
	struct Qdisc___w *sch = (void *)ctx[0];

	sch->limit = 1000;
	return 0;
}

SEC("struct_ops/q_reset_flags") void q_reset_flags(u64 *ctx)
{
	struct Qdisc___w *sch = (void *)ctx[0];

	sch->flags = 0;
}

struct Qdisc_ops {
	int (*init)(struct Qdisc___w *sch, void *opt, void *extack);
	void (*reset)(struct Qdisc___w *sch);
	char id[16];
};
SEC(".struct_ops.link") struct Qdisc_ops qw = { .init = (void *)q_init_limit, .reset = (void *)q_reset_flags, .id = "qw" };

char _license[] SEC("license") = "GPL";
