/* Open-coded iterators (bpf_iter_num_new/next/destroy) in tracing programs: loops whose
 * bodies accumulate values (the verifier must converge on them), an early break, nested
 * iterators and a missing destroy. See kfuncs.h for the declarations. */
#include "kfuncs.h"

u64 sink;

SEC("fentry/bpf_fentry_test1") int it_num_sum(u64 *ctx)
{
	struct bpf_iter_num it;
	int *v;
	u64 sum = 0;
	bpf_iter_num_new(&it, 0, 8);
	while ((v = bpf_iter_num_next(&it)))
		sum += *v;
	bpf_iter_num_destroy(&it);
	sink = sum;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int it_num_count(u64 *ctx)
{
	struct bpf_iter_num it;
	u32 n = 0;
	bpf_iter_num_new(&it, 0, 100);
	while (bpf_iter_num_next(&it))
		n++;
	bpf_iter_num_destroy(&it);
	sink = n;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int it_num_break(u64 *ctx)
{
	struct bpf_iter_num it;
	int *v;
	u64 sum = 0;
	bpf_iter_num_new(&it, 0, 1000);
	while ((v = bpf_iter_num_next(&it))) {
		sum += *v;
		if (sum > 50)
			break;
	}
	bpf_iter_num_destroy(&it);
	sink = sum;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int it_num_nested(u64 *ctx)
{
	struct bpf_iter_num outer, inner;
	int *i, *j;
	u64 sum = 0;
	bpf_iter_num_new(&outer, 0, 4);
	while ((i = bpf_iter_num_next(&outer))) {
		bpf_iter_num_new(&inner, 0, 4);
		while ((j = bpf_iter_num_next(&inner)))
			sum += *i * *j;
		bpf_iter_num_destroy(&inner);
	}
	bpf_iter_num_destroy(&outer);
	sink = sum;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int it_num_no_destroy(u64 *ctx)
{
	struct bpf_iter_num it;
	int *v;
	u64 sum = 0;
	bpf_iter_num_new(&it, 0, 8);
	while ((v = bpf_iter_num_next(&it)))
		sum += *v;
	sink = sum;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int it_num_max(u64 *ctx)
{
	struct bpf_iter_num it;
	int *v;
	u32 best = 0;
	bpf_iter_num_new(&it, 0, 16);
	while ((v = bpf_iter_num_next(&it)))
		if ((u32)*v * 3 % 7 > best)
			best = (u32)*v * 3 % 7;
	bpf_iter_num_destroy(&it);
	sink = best;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int it_num_stack_buf(u64 *ctx)
{
	struct bpf_iter_num it;
	u64 buf[4] = {};
	int *v;
	bpf_iter_num_new(&it, 0, 4);
	while ((v = bpf_iter_num_next(&it)))
		buf[*v & 3] += *v;
	bpf_iter_num_destroy(&it);
	sink = buf[0] + buf[3];
	return 0;
}

SEC("fentry/bpf_fentry_test1") int it_num_deref_unchecked(u64 *ctx)
{
	struct bpf_iter_num it;
	u64 sum = 0;
	bpf_iter_num_new(&it, 0, 8);
	for (int k = 0; k < 3; k++)
		sum += *bpf_iter_num_next(&it);
	bpf_iter_num_destroy(&it);
	sink = sum;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int it_num_sum_spilled(u64 *ctx)
{
	struct bpf_iter_num it;
	int *v;
	volatile u64 sum = 0; /* kept on the stack: the widening must reach spilled scalars */
	bpf_iter_num_new(&it, 0, 8);
	while ((v = bpf_iter_num_next(&it)))
		sum += *v;
	bpf_iter_num_destroy(&it);
	sink = sum;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
