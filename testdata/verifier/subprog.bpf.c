/* Static (bpf-to-bpf) subprograms: frames, argument passing in R1-R5, callee-saved R6-R9,
 * R0 as the callee's return, pointers into the caller's stack, the combined stack depth. */
#include "common.h"

u64 sink;

struct event {
	u32 pid;
	u32 tgid;
	u64 ts;
	u64 arg0;
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, u32);
	__type(value, u64);
} sp_counts SEC(".maps");

/* A helper function filling an event on the caller's stack. */
static __noinline void sp_fill(struct event *e, u64 *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	e->pid = id >> 32;
	e->tgid = (u32)id;
	e->ts = bpf_ktime_get_ns();
	e->arg0 = ctx[0];
}

SEC("fentry/bpf_fentry_test1") int sp_fill_event(u64 *ctx)
{
	struct event e = {};
	sp_fill(&e, ctx);
	sink = e.pid + e.ts + e.arg0;
	return 0;
}

/* Argument parsing with a bounded result. */
static __noinline int sp_parse(u64 a, u64 b)
{
	if (a > 100)
		return -1;
	return (int)(a + b);
}

SEC("fentry/bpf_fentry_test2") int sp_parse_args(u64 *ctx)
{
	int r = sp_parse(ctx[0], ctx[1]);
	if (r < 0)
		return 0;
	sink = r;
	return 0;
}

static __noinline u64 sp_leaf(u64 x) { return x * 3 + bpf_get_prandom_u32(); }
static __noinline u64 sp_mid(u64 x) { return sp_leaf(x + 1) + sp_leaf(x); }
static __noinline u64 sp_top(u64 x) { return sp_mid(x) ^ sp_leaf(x >> 1); }

SEC("fentry/bpf_fentry_test1") int sp_nested(u64 *ctx)
{
	sink = sp_top(ctx[0]);
	return 0;
}

/* The callee writes one byte past the caller's buffer: the caller's fp+0. */
static __noinline void sp_write_past(char *p, int n)
{
	p[n] = 1;
}

SEC("fentry/bpf_fentry_test1") int sp_caller_stack_oob(u64 *ctx)
{
	char buf[8] = {};
	sp_write_past(buf, 8);
	sink = buf[0];
	return 0;
}

SEC("fentry/bpf_fentry_test1") int sp_caller_stack_ok(u64 *ctx)
{
	char buf[8] = {};
	sp_write_past(buf, 7);
	sink = buf[7];
	return 0;
}

/* A callee returning a map value pointer: R0 keeps its type across the exit. */
static __noinline u64 *sp_lookup(u32 key)
{
	return bpf_map_lookup_elem(&sp_counts, &key);
}

SEC("fentry/bpf_fentry_test1") int sp_ret_map_value(u64 *ctx)
{
	u64 *v = sp_lookup((u32)ctx[0]);
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int sp_ret_map_value_nocheck(u64 *ctx)
{
	u64 *v = sp_lookup((u32)ctx[0]);
	*v += 1;
	return 0;
}

/* The context pointer passed to a subprogram. */
static __noinline u64 sp_arg(u64 *ctx, int i)
{
	return ctx[i];
}

SEC("fentry/bpf_fentry_test2") int sp_ctx_arg(u64 *ctx)
{
	sink = sp_arg(ctx, 1);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int sp_ctx_arg_oob(u64 *ctx)
{
	sink = sp_arg(ctx, 3);
	return 0;
}

static __noinline u64 sp_func_arg(void *ctx)
{
	u64 v = 0;
	bpf_get_func_arg(ctx, 0, &v);
	return v;
}

SEC("fentry/bpf_fentry_test1") int sp_helper_ctx(u64 *ctx)
{
	sink = sp_func_arg(ctx);
	return 0;
}

/* Each frame uses 320 bytes: 640 together. */
static __noinline u64 sp_big_frame(u32 i)
{
	volatile u64 buf[40];
	buf[0] = i;
	buf[39] = i + 1;
	return buf[i & 31];
}

SEC("fentry/bpf_fentry_test1") int sp_stack_too_deep(u64 *ctx)
{
	volatile u64 buf[40];
	buf[0] = ctx[0];
	buf[39] = 1;
	sink = sp_big_frame((u32)ctx[0]) + buf[ctx[0] & 31];
	return 0;
}

SEC("fentry/bpf_fentry_test1") int sp_stack_fits(u64 *ctx)
{
	volatile u64 buf[16];
	buf[0] = ctx[0];
	buf[15] = 1;
	sink = sp_big_frame((u32)ctx[0]) + buf[ctx[0] & 15];
	return 0;
}

/* A bounded return value used as an index in the caller. */
static __noinline u32 sp_mask(u64 x) { return x & 7; }
static __noinline u64 sp_any(u64 x) { return x * 5; }

SEC("fentry/bpf_fentry_test1") int sp_ret_bounded_index(u64 *ctx)
{
	u64 arr[8] = {};
	u32 i = sp_mask(ctx[0]);
	arr[i] = 1;
	sink = arr[ctx[0] & 7];
	return 0;
}

SEC("fentry/bpf_fentry_test1") int sp_ret_unbounded_index(u64 *ctx)
{
	u64 arr[8] = {};
	u64 i = sp_any(ctx[0]);
	arr[i] = 1;
	sink = arr[0];
	return 0;
}

SEC("fentry/bpf_fentry_test1") int sp_loop_calls(u64 *ctx)
{
	u64 s = 0;
	for (int i = 0; i < 10; i++)
		s += sp_any(s + i);
	sink = s;
	return 0;
}

SEC("fexit/bpf_fentry_test1") int sp_fexit_ret(u64 *ctx)
{
	sink = sp_arg(ctx, 1);
	return 0;
}

static __noinline int sp_file_flags(struct file *f)
{
	return f->f_flags & 1;
}

SEC("lsm/file_open") int sp_lsm_btf_arg(u64 *ctx)
{
	struct file *f = (struct file *)ctx[0];
	return -sp_file_flags(f);
}

/* A subprogram returning nothing: the caller's R0 is not the subprogram's. */
static __noinline void sp_count(u32 key)
{
	u64 one = 1, *v = bpf_map_lookup_elem(&sp_counts, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
	else
		bpf_map_update_elem(&sp_counts, &key, &one, 0);
}

SEC("fentry/bpf_fentry_test1") int sp_void_count(u64 *ctx)
{
	sp_count((u32)ctx[0]);
	sp_count(0);
	return 0;
}

/* The callee reads the comm into the caller's event. */
static __noinline int sp_read_name(struct event *e, struct task_struct *t)
{
	return bpf_probe_read_kernel(e->comm, sizeof(e->comm), t->comm);
}

SEC("fentry/bpf_fentry_test1") int sp_probe_read_into_caller(u64 *ctx)
{
	struct event e = {};
	struct task_struct *t = bpf_get_current_task_btf();
	if (sp_read_name(&e, t) == 0)
		sink = e.comm[0];
	return 0;
}


/* A map value pointer handed to a subprogram that updates it. */
static __noinline void sp_bump(u64 *v, u64 by)
{
	*v += by;
}

SEC("fentry/bpf_fentry_test1") int sp_map_value_arg(u64 *ctx)
{
	u32 key = 0;
	u64 *v = bpf_map_lookup_elem(&sp_counts, &key);
	if (!v)
		return 0;
	sp_bump(v, ctx[0] & 0xff);
	return 0;
}

/* A bounded loop inside a subprogram. */
static __noinline u64 sp_sum_to(u32 n)
{
	u64 s = 0;
	for (u32 i = 0; i < n && i < 64; i++)
		s += i;
	return s;
}

SEC("fentry/bpf_fentry_test1") int sp_loop_in_callee(u64 *ctx)
{
	sink = sp_sum_to((u32)ctx[0]);
	return 0;
}

/* The callee reads past the end of the caller's array through the pointer it got. */
static __noinline u64 sp_read_at(u64 *a, u32 i)
{
	return a[i];
}

SEC("fentry/bpf_fentry_test1") int sp_caller_array_oob(u64 *ctx)
{
	u64 a[4] = {};
	sink = sp_read_at(a, 4);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int sp_caller_array_var(u64 *ctx)
{
	u64 a[4] = {};
	sink = sp_read_at(a, ctx[0] & 3);
	return 0;
}

/* Two callees sharing the caller's event: one fills, one reads. */
static __noinline void sp_fill_ts(struct event *e) { e->ts = bpf_ktime_get_ns(); }
static __noinline u64 sp_get_ts(struct event *e) { return e->ts; }

SEC("fexit/bpf_fentry_test1") int sp_two_callees_event(u64 *ctx)
{
	struct event e = {};
	sp_fill_ts(&e);
	sink = sp_get_ts(&e) + ctx[1];
	return 0;
}

/* A callee returning a value the LSM hook returns: its range must be known. */
static __noinline int sp_deny(u32 flags) { return flags & 1 ? -1 : 0; }

SEC("lsm/file_open") int sp_lsm_ret_from_callee(u64 *ctx)
{
	struct file *f = (struct file *)ctx[0];
	return sp_deny(f->f_flags);
}

char _license[] SEC("license") = "GPL";
