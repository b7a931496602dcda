/* struct_ops programs split into functions: a static subprogram handed the socket, one
 * handed a pointer into the private state, a global function taking the socket (its BTF
 * argument is checked against what the caller passes), a global function taking only
 * scalars, and a subprogram writing a field bpf_tcp_ca does not allow. */
#include "common.h"

struct tcp_sock___s { u32 snd_cwnd; u32 snd_ssthresh; u32 srtt_us; } CORE;
struct inet_connection_sock___s { u64 icsk_ca_priv[13]; } CORE;

static __noinline u32 half_cwnd(struct tcp_sock___s *tp) { return tp->snd_cwnd >> 1; }

static __noinline void bump(u32 *counter) { (*counter)++; }

__noinline int gl_scale(u32 cwnd, u32 shift) { return (int)(cwnd >> (shift & 7)); }

__noinline int gl_cwnd(struct tcp_sock___s *tp) { return tp ? (int)tp->snd_cwnd : 0; }

static __noinline void bad_srtt(struct tcp_sock___s *tp) { tp->srtt_us = 0; }

SEC("struct_ops/sp_ssthresh") u32 sp_ssthresh(u64 *ctx)
{
	u32 h = half_cwnd((void *)ctx[0]);

	return h > 2 ? h : 2;
}

SEC("struct_ops/sp_cwnd_event") void sp_cwnd_event(u64 *ctx)
{
	struct inet_connection_sock___s *icsk = (void *)ctx[0];

	bump((u32 *)&icsk->icsk_ca_priv[0]);
}

SEC("struct_ops/sp_undo") u32 sp_undo(u64 *ctx)
{
	struct tcp_sock___s *tp = (void *)ctx[0];

	return gl_scale(tp->snd_cwnd, 1);
}

SEC("struct_ops/sp_global_sock") u32 sp_global_sock(u64 *ctx) { return gl_cwnd((void *)ctx[0]); }

SEC("struct_ops/sp_bad_srtt") void sp_bad_srtt(u64 *ctx) { bad_srtt((void *)ctx[0]); }

struct tcp_congestion_ops {
	u32 (*ssthresh)(struct sock *sk);
	void (*cwnd_event)(struct sock *sk, int ev);
	u32 (*undo_cwnd)(struct sock *sk);
	u32 (*min_tso_segs)(struct sock *sk);
	char name[16];
	void (*release)(struct sock *sk);
};

SEC(".struct_ops.link") struct tcp_congestion_ops sp = {
	.ssthresh = (void *)sp_ssthresh, .cwnd_event = (void *)sp_cwnd_event, .undo_cwnd = (void *)sp_undo,
	.min_tso_segs = (void *)sp_global_sock, .release = (void *)sp_bad_srtt, .name = "sp",
};

char _license[] SEC("license") = "GPL";
