/* A helper reading stack memory (a map key, a value to store): 6.1 and 6.12 treat every
 * helper access as one that may write (check_stack_range_initialized clobbers the slots to
 * STACK_MISC), 7.2 only a write does, so a pointer or a constant spilled there survives a
 * read. Tools key their maps by the traced object's address (&rq, &sk) and use it after. */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, u64);
	__type(value, u64);
} sk_by_ptr SEC(".maps");

u64 sk_arr[8];
u64 sk_sink;

/* the key is the spilled pointer itself; it is read back and dereferenced */
SEC("fentry/tcp_v4_connect") int sk_key_spilled_ptr(u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	u64 *v = bpf_map_lookup_elem(&sk_by_ptr, &sk);
	if (!v)
		return 0;
	sk_sink = *(volatile u32 *)&sk->sk_mark;
	return 0;
}

SEC("fentry/tcp_v4_connect") int sk_update_spilled_ptr(u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	u64 one = 1;
	bpf_map_update_elem(&sk_by_ptr, &sk, &one, 0);
	sk_sink = *(volatile u32 *)&sk->sk_mark;
	return 0;
}

/* a constant key, then the same slot as an index */
SEC("fentry/bpf_fentry_test1") int sk_key_const_index(u64 *ctx)
{
	volatile u64 k = 3;
	u64 *v = bpf_map_lookup_elem(&sk_by_ptr, (const void *)&k);
	if (v)
		sk_sink = *v;
	sk_arr[k]++;
	return 0;
}

char _license[] SEC("license") = "GPL";
