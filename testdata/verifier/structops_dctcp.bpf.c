/* A DCTCP-like congestion control in the shape real ones take: per-socket state in a
 * socket storage map next to icsk_ca_priv, an immediate ACK through bpf_tcp_send_ack when
 * the CE state flips, a fallback to another algorithm by bpf_setsockopt(TCP_CONGESTION)
 * from init, bpf_getsockopt of the current one, ECN flags set and cleared; and the
 * mistakes: bpf_setsockopt from release, bpf_tcp_send_ack handed the context, a socket
 * storage value used without its NULL check. */
#include "common.h"

static long (*bpf_setsockopt)(void *sk, int level, int optname, void *optval, int optlen) = (void *)49;
static long (*bpf_getsockopt)(void *sk, int level, int optname, void *optval, int optlen) = (void *)57;
static long (*bpf_tcp_send_ack)(void *tp, u32 rcv_nxt) = (void *)116;

#define SOL_TCP 6
#define TCP_CONGESTION 13
#define TCP_ECN_OK 1
#define TCP_ECN_DEMAND_CWR 4

struct tcp_sock___d { u32 rcv_nxt; u32 snd_cwnd; u32 snd_ssthresh; u32 delivered; u32 delivered_ce; u8 ecn_flags; } CORE;
struct inet_connection_sock___d { u64 icsk_ca_priv[13]; } CORE;

struct dc_state { u32 alpha; u32 prior_rcv_nxt; u32 ce_state; u32 old_delivered; };
struct dc_stats { u64 ce_events; u64 last_ns; };

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct dc_stats);
} dc_sk SEC(".maps");

static char fallback[] = "cubic";

static inline struct dc_state *dc(void *sk) { return (void *)((struct inet_connection_sock___d *)sk)->icsk_ca_priv; }

SEC("struct_ops/dc_init") void dc_init(u64 *ctx)
{
	struct tcp_sock___d *tp = (void *)ctx[0];
	struct dc_state *s = dc(tp);

	if (!(tp->ecn_flags & TCP_ECN_OK)) {
		/* no ECN on this connection: hand it to another algorithm */
		bpf_setsockopt(tp, SOL_TCP, TCP_CONGESTION, fallback, sizeof(fallback));
		return;
	}
	s->alpha = 1024;
	s->prior_rcv_nxt = tp->rcv_nxt;
	s->ce_state = 0;
	s->old_delivered = tp->delivered;
}

SEC("struct_ops/dc_ssthresh") u32 dc_ssthresh(u64 *ctx)
{
	struct tcp_sock___d *tp = (void *)ctx[0];
	u32 cwnd = tp->snd_cwnd;
	u32 red = (cwnd * dc(tp)->alpha) >> 11;

	return cwnd - red > 2 ? cwnd - red : 2;
}

/* on a CE change, acknowledge what was received so far at once */
SEC("struct_ops/dc_cwnd_event") void dc_cwnd_event(u64 *ctx)
{
	struct tcp_sock___d *tp = (void *)ctx[0];
	struct dc_state *s = dc(tp);
	u32 ce = ctx[1] == 1; /* CA_EVENT_ECN_IS_CE */
	struct dc_stats *st;

	if (s->ce_state == ce)
		return;
	if (s->prior_rcv_nxt != tp->rcv_nxt)
		bpf_tcp_send_ack(tp, s->prior_rcv_nxt);
	s->prior_rcv_nxt = tp->rcv_nxt;
	s->ce_state = ce;
	if (ce)
		tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
	st = bpf_sk_storage_get(&dc_sk, tp, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (st) {
		st->ce_events++;
		st->last_ns = bpf_ktime_get_coarse_ns();
	}
}

/* the algorithm in use, read back into a stack buffer */
SEC("struct_ops/dc_undo_cwnd") u32 dc_undo_cwnd(u64 *ctx)
{
	struct tcp_sock___d *tp = (void *)ctx[0];
	char name[16];

	if (bpf_getsockopt(tp, SOL_TCP, TCP_CONGESTION, name, sizeof(name)) == 0 && name[0] == 'c')
		return tp->snd_cwnd;
	return tp->snd_ssthresh;
}

SEC("struct_ops/dc_cong_avoid") void dc_cong_avoid(u64 *ctx)
{
	struct tcp_sock___d *tp = (void *)ctx[0];

	if (tp->snd_cwnd < tp->snd_ssthresh)
		tp->snd_cwnd += (u32)ctx[2];
	else
		tp->snd_cwnd++;
}

/* --- failures ------------------------------------------------------------------------- */

/* release may not change socket options */
SEC("struct_ops/dc_bad_release") void dc_bad_release(u64 *ctx)
{
	bpf_setsockopt((void *)ctx[0], SOL_TCP, TCP_CONGESTION, fallback, sizeof(fallback));
}

/* bpf_tcp_send_ack wants the tcp_sock, not the context */
SEC("struct_ops/dc_bad_ack") void dc_bad_ack(u64 *ctx) { bpf_tcp_send_ack(ctx, 0); }

/* the storage value may be NULL */
SEC("struct_ops/dc_bad_storage") void dc_bad_storage(u64 *ctx)
{
	struct dc_stats *st = bpf_sk_storage_get(&dc_sk, (void *)ctx[0], 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	st->ce_events++;
}

struct tcp_congestion_ops {
	u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, u32 ack, u32 acked);
	void (*cwnd_event)(struct sock *sk, int ev);
	u32 (*undo_cwnd)(struct sock *sk);
	char name[16];
	void (*init)(struct sock *sk);
	void (*release)(struct sock *sk);
};

SEC(".struct_ops.link") struct tcp_congestion_ops dctcp = {
	.init = (void *)dc_init, .ssthresh = (void *)dc_ssthresh, .cwnd_event = (void *)dc_cwnd_event,
	.undo_cwnd = (void *)dc_undo_cwnd, .cong_avoid = (void *)dc_cong_avoid, .name = "bpf_dctcp",
};
SEC(".struct_ops.link") struct tcp_congestion_ops dctcp_bad = {
	.release = (void *)dc_bad_release, .init = (void *)dc_bad_ack, .cwnd_event = (void *)dc_bad_storage,
	.name = "bpf_dctcp_bad",
};

char _license[] SEC("license") = "GPL";
