/* The helpers trampoline programs use: bpf_get_func_arg/_ret/_arg_cnt/_ip,
 * bpf_get_attach_cookie, map lookup/update, bpf_probe_read_kernel, bpf_printk,
 * bpf_ktime_get_ns, and their argument rules. */
#include "common.h"

u64 sink;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, u32);
	__type(value, u64);
} counts SEC(".maps");

struct val4 { u64 v[4]; };
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, u32);
	__type(value, struct val4);
} arr SEC(".maps");

SEC("fentry/bpf_fentry_test2") int hp_func_arg(u64 *ctx)
{
	u64 v = 0;
	bpf_get_func_arg(ctx, 1, &v);
	sink = v;
	return 0;
}
SEC("fentry/bpf_fentry_test2") int hp_func_arg_var_index(u64 *ctx)
{
	u64 v = 0;
	bpf_get_func_arg(ctx, ctx[0], &v);
	sink = v;
	return 0;
}
SEC("fentry/bpf_fentry_test2") int hp_func_arg_not_ctx(u64 *ctx)
{
	u64 v = 0;
	bpf_get_func_arg((void *)ctx[1], 0, &v);
	sink = v;
	return 0;
}
SEC("fexit/bpf_fentry_test2") int hp_func_ret(u64 *ctx)
{
	u64 v = 0;
	bpf_get_func_ret(ctx, &v);
	sink = v;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int hp_func_ret_fentry(u64 *ctx)
{
	u64 v = 0;
	sink = bpf_get_func_ret(ctx, &v);
	return 0;
}
SEC("lsm/file_open") int hp_func_ret_lsm(u64 *ctx)
{
	u64 v = 0;
	sink = bpf_get_func_ret(ctx, &v);
	return 0;
}
SEC("fmod_ret/bpf_modify_return_test") int hp_func_arg_cnt(u64 *ctx) { sink = bpf_get_func_arg_cnt(ctx); return 0; }
SEC("lsm/file_open") int hp_func_arg_cnt_lsm(u64 *ctx) { sink = bpf_get_func_arg_cnt(ctx); return 0; }
SEC("fentry/bpf_fentry_test1") int hp_func_ip(u64 *ctx) { sink = bpf_get_func_ip(ctx); return 0; }
SEC("fexit/bpf_fentry_test1") int hp_func_ip_fexit(u64 *ctx) { sink = bpf_get_func_ip(ctx); return 0; }
SEC("lsm/file_open") int hp_func_ip_lsm(u64 *ctx) { sink = bpf_get_func_ip(ctx); return 0; }
SEC("fentry/bpf_fentry_test1") int hp_cookie(u64 *ctx) { sink = bpf_get_attach_cookie(ctx); return 0; }
SEC("lsm/file_open") int hp_cookie_lsm(u64 *ctx) { sink = bpf_get_attach_cookie(ctx); return 0; }
SEC("fentry/bpf_fentry_test1") int hp_map_lookup(u64 *ctx)
{
	u32 key = ctx[0];
	u64 *v = bpf_map_lookup_elem(&counts, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int hp_map_lookup_no_null_check(u64 *ctx)
{
	u32 key = ctx[0];
	u64 *v = bpf_map_lookup_elem(&counts, &key);
	sink = *v;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int hp_map_value_past_end(u64 *ctx)
{
	u32 key = 0;
	u64 *v = bpf_map_lookup_elem(&counts, &key);
	if (v)
		sink = v[1];
	return 0;
}
SEC("fentry/bpf_fentry_test1") int hp_map_update(u64 *ctx)
{
	u32 key = ctx[0];
	u64 val = bpf_ktime_get_ns();
	bpf_map_update_elem(&counts, &key, &val, 0);
	return 0;
}
SEC("fentry/tcp_v4_connect") int hp_map_update_btf_key(u64 *ctx)
{
	u64 val = 1;
	bpf_map_update_elem(&counts, (void *)ctx[0], &val, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int hp_map_bounded_index(u64 *ctx)
{
	u32 key = 0;
	struct val4 *v = bpf_map_lookup_elem(&arr, &key);
	if (v)
		sink = v->v[ctx[0] & 3];
	return 0;
}
SEC("fentry/bpf_fentry_test1") int hp_map_checked_index(u64 *ctx)
{
	u32 key = 0;
	u64 i = ctx[0];
	struct val4 *v = bpf_map_lookup_elem(&arr, &key);
	if (v && i < 4)
		sink = v->v[i];
	return 0;
}
SEC("fentry/bpf_fentry_test1") int hp_map_unbounded_index(u64 *ctx)
{
	u32 key = 0;
	struct val4 *v = bpf_map_lookup_elem(&arr, &key);
	if (v)
		sink = v->v[ctx[0]];
	return 0;
}
SEC("fentry/bpf_fentry_test1") int hp_map_off_by_one(u64 *ctx)
{
	u32 key = 0;
	u64 i = ctx[0];
	struct val4 *v = bpf_map_lookup_elem(&arr, &key);
	if (v && i <= 4)
		sink = v->v[i];
	return 0;
}
SEC("fentry/tcp_v4_connect") int hp_probe_read(u64 *ctx)
{
	char buf[16];
	bpf_probe_read_kernel(buf, sizeof(buf), (void *)ctx[0]);
	sink = buf[3];
	return 0;
}
SEC("fentry/tcp_v4_connect") int hp_probe_read_var_size(u64 *ctx)
{
	char buf[16];
	bpf_probe_read_kernel(buf, ctx[2] & 15, (void *)ctx[0]);
	sink = buf[0];
	return 0;
}
SEC("fentry/tcp_v4_connect") int hp_probe_read_too_big(u64 *ctx)
{
	char buf[16];
	bpf_probe_read_kernel(buf, ctx[2] & 31, (void *)ctx[0]);
	sink = buf[0];
	return 0;
}
SEC("fentry/tcp_v4_connect") int hp_probe_read_to_map(u64 *ctx)
{
	u32 key = 0;
	struct val4 *v = bpf_map_lookup_elem(&arr, &key);
	if (v)
		bpf_probe_read_kernel(v, sizeof(*v), (void *)ctx[0]);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int hp_printk_stack(u64 *ctx)
{
	char fmt[] = "arg %d";
	bpf_trace_printk(fmt, sizeof(fmt), ctx[0]);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int hp_printk_rodata(u64 *ctx)
{
	static const char fmt[] = "arg %d\n";
	bpf_trace_printk(fmt, sizeof(fmt), ctx[0]);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int hp_printk_size_past_fmt(u64 *ctx)
{
	char fmt[] = "arg";
	bpf_trace_printk(fmt, 64, ctx[0]);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int hp_ktime(u64 *ctx) { sink = bpf_ktime_get_ns(); return 0; }
SEC("fentry/bpf_fentry_test1") int hp_pid_tgid(u64 *ctx) { sink = bpf_get_current_pid_tgid(); return 0; }
SEC("fentry/bpf_fentry_test1") int hp_copy_from_user(u64 *ctx)
{
	char buf[8];
	bpf_copy_from_user(buf, sizeof(buf), (void *)ctx[0]);
	sink = buf[0];
	return 0;
}
SEC("fentry.s/bpf_fentry_test1") int hp_copy_from_user_sleepable(u64 *ctx)
{
	char buf[8];
	bpf_copy_from_user(buf, sizeof(buf), (void *)ctx[0]);
	sink = buf[0];
	return 0;
}

char _license[] SEC("license") = "GPL";
