/* bpf_spin_lock in map values: the lock is found through the value's BTF, taken and
 * released around plain loads and stores of the same value. */
#include "common.h"

struct sl_val { struct bpf_spin_lock lock; u32 pad; u64 cnt; u64 sum; };
struct plain_val { u64 a; u64 b; };

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, u32);
	__type(value, struct sl_val);
} sl_arr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, u32);
	__type(value, struct sl_val);
} sl_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, u32);
	__type(value, struct plain_val);
} sl_plain SEC(".maps");

u64 sl_sink;

SEC("fentry/bpf_fentry_test1") int sl_lock_unlock(u64 *ctx)
{
	u32 k = 0;
	struct sl_val *v = bpf_map_lookup_elem(&sl_arr, &k);
	if (!v)
		return 0;
	bpf_spin_lock(&v->lock);
	v->cnt++;
	v->sum += ctx[0];
	bpf_spin_unlock(&v->lock);
	return 0;
}
SEC("lsm/file_open") int sl_lsm_hash(u64 *ctx)
{
	u32 k = 1;
	struct sl_val *v = bpf_map_lookup_elem(&sl_hash, &k);
	if (!v)
		return 0;
	bpf_spin_lock(&v->lock);
	v->cnt++;
	bpf_spin_unlock(&v->lock);
	return 0;
}
SEC("fexit/bpf_fentry_test1") int sl_fexit(u64 *ctx)
{
	u32 k = 2;
	struct sl_val *v = bpf_map_lookup_elem(&sl_arr, &k);
	if (!v)
		return 0;
	bpf_spin_lock(&v->lock);
	v->sum = ctx[1];
	bpf_spin_unlock(&v->lock);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int sl_missing_unlock(u64 *ctx)
{
	u32 k = 0;
	struct sl_val *v = bpf_map_lookup_elem(&sl_arr, &k);
	if (!v)
		return 0;
	bpf_spin_lock(&v->lock);
	v->cnt++;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int sl_unlock_only(u64 *ctx)
{
	u32 k = 0;
	struct sl_val *v = bpf_map_lookup_elem(&sl_arr, &k);
	if (!v)
		return 0;
	bpf_spin_unlock(&v->lock);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int sl_call_inside(u64 *ctx)
{
	u32 k = 0;
	struct sl_val *v = bpf_map_lookup_elem(&sl_arr, &k);
	if (!v)
		return 0;
	bpf_spin_lock(&v->lock);
	v->sum = bpf_ktime_get_ns();
	bpf_spin_unlock(&v->lock);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int sl_read_lock_word(u64 *ctx)
{
	u32 k = 0;
	struct sl_val *v = bpf_map_lookup_elem(&sl_arr, &k);
	if (!v)
		return 0;
	sl_sink = *(volatile u32 *)&v->lock;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int sl_wrong_offset(u64 *ctx)
{
	u32 k = 0;
	struct sl_val *v = bpf_map_lookup_elem(&sl_arr, &k);
	if (!v)
		return 0;
	bpf_spin_lock((struct bpf_spin_lock *)&v->cnt);
	bpf_spin_unlock((struct bpf_spin_lock *)&v->cnt);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int sl_no_lock_in_value(u64 *ctx)
{
	u32 k = 0;
	struct plain_val *v = bpf_map_lookup_elem(&sl_plain, &k);
	if (!v)
		return 0;
	bpf_spin_lock((struct bpf_spin_lock *)v);
	bpf_spin_unlock((struct bpf_spin_lock *)v);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int sl_stack_lock(u64 *ctx)
{
	struct sl_val v = {};
	bpf_spin_lock(&v.lock);
	bpf_spin_unlock(&v.lock);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int sl_two_locks(u64 *ctx)
{
	u32 k0 = 0, k1 = 1;
	struct sl_val *a = bpf_map_lookup_elem(&sl_arr, &k0);
	struct sl_val *b = bpf_map_lookup_elem(&sl_arr, &k1);
	if (!a || !b)
		return 0;
	bpf_spin_lock(&a->lock);
	bpf_spin_lock(&b->lock);
	bpf_spin_unlock(&b->lock);
	bpf_spin_unlock(&a->lock);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int sl_unchecked_value(u64 *ctx)
{
	u32 k = 0;
	struct sl_val *v = bpf_map_lookup_elem(&sl_arr, &k);
	bpf_spin_lock(&v->lock);
	bpf_spin_unlock(&v->lock);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int sl_var_offset(u64 *ctx)
{
	u32 k = 0;
	struct sl_val *v = bpf_map_lookup_elem(&sl_arr, &k);
	if (!v)
		return 0;
	char *p = (char *)v + (ctx[0] & 8);
	bpf_spin_lock((struct bpf_spin_lock *)p);
	bpf_spin_unlock((struct bpf_spin_lock *)p);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int sl_unlock_other(u64 *ctx)
{
	u32 k0 = 0, k1 = 1;
	struct sl_val *a = bpf_map_lookup_elem(&sl_hash, &k0);
	struct sl_val *b = bpf_map_lookup_elem(&sl_hash, &k1);
	if (!a || !b)
		return 0;
	bpf_spin_lock(&a->lock);
	bpf_spin_unlock(&b->lock);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int sl_write_lock_word(u64 *ctx)
{
	u32 k = 0;
	struct sl_val *v = bpf_map_lookup_elem(&sl_arr, &k);
	if (!v)
		return 0;
	*(volatile u32 *)&v->lock = 0;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int sl_helper_over_lock(u64 *ctx)
{
	u32 k = 0;
	struct sl_val *v = bpf_map_lookup_elem(&sl_arr, &k);
	if (!v)
		return 0;
	bpf_probe_read_kernel(v, 16, (void *)ctx[0]);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int sl_helper_after_lock(u64 *ctx)
{
	u32 k = 0;
	struct sl_val *v = bpf_map_lookup_elem(&sl_arr, &k);
	if (!v)
		return 0;
	bpf_probe_read_kernel(&v->cnt, 16, (void *)ctx[0]);
	return 0;
}
SEC("lsm.s/file_open") int sl_sleepable(u64 *ctx)
{
	u32 k = 0;
	struct sl_val *v = bpf_map_lookup_elem(&sl_hash, &k);
	if (!v)
		return 0;
	bpf_spin_lock(&v->lock);
	v->cnt++;
	bpf_spin_unlock(&v->lock);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int sl_branch_unlock_one_path(u64 *ctx)
{
	u32 k = 0;
	struct sl_val *v = bpf_map_lookup_elem(&sl_hash, &k);
	if (!v)
		return 0;
	bpf_spin_lock(&v->lock);
	if (ctx[0] == 1) {
		bpf_spin_unlock(&v->lock);
		return 1;
	}
	v->cnt = 5;
	return 0;
}

char _license[] SEC("license") = "GPL";
