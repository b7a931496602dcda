/* Global (non-static) functions: verified on their own from their BTF prototype
 * (btf_prepare_func_args), the caller's arguments matched against it. */
#include "common.h"

u64 sink;

struct rec {
	u64 a;
	u32 b;
	u32 c;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, u32);
	__type(value, struct rec);
} gl_recs SEC(".maps");

__noinline int gl_add(int a, int b)
{
	return a + b;
}

SEC("fentry/bpf_fentry_test2") int gl_scalar_args(u64 *ctx)
{
	sink = gl_add((int)ctx[0], (int)ctx[1]);
	return 0;
}

__noinline int gl_ctx_u64(u64 *ctx)
{
	return (int)ctx[0];
}

SEC("fentry/bpf_fentry_test1") int gl_ctx_u64_ptr(u64 *ctx)
{
	sink = gl_ctx_u64(ctx);
	return 0;
}

__noinline int gl_ctx_void(void *ctx)
{
	return bpf_get_func_arg_cnt(ctx);
}

SEC("fentry/bpf_fentry_test1") int gl_ctx_void_ptr(u64 *ctx)
{
	sink = gl_ctx_void(ctx);
	return 0;
}

__noinline int gl_read(int *p)
{
	if (!p)
		return 0;
	return *p;
}

SEC("fentry/bpf_fentry_test1") int gl_mem_arg(u64 *ctx)
{
	int x = (int)ctx[0];
	sink = gl_read(&x);
	return 0;
}

__noinline int gl_read_nocheck(int *p)
{
	return *p;
}

SEC("fentry/bpf_fentry_test1") int gl_mem_arg_no_null_check(u64 *ctx)
{
	int x = (int)ctx[0];
	sink = gl_read_nocheck(&x);
	return 0;
}

__noinline int gl_fill(struct rec *r, u64 v)
{
	if (!r)
		return -1;
	r->a = v;
	r->b = 1;
	r->c = 2;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int gl_struct_arg(u64 *ctx)
{
	struct rec r = {};
	if (gl_fill(&r, ctx[0]) == 0)
		sink = r.a + r.b;
	return 0;
}

__noinline int gl_fill_past(struct rec *r)
{
	if (!r)
		return 0;
	return ((u32 *)r)[4];
}

SEC("fentry/bpf_fentry_test1") int gl_struct_read_past(u64 *ctx)
{
	struct rec r = {};
	sink = gl_fill_past(&r);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int gl_scalar_for_ptr(u64 *ctx)
{
	sink = gl_read((int *)ctx[0]);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int gl_null_for_ptr(u64 *ctx)
{
	sink = gl_read((int *)0);
	return 0;
}

__noinline int gl_void_arg(void *p)
{
	return p != 0;
}

SEC("fentry/bpf_fentry_test1") int gl_void_ptr_arg(u64 *ctx)
{
	int x = 1;
	sink = gl_void_arg(&x);
	return 0;
}

__noinline void gl_store(u64 v)
{
	sink = v;
}

SEC("fentry/bpf_fentry_test1") int gl_returns_void(u64 *ctx)
{
	gl_store(ctx[0]);
	return 0;
}

__noinline u64 gl_now(void)
{
	return bpf_ktime_get_ns();
}

SEC("fentry/bpf_fentry_test1") int gl_calls_helper(u64 *ctx)
{
	sink = gl_now();
	return 0;
}

__noinline int gl_ctx_oob(u64 *ctx)
{
	return (int)ctx[4];
}

SEC("fentry/bpf_fentry_test1") int gl_ctx_read_oob(u64 *ctx)
{
	sink = gl_ctx_oob(ctx);
	return 0;
}

SEC("lsm/file_open") int gl_lsm_ctx(u64 *ctx)
{
	return gl_ctx_u64(ctx) & 0;
}

static __noinline int gl_static_inner(int v) { return v * 2 + 1; }

__noinline int gl_outer(int v)
{
	return gl_static_inner(v) + gl_static_inner(v + 1);
}

SEC("fentry/bpf_fentry_test1") int gl_calls_static(u64 *ctx)
{
	sink = gl_outer((int)ctx[0]);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int gl_ret_unknown_bound(u64 *ctx)
{
	u64 arr[4] = {};
	int i = gl_add(1, 2);
	arr[i] = 1;
	sink = arr[1];
	return 0;
}

__noinline int gl_two_ptrs(int *a, struct rec *b)
{
	if (!a || !b)
		return 0;
	return *a + b->b;
}

SEC("fentry/bpf_fentry_test1") int gl_small_buf_for_struct(u64 *ctx)
{
	int a = 1, b = 2;
	sink = gl_two_ptrs(&a, (struct rec *)&b);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int gl_uninit_stack_arg(u64 *ctx)
{
	int x;
	sink = gl_read(&x);
	return 0;
}


/* A map value passed for a global function's pointer argument. */
SEC("fentry/bpf_fentry_test1") int gl_map_value_arg(u64 *ctx)
{
	u32 key = 0;
	struct rec *r = bpf_map_lookup_elem(&gl_recs, &key);
	if (!r)
		return 0;
	gl_fill(r, ctx[0]);
	return 0;
}

/* A global function calling another global function. */
__noinline int gl_twice(int v)
{
	return gl_add(v, v);
}

SEC("fentry/bpf_fentry_test1") int gl_calls_global(u64 *ctx)
{
	sink = gl_twice((int)ctx[0]);
	return 0;
}

/* A global function that leaks a map value pointer as its return. */
__noinline long gl_ret_ptr(int k)
{
	u32 key = k;
	return (long)bpf_map_lookup_elem(&gl_recs, &key);
}

SEC("fentry/bpf_fentry_test1") int gl_returns_pointer(u64 *ctx)
{
	sink = gl_ret_ptr(0);
	return 0;
}


/* A static subprogram calling a global function. */
static __noinline int gl_static_calls_global(int v)
{
	return gl_add(v, 1) * 2;
}

SEC("fentry/bpf_fentry_test1") int gl_from_static(u64 *ctx)
{
	sink = gl_static_calls_global((int)ctx[0]);
	return 0;
}

char _license[] SEC("license") = "GPL";
