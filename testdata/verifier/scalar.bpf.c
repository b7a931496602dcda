/* Scalar bounds and control flow the rules above depend on: bounded loops, branches that
 * refine ranges, stack buffers. */
#include "common.h"

u64 sink;

SEC("fentry/bpf_fentry_test1") int sc_bounded_loop(u64 *ctx)
{
	u64 s = 0;
	for (int i = 0; i < 8; i++)
		s += ctx[0] * i;
	sink = s;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int sc_stack_array_checked(u64 *ctx)
{
	u64 a[4] = {1, 2, 3, 4};
	u64 i = ctx[0];
	if (i < 4)
		sink = a[i];
	return 0;
}
SEC("fentry/bpf_fentry_test1") int sc_stack_array_unchecked(u64 *ctx)
{
	volatile u64 a[4] = {1, 2, 3, 4};
	sink = a[ctx[0] & 7];
	return 0;
}
SEC("fentry/bpf_fentry_test2") int sc_signed_compare(u64 *ctx)
{
	s64 x = ctx[1];
	volatile u64 a[4] = {1, 2, 3, 4};
	if (x < 4)
		sink = a[x];
	return 0;
}
SEC("fentry/bpf_fentry_test2") int sc_range_both_sides(u64 *ctx)
{
	s64 x = ctx[1];
	volatile u64 a[4] = {1, 2, 3, 4};
	if (x >= 0 && x < 4)
		sink = a[x];
	return 0;
}

char _license[] SEC("license") = "GPL";
