/* struct_ops programs (BPF_PROG_TYPE_STRUCT_OPS): a Reno-like TCP congestion control with a
 * DCTCP-like private state, bpf_dummy_ops programs, and the ways such programs fail (ctx
 * access past the member's arguments, ctx writes, writes outside what the table allows,
 * pointer and missing returns, an unsupported member, sleepable where the table refuses).
 * The member each program implements is decided by the .struct_ops.link map pointing at
 * it, as libbpf and cilium/ebpf do; the section's name after the slash is ignored. */
#include "common.h"

struct ack_sample { u32 pkts_acked; s32 rtt_us; u32 in_flight; } CORE;
struct inet_connection_sock { u8 icsk_ca_state; u64 icsk_ca_priv[13]; } CORE;
struct tcp_sock {
	struct inet_connection_sock inet_conn;
	u32 snd_cwnd;
	u32 snd_cwnd_cnt;
	u32 snd_ssthresh;
	u32 prior_cwnd;
	u32 srtt_us;
	u32 mss_cache;
	u8 ecn_flags;
} CORE;

/* the congestion control's private state, in icsk_ca_priv */
struct rn_state {
	u32 loss_cwnd;
	u32 min_rtt_us;
	u32 acked_bytes;
	u32 losses;
};

#define TCP_CA_Loss 4
#define CA_EVENT_LOSS 5

static inline struct tcp_sock *tcp_sk(struct sock *sk) { return (struct tcp_sock *)sk; }
static inline struct rn_state *ca(struct sock *sk) { return (void *)((struct inet_connection_sock *)sk)->icsk_ca_priv; }

SEC("struct_ops/rn_init") void rn_init(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	struct rn_state *s = ca(sk);

	s->loss_cwnd = 0;
	s->min_rtt_us = 0xffffffff;
	s->acked_bytes = 0;
	s->losses = 0;
	tcp_sk(sk)->snd_ssthresh = 0x7fffffff;
}

SEC("struct_ops/rn_release") void rn_release(u64 *ctx) {}

SEC("struct_ops/rn_ssthresh") u32 rn_ssthresh(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	struct tcp_sock *tp = tcp_sk(sk);
	u32 half = tp->snd_cwnd >> 1;

	ca(sk)->loss_cwnd = tp->snd_cwnd;
	return half > 2 ? half : 2;
}

/* slow start below ssthresh, then one segment per window (tcp_reno_cong_avoid's rule) */
SEC("struct_ops/rn_cong_avoid") void rn_cong_avoid(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	u32 acked = ctx[2];
	struct tcp_sock *tp = tcp_sk(sk);
	u32 cwnd = tp->snd_cwnd;

	if (cwnd < tp->snd_ssthresh) {
		u32 next = cwnd + acked;

		if (next > tp->snd_ssthresh)
			next = tp->snd_ssthresh;
		acked -= next - cwnd;
		tp->snd_cwnd = next;
		cwnd = next;
		if (!acked)
			return;
	}
	if (tp->snd_cwnd_cnt >= cwnd) {
		tp->snd_cwnd_cnt = 0;
		tp->snd_cwnd = cwnd + 1;
	}
	tp->snd_cwnd_cnt += acked;
}

SEC("struct_ops/rn_set_state") void rn_set_state(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	u8 state = ctx[1];

	if (state == TCP_CA_Loss)
		ca(sk)->losses++;
}

SEC("struct_ops/rn_cwnd_event") void rn_cwnd_event(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];

	if (ctx[1] == CA_EVENT_LOSS)
		ca(sk)->acked_bytes = 0;
}

SEC("struct_ops/rn_pkts_acked") void rn_pkts_acked(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	const struct ack_sample *sample = (void *)ctx[1];
	struct rn_state *s = ca(sk);
	s32 rtt = sample->rtt_us;

	if (rtt > 0 && (u32)rtt < s->min_rtt_us)
		s->min_rtt_us = rtt;
	s->acked_bytes += sample->pkts_acked * tcp_sk(sk)->mss_cache;
}

SEC("struct_ops/rn_undo_cwnd") u32 rn_undo_cwnd(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	u32 cwnd = tcp_sk(sk)->snd_cwnd, loss = ca(sk)->loss_cwnd;

	return cwnd > loss ? cwnd : loss;
}

SEC("struct_ops/rn_min_tso_segs") u32 rn_min_tso_segs(u64 *ctx) { return 2; }

SEC("struct_ops/rn_sndbuf_expand") u32 rn_sndbuf_expand(u64 *ctx) { return 3; }

/* ECN: tcp_sock's ecn_flags is among the fields a congestion control may write */
SEC("struct_ops/rn_in_ack_event") void rn_in_ack_event(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];

	if (ctx[1] & 4)
		tcp_sk(sk)->ecn_flags = 0;
}

/* --- failures ------------------------------------------------------------------------- */

/* srtt_us is tcp_sock's, but not among the fields bpf_tcp_ca lets a program write */
SEC("struct_ops/bad_write_srtt") void bad_write_srtt(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];

	tcp_sk(sk)->srtt_us = 1;
}

/* ssthresh has one argument: ctx[1] is past it */
SEC("struct_ops/bad_ctx_arg") u32 bad_ctx_arg(u64 *ctx) { return ctx[1]; }

/* the context is read-only */
SEC("struct_ops/bad_ctx_write") void bad_ctx_write(u64 *ctx) { ctx[0] = 0; }

/* a narrow load of the pointer argument */
SEC("struct_ops/bad_ctx_narrow") u32 bad_ctx_narrow(u64 *ctx) { return *(u32 *)ctx; }

/* the member returns u32: the socket pointer would leak */
SEC("struct_ops/bad_ret_ptr") u32 bad_ret_ptr(u64 *ctx) { return (u32)(unsigned long)(void *)ctx[0] + (u32)ctx[0]; }

/* returning the socket itself */
SEC("struct_ops/bad_ret_sock") u64 bad_ret_sock(u64 *ctx) { return ctx[0]; }

/* reading past struct tcp_sock's end */
SEC("struct_ops/bad_read_past") u32 bad_read_past(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];

	return *(u32 *)((char *)sk + 0x4000);
}

/* get_info is the member the kernel does not let BPF implement */
SEC("struct_ops/bad_get_info") u64 bad_get_info(u64 *ctx) { return 0; }

/* a sleepable congestion control callback */
SEC("struct_ops.s/sl_cong_avoid") void sl_cong_avoid(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];

	tcp_sk(sk)->snd_cwnd = 10;
}

typedef unsigned long uptr;
struct tcp_congestion_ops {
	u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, u32 ack, u32 acked);
	void (*set_state)(struct sock *sk, u8 new_state);
	void (*cwnd_event)(struct sock *sk, int ev);
	void (*in_ack_event)(struct sock *sk, u32 flags);
	void (*pkts_acked)(struct sock *sk, const struct ack_sample *sample);
	u32 (*min_tso_segs)(struct sock *sk);
	u32 (*undo_cwnd)(struct sock *sk);
	u32 (*sndbuf_expand)(struct sock *sk);
	uptr (*get_info)(struct sock *sk, u32 ext, int *attr, void *info);
	char name[16];
	void (*init)(struct sock *sk);
	void (*release)(struct sock *sk);
};

SEC(".struct_ops.link") struct tcp_congestion_ops rn = {
	.init = (void *)rn_init,
	.release = (void *)rn_release,
	.ssthresh = (void *)rn_ssthresh,
	.cong_avoid = (void *)rn_cong_avoid,
	.set_state = (void *)rn_set_state,
	.cwnd_event = (void *)rn_cwnd_event,
	.in_ack_event = (void *)rn_in_ack_event,
	.pkts_acked = (void *)rn_pkts_acked,
	.undo_cwnd = (void *)rn_undo_cwnd,
	.min_tso_segs = (void *)rn_min_tso_segs,
	.sndbuf_expand = (void *)rn_sndbuf_expand,
	.name = "bpf_rn",
};

SEC(".struct_ops.link") struct tcp_congestion_ops bad1 = {
	.cong_avoid = (void *)bad_write_srtt,
	.ssthresh = (void *)bad_ctx_arg,
	.init = (void *)bad_ctx_write,
	.undo_cwnd = (void *)bad_ctx_narrow,
	.min_tso_segs = (void *)bad_ret_ptr,
	.sndbuf_expand = (void *)bad_read_past,
	.get_info = (void *)bad_get_info,
	.name = "bad1",
};

SEC(".struct_ops.link") struct tcp_congestion_ops bad2 = {
	.cong_avoid = (void *)sl_cong_avoid,
	.ssthresh = (void *)bad_ret_sock,
	.name = "bad2",
};

/* --- a congestion control built on the kernel's Reno helpers (bpf_tcp_ca's kfunc set) ---- */

#define __ksym __attribute__((section(".ksyms")))
extern u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, u32 ack, u32 acked) __ksym;
extern u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;
extern u32 tcp_slow_start(struct tcp_sock *tp, u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, u32 w, u32 acked) __ksym;

SEC("struct_ops/kr_ssthresh") u32 kr_ssthresh(u64 *ctx) { return tcp_reno_ssthresh((void *)ctx[0]); }

SEC("struct_ops/kr_cong_avoid") void kr_cong_avoid(u64 *ctx)
{
	tcp_reno_cong_avoid((void *)ctx[0], ctx[1], ctx[2]);
}

SEC("struct_ops/kr_undo_cwnd") u32 kr_undo_cwnd(u64 *ctx) { return tcp_reno_undo_cwnd((void *)ctx[0]); }

/* slow start, then additive increase by one segment per twice the window */
SEC("struct_ops/ka_cong_avoid") void ka_cong_avoid(u64 *ctx)
{
	struct tcp_sock *tp = tcp_sk((void *)ctx[0]);
	u32 acked = ctx[2];

	if (tp->snd_cwnd < tp->snd_ssthresh) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	tcp_cong_avoid_ai(tp, 2 * tp->snd_cwnd, acked);
}

/* the socket argument of a kfunc must be the socket, not the context */
SEC("struct_ops/kbad_ctx_arg") u32 kbad_ctx_arg(u64 *ctx) { return tcp_reno_ssthresh((void *)ctx); }

SEC(".struct_ops.link") struct tcp_congestion_ops kreno = {
	.ssthresh = (void *)kr_ssthresh,
	.cong_avoid = (void *)kr_cong_avoid,
	.undo_cwnd = (void *)kr_undo_cwnd,
	.name = "bpf_kreno",
};

SEC(".struct_ops.link") struct tcp_congestion_ops kai = {
	.ssthresh = (void *)kbad_ctx_arg,
	.cong_avoid = (void *)ka_cong_avoid,
	.undo_cwnd = (void *)kr_undo_cwnd,
	.name = "bpf_kai",
};

/* --- bpf_dummy_ops ---------------------------------------------------------------------- */

struct bpf_dummy_ops_state { int val; } CORE;

/* test_1 with the NULL check bpf_dummy_ops' stubs ask for (its argument may be NULL) */
SEC("struct_ops/dummy_test_1") int dummy_test_1(u64 *ctx)
{
	struct bpf_dummy_ops_state *cb = (void *)ctx[0];

	if (!cb)
		return 1;
	return cb->val;
}

/* the same without the check */
SEC("struct_ops/dummy_test_1_nocheck") int dummy_test_1_nocheck(u64 *ctx)
{
	struct bpf_dummy_ops_state *cb = (void *)ctx[0];

	return cb->val;
}

/* test_2's five arguments, summed into the state: the state is writable */
SEC("struct_ops/dummy_test_2") int dummy_test_2(u64 *ctx)
{
	struct bpf_dummy_ops_state *cb = (void *)ctx[0];
	int a1 = ctx[1];
	unsigned short a2 = ctx[2];
	char a3 = ctx[3];
	unsigned long a4 = ctx[4];

	if (cb)
		cb->val = a1 + a2 + a3 + (int)a4;
	return 0;
}

/* test_2 has five arguments: ctx[5] is past them */
SEC("struct_ops/dummy_test_2_arg6") int dummy_test_2_arg6(u64 *ctx) { return ctx[5]; }

/* a write past the state (it is one int) */
SEC("struct_ops/dummy_write_past") int dummy_write_past(u64 *ctx)
{
	struct bpf_dummy_ops_state *cb = (void *)ctx[0];

	if (cb)
		((int *)cb)[1] = 0;
	return 0;
}

/* test_sleepable is the member meant for sleepable programs (6.4 on) */
SEC("struct_ops.s/dummy_sleepable") int dummy_sleepable(u64 *ctx)
{
	struct bpf_dummy_ops_state *cb = (void *)ctx[0];

	if (cb)
		return cb->val;
	return 0;
}

/* a sleepable program for test_1 */
SEC("struct_ops.s/dummy_sleepable_test_1") int dummy_sleepable_test_1(u64 *ctx) { return 0; }

struct bpf_dummy_ops {
	int (*test_1)(struct bpf_dummy_ops_state *cb);
	int (*test_2)(struct bpf_dummy_ops_state *cb, int a1, unsigned short a2, char a3, unsigned long a4);
	int (*test_sleepable)(struct bpf_dummy_ops_state *cb);
};

SEC(".struct_ops.link") struct bpf_dummy_ops dummy = {
	.test_1 = (void *)dummy_test_1,
	.test_2 = (void *)dummy_test_2,
};
SEC(".struct_ops.link") struct bpf_dummy_ops dummy_bad1 = {
	.test_1 = (void *)dummy_test_1_nocheck,
	.test_2 = (void *)dummy_test_2_arg6,
};
SEC(".struct_ops.link") struct bpf_dummy_ops dummy_bad2 = {
	.test_1 = (void *)dummy_sleepable_test_1,
	.test_2 = (void *)dummy_write_past,
};
SEC(".struct_ops.link") struct bpf_dummy_ops dummy_sl = {
	.test_sleepable = (void *)dummy_sleepable,
};

char _license[] SEC("license") = "GPL";
