/* Callbacks of bpf_loop and bpf_for_each_map_elem: the callback frame's arguments, its
 * return value range, and the state it carries back to the caller. */
#include "common.h"

u64 sink;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, u32);
	__type(value, u64);
} cb_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, u32);
	__type(value, u64);
} cb_arr SEC(".maps");

struct loop_ctx {
	u64 sum;
	u64 vals[8];
	u32 idx;
};

static int cb_add(u32 i, struct loop_ctx *c)
{
	c->sum += i;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int cb_loop_sum(u64 *ctx)
{
	struct loop_ctx c = {};
	bpf_loop(16, cb_add, &c, 0);
	sink = c.sum;
	return 0;
}

static int cb_fill_checked(u32 i, struct loop_ctx *c)
{
	if (i >= 8)
		return 1;
	c->vals[i] = i * i;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int cb_loop_array(u64 *ctx)
{
	struct loop_ctx c = {};
	bpf_loop(8, cb_fill_checked, &c, 0);
	sink = c.vals[3];
	return 0;
}

static int cb_fill_unchecked(u64 i, struct loop_ctx *c)
{
	c->vals[i] = i;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int cb_loop_array_unchecked(u64 *ctx)
{
	struct loop_ctx c = {};
	bpf_loop(8, cb_fill_unchecked, &c, 0);
	sink = c.vals[3];
	return 0;
}

static int cb_ret_two(u32 i, void *c)
{
	return 2;
}

SEC("fentry/bpf_fentry_test1") int cb_loop_bad_ret(u64 *ctx)
{
	bpf_loop(4, cb_ret_two, 0, 0);
	return 0;
}

static int cb_ret_index(u32 i, void *c)
{
	return i;
}

SEC("fentry/bpf_fentry_test1") int cb_loop_ret_unknown(u64 *ctx)
{
	bpf_loop(4, cb_ret_index, 0, 0);
	return 0;
}

static int cb_no_ctx(u32 i, void *c)
{
	sink += i;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int cb_loop_null_ctx(u64 *ctx)
{
	bpf_loop((u32)ctx[0], cb_no_ctx, 0, 0);
	return 0;
}

static int cb_deref_ctx(u32 i, u64 *c)
{
	sink = *c;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int cb_loop_null_ctx_deref(u64 *ctx)
{
	bpf_loop(4, cb_deref_ctx, 0, 0);
	return 0;
}

static int cb_lookup(u32 i, void *c)
{
	u32 key = i;
	u64 one = 1, *v = bpf_map_lookup_elem(&cb_hash, &key);
	if (v)
		*v += 1;
	else
		bpf_map_update_elem(&cb_hash, &key, &one, 0);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int cb_loop_map_update(u64 *ctx)
{
	bpf_loop(32, cb_lookup, 0, 0);
	return 0;
}

static __noinline u64 cb_sq(u64 x) { return x * x; }

static int cb_calls_subprog(u32 i, struct loop_ctx *c)
{
	c->sum += cb_sq(i);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int cb_loop_calls_subprog(u64 *ctx)
{
	struct loop_ctx c = {};
	bpf_loop(10, cb_calls_subprog, &c, 0);
	sink = c.sum;
	return 0;
}

/* The callback advances an index the caller then uses: one pass (6.1) sees idx == 1,
 * iterating the callback (6.8 and later) sees it grow. */
static int cb_step(u32 i, struct loop_ctx *c)
{
	c->idx++;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int cb_loop_carried_index(u64 *ctx)
{
	struct loop_ctx c = {};
	bpf_loop(100, cb_step, &c, 0);
	sink = c.vals[c.idx];
	return 0;
}

static long cb_sum_hash(void *map, u32 *key, u64 *val, struct loop_ctx *c)
{
	c->sum += *val + *key;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int cb_for_each_hash(u64 *ctx)
{
	struct loop_ctx c = {};
	bpf_for_each_map_elem(&cb_hash, cb_sum_hash, &c, 0);
	sink = c.sum;
	return 0;
}

static long cb_clear_val(void *map, u32 *key, u64 *val, void *c)
{
	*val = 0;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int cb_for_each_array_write(u64 *ctx)
{
	bpf_for_each_map_elem(&cb_arr, cb_clear_val, 0, 0);
	return 0;
}

static long cb_write_key(void *map, u32 *key, u64 *val, void *c)
{
	*key = 0;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int cb_for_each_write_key(u64 *ctx)
{
	bpf_for_each_map_elem(&cb_hash, cb_write_key, 0, 0);
	return 0;
}

static long cb_val_past(void *map, u32 *key, u64 *val, void *c)
{
	sink = val[1];
	return 0;
}

SEC("fentry/bpf_fentry_test1") int cb_for_each_value_oob(u64 *ctx)
{
	bpf_for_each_map_elem(&cb_hash, cb_val_past, 0, 0);
	return 0;
}

static long cb_stop_ret(void *map, u32 *key, u64 *val, void *c)
{
	return 5;
}

SEC("fentry/bpf_fentry_test1") int cb_for_each_bad_ret(u64 *ctx)
{
	bpf_for_each_map_elem(&cb_hash, cb_stop_ret, 0, 0);
	return 0;
}

static long cb_lsm_count(void *map, u32 *key, u64 *val, void *c)
{
	if (*val > 10)
		return 1;
	return 0;
}

SEC("lsm/file_open") int cb_lsm_for_each(u64 *ctx)
{
	bpf_for_each_map_elem(&cb_hash, cb_lsm_count, 0, 0);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int cb_loop_ret_value(u64 *ctx)
{
	struct loop_ctx c = {};
	long n = bpf_loop(8, cb_fill_checked, &c, 0);
	sink = n;
	return 0;
}


/* A callback that runs a loop of its own (three frames). */
static int cb_inner(u32 i, struct loop_ctx *c)
{
	c->sum += 1;
	return 0;
}

static int cb_outer(u32 i, struct loop_ctx *c)
{
	bpf_loop(4, cb_inner, c, 0);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int cb_loop_nested(u64 *ctx)
{
	struct loop_ctx c = {};
	bpf_loop(4, cb_outer, &c, 0);
	sink = c.sum;
	return 0;
}

/* for_each over an array map, stopping early from the callback. */
static long cb_find_big(void *map, u32 *key, u64 *val, struct loop_ctx *c)
{
	if (*val > 100) {
		c->idx = *key;
		return 1;
	}
	return 0;
}

SEC("fentry/bpf_fentry_test1") int cb_for_each_array_stop(u64 *ctx)
{
	struct loop_ctx c = {};
	bpf_for_each_map_elem(&cb_arr, cb_find_big, &c, 0);
	sink = c.idx;
	return 0;
}

/* The callback keeps a caller's index in bounds itself. */
static int cb_step_checked(u32 i, struct loop_ctx *c)
{
	if (c->idx >= 7)
		return 1;
	c->idx++;
	c->vals[c->idx] = i;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int cb_loop_carried_checked(u64 *ctx)
{
	struct loop_ctx c = {};
	bpf_loop(100, cb_step_checked, &c, 0);
	sink = c.vals[c.idx & 7];
	return 0;
}

/* A callback context that is not on the stack. */
SEC("fentry/bpf_fentry_test1") int cb_loop_ctx_map_value(u64 *ctx)
{
	u32 key = 0;
	u64 *v = bpf_map_lookup_elem(&cb_arr, &key);
	if (!v)
		return 0;
	bpf_loop(4, cb_no_ctx, v, 0);
	return 0;
}


/* bpf_loop called from a static subprogram: the callback is the third frame. */
static __noinline u64 cb_sum_in_subprog(u32 n)
{
	struct loop_ctx c = {};
	bpf_loop(n & 15, cb_add, &c, 0);
	return c.sum;
}

SEC("fentry/bpf_fentry_test1") int cb_loop_from_subprog(u64 *ctx)
{
	sink = cb_sum_in_subprog((u32)ctx[0]);
	return 0;
}


struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} cb_rb SEC(".maps");

/* A ring buffer record reserved in the callback and submitted there. */
static int cb_emit(u32 i, void *c)
{
	u64 *r = bpf_ringbuf_reserve(&cb_rb, sizeof(*r), 0);
	if (!r)
		return 1;
	*r = i;
	bpf_ringbuf_submit(r, 0);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int cb_loop_ringbuf(u64 *ctx)
{
	bpf_loop(8, cb_emit, 0, 0);
	return 0;
}

/* ... and forgotten there: the callback leaks its reference. */
static int cb_emit_leak(u32 i, void *c)
{
	u64 *r = bpf_ringbuf_reserve(&cb_rb, sizeof(*r), 0);
	if (!r)
		return 1;
	*r = i;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int cb_loop_ringbuf_leak(u64 *ctx)
{
	bpf_loop(8, cb_emit_leak, 0, 0);
	return 0;
}

/* A record reserved by the caller and submitted by a static subprogram. */
static __noinline void cb_submit_in_subprog(u64 *r)
{
	bpf_ringbuf_submit(r, 0);
}

SEC("fentry/bpf_fentry_test1") int cb_subprog_releases(u64 *ctx)
{
	u64 *r = bpf_ringbuf_reserve(&cb_rb, sizeof(*r), 0);
	if (!r)
		return 0;
	*r = ctx[0];
	cb_submit_in_subprog(r);
	return 0;
}

/* A record reserved in a static subprogram and returned to the caller, which drops it. */
static __noinline u64 *cb_reserve_in_subprog(void)
{
	return bpf_ringbuf_reserve(&cb_rb, 8, 0);
}

SEC("fentry/bpf_fentry_test1") int cb_subprog_reserve_leak(u64 *ctx)
{
	u64 *r = cb_reserve_in_subprog();
	if (!r)
		return 0;
	*r = 1;
	return 0;
}

char _license[] SEC("license") = "GPL";
