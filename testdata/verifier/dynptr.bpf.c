/* Dynptrs on the stack: constructors (bpf_dynptr_from_mem, bpf_ringbuf_reserve_dynptr,
 * bpf_dynptr_clone), the helpers and kfuncs that want an initialised one, ring buffer
 * dynptrs that must be submitted or discarded, and the slots a constructor may or may not
 * overwrite. See kfuncs.h for struct bpf_dynptr and the kfunc declarations. */
#include "kfuncs.h"

static long (*dp_ringbuf_reserve_dynptr)(void *ringbuf, u32 size, u64 flags, struct bpf_dynptr *ptr) = (void *)198;
static void (*dp_ringbuf_submit_dynptr)(struct bpf_dynptr *ptr, u64 flags) = (void *)199;
static void (*dp_ringbuf_discard_dynptr)(struct bpf_dynptr *ptr, u64 flags) = (void *)200;
static long (*dp_dynptr_read)(void *dst, u32 len, const struct bpf_dynptr *src, u32 offset, u64 flags) = (void *)201;
static long (*dp_dynptr_write)(const struct bpf_dynptr *dst, u32 offset, void *src, u32 len, u64 flags) = (void *)202;
static void *(*dp_dynptr_data)(const struct bpf_dynptr *ptr, u32 offset, u32 len) = (void *)203;
extern int bpf_dynptr_adjust(const struct bpf_dynptr *p, u32 start, u32 end) __ksym;
extern int bpf_dynptr_clone(const struct bpf_dynptr *p, struct bpf_dynptr *clone__uninit) __ksym;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} dp_rb SEC(".maps");

char dp_buf[64];
u64 dp_sink;

SEC("fentry/bpf_fentry_test1") int dp_from_mem_read(u64 *ctx)
{
	struct bpf_dynptr dp;
	u64 v = 0;
	bpf_dynptr_from_mem(dp_buf, sizeof(dp_buf), 0, &dp);
	dp_dynptr_read(&v, sizeof(v), &dp, 0, 0);
	dp_sink = v;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_read_uninit(u64 *ctx)
{
	struct bpf_dynptr dp;
	u64 v = 0;
	dp_dynptr_read(&v, sizeof(v), &dp, 0, 0);
	dp_sink = v;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_write(u64 *ctx)
{
	struct bpf_dynptr dp;
	u64 v = ctx[0];
	bpf_dynptr_from_mem(dp_buf, sizeof(dp_buf), 0, &dp);
	dp_dynptr_write(&dp, 8, &v, sizeof(v), 0);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_data(u64 *ctx)
{
	struct bpf_dynptr dp;
	u64 *p;
	bpf_dynptr_from_mem(dp_buf, sizeof(dp_buf), 0, &dp);
	p = dp_dynptr_data(&dp, 0, 8);
	if (p)
		dp_sink = *p;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_data_no_null_check(u64 *ctx)
{
	struct bpf_dynptr dp;
	u64 *p;
	bpf_dynptr_from_mem(dp_buf, sizeof(dp_buf), 0, &dp);
	p = dp_dynptr_data(&dp, 0, 8);
	dp_sink = *p;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_data_beyond(u64 *ctx)
{
	struct bpf_dynptr dp;
	u64 *p;
	bpf_dynptr_from_mem(dp_buf, sizeof(dp_buf), 0, &dp);
	p = dp_dynptr_data(&dp, 0, 8);
	if (p)
		dp_sink = p[1];
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_data_var_len(u64 *ctx)
{
	struct bpf_dynptr dp;
	u8 *p;
	bpf_dynptr_from_mem(dp_buf, sizeof(dp_buf), 0, &dp);
	p = dp_dynptr_data(&dp, 0, ctx[0] & 7);
	if (p)
		dp_sink = *p;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_rb_submit(u64 *ctx)
{
	struct bpf_dynptr dp;
	u64 v = ctx[0];
	dp_ringbuf_reserve_dynptr(&dp_rb, 16, 0, &dp);
	dp_dynptr_write(&dp, 0, &v, sizeof(v), 0);
	dp_ringbuf_submit_dynptr(&dp, 0);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_rb_discard(u64 *ctx)
{
	struct bpf_dynptr dp;
	dp_ringbuf_reserve_dynptr(&dp_rb, 16, 0, &dp);
	dp_ringbuf_discard_dynptr(&dp, 0);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_rb_leak(u64 *ctx)
{
	struct bpf_dynptr dp;
	u64 v = ctx[0];
	dp_ringbuf_reserve_dynptr(&dp_rb, 16, 0, &dp);
	dp_dynptr_write(&dp, 0, &v, sizeof(v), 0);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_rb_data_write(u64 *ctx)
{
	struct bpf_dynptr dp;
	u64 *p;
	dp_ringbuf_reserve_dynptr(&dp_rb, 16, 0, &dp);
	p = dp_dynptr_data(&dp, 0, 8);
	if (p)
		*p = ctx[0];
	dp_ringbuf_submit_dynptr(&dp, 0);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_submit_local(u64 *ctx)
{
	struct bpf_dynptr dp;
	bpf_dynptr_from_mem(dp_buf, sizeof(dp_buf), 0, &dp);
	dp_ringbuf_submit_dynptr(&dp, 0);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_rb_submit_twice(u64 *ctx)
{
	struct bpf_dynptr dp;
	dp_ringbuf_reserve_dynptr(&dp_rb, 16, 0, &dp);
	dp_ringbuf_submit_dynptr(&dp, 0);
	dp_ringbuf_submit_dynptr(&dp, 0);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_read_after_submit(u64 *ctx)
{
	struct bpf_dynptr dp;
	u64 v = 0;
	dp_ringbuf_reserve_dynptr(&dp_rb, 16, 0, &dp);
	dp_ringbuf_submit_dynptr(&dp, 0);
	dp_dynptr_read(&v, sizeof(v), &dp, 0, 0);
	dp_sink = v;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_reinit_local(u64 *ctx)
{
	struct bpf_dynptr dp;
	bpf_dynptr_from_mem(dp_buf, 16, 0, &dp);
	bpf_dynptr_from_mem(dp_buf + 16, 16, 0, &dp);
	dp_sink = bpf_dynptr_size(&dp);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_reinit_ringbuf(u64 *ctx)
{
	struct bpf_dynptr dp;
	dp_ringbuf_reserve_dynptr(&dp_rb, 16, 0, &dp);
	bpf_dynptr_from_mem(dp_buf, 16, 0, &dp);
	dp_ringbuf_discard_dynptr(&dp, 0);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_size(u64 *ctx)
{
	struct bpf_dynptr dp;
	bpf_dynptr_from_mem(dp_buf, 24, 0, &dp);
	dp_sink = bpf_dynptr_size(&dp);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_adjust(u64 *ctx)
{
	struct bpf_dynptr dp;
	bpf_dynptr_from_mem(dp_buf, sizeof(dp_buf), 0, &dp);
	bpf_dynptr_adjust(&dp, 8, 16);
	dp_sink = bpf_dynptr_size(&dp);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_clone(u64 *ctx)
{
	struct bpf_dynptr dp, copy;
	bpf_dynptr_from_mem(dp_buf, sizeof(dp_buf), 0, &dp);
	bpf_dynptr_clone(&dp, &copy);
	dp_sink = bpf_dynptr_size(&copy);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_clone_uninit(u64 *ctx)
{
	struct bpf_dynptr dp, copy;
	bpf_dynptr_clone(&dp, &copy);
	dp_sink = bpf_dynptr_size(&copy);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_clone_ringbuf_submit(u64 *ctx)
{
	struct bpf_dynptr dp, copy;
	dp_ringbuf_reserve_dynptr(&dp_rb, 16, 0, &dp);
	bpf_dynptr_clone(&dp, &copy);
	dp_ringbuf_submit_dynptr(&copy, 0);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_from_mem_stack(u64 *ctx)
{
	struct bpf_dynptr dp;
	u64 buf[2] = {};
	u64 v = 0;
	bpf_dynptr_from_mem(buf, sizeof(buf), 0, &dp);
	dp_dynptr_read(&v, sizeof(v), &dp, 8, 0);
	dp_sink = v;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_overwrite_local(u64 *ctx)
{
	struct bpf_dynptr dp;
	bpf_dynptr_from_mem(dp_buf, 16, 0, &dp);
	*(volatile u64 *)&dp = 0;
	dp_sink = bpf_dynptr_size(&dp);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_overwrite_ringbuf(u64 *ctx)
{
	struct bpf_dynptr dp;
	dp_ringbuf_reserve_dynptr(&dp_rb, 16, 0, &dp);
	*(volatile u64 *)&dp = 0;
	dp_ringbuf_discard_dynptr(&dp, 0);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_read_bytes(u64 *ctx)
{
	struct bpf_dynptr dp;
	bpf_dynptr_from_mem(dp_buf, 16, 0, &dp);
	dp_sink = *(volatile u64 *)&dp;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int dp_helper_writes_dynptr(u64 *ctx)
{
	struct bpf_dynptr dp;
	bpf_dynptr_from_mem(dp_buf, 16, 0, &dp);
	bpf_probe_read_kernel(&dp, 8, ctx);
	dp_sink = bpf_dynptr_size(&dp);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
