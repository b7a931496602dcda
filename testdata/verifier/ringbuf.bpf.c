/* Ring buffers: bpf_ringbuf_reserve hands out a record with a reference that
 * bpf_ringbuf_submit or bpf_ringbuf_discard must give back on every path;
 * bpf_ringbuf_output copies, bpf_ringbuf_query asks. */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, u32);
	__type(value, u64);
} rb_hash SEC(".maps");

struct rb_event { u32 pid; u32 tgid; u64 ts; char comm[16]; };

u64 rb_sink;

SEC("fentry/bpf_fentry_test1") int rb_reserve_submit(u64 *ctx)
{
	struct rb_event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e)
		return 0;
	u64 id = bpf_get_current_pid_tgid();
	e->pid = id;
	e->tgid = id >> 32;
	e->ts = bpf_ktime_get_ns();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_reserve_discard(u64 *ctx)
{
	struct rb_event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e)
		return 0;
	e->ts = bpf_ktime_get_ns();
	if (ctx[0] == 7)
		bpf_ringbuf_discard(e, 0);
	else
		bpf_ringbuf_submit(e, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_no_null_check(u64 *ctx)
{
	struct rb_event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	e->ts = 1;
	bpf_ringbuf_submit(e, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_leak(u64 *ctx)
{
	struct rb_event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e)
		return 0;
	e->ts = 1;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_leak_one_path(u64 *ctx)
{
	struct rb_event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e)
		return 0;
	e->ts = 1;
	if (ctx[0] == 3)
		return 1;
	bpf_ringbuf_submit(e, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_write_past_record(u64 *ctx)
{
	struct rb_event *e = bpf_ringbuf_reserve(&rb, 16, 0);
	if (!e)
		return 0;
	e->ts = 1;
	((u64 *)e)[2] = 5;
	bpf_ringbuf_submit(e, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_read_past_record(u64 *ctx)
{
	u64 *e = bpf_ringbuf_reserve(&rb, 8, 0);
	if (!e)
		return 0;
	rb_sink = e[1];
	bpf_ringbuf_discard(e, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_var_size(u64 *ctx)
{
	u64 n = ctx[0] & 63;
	char *e = bpf_ringbuf_reserve(&rb, n, 0);
	if (!e)
		return 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_use_after_discard(u64 *ctx)
{
	struct rb_event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e)
		return 0;
	bpf_ringbuf_discard(e, 0);
	e->ts = 2;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_double_submit(u64 *ctx)
{
	struct rb_event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e)
		return 0;
	bpf_ringbuf_submit(e, 0);
	bpf_ringbuf_submit(e, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_submit_stack(u64 *ctx)
{
	struct rb_event ev = {};
	bpf_ringbuf_submit(&ev, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_submit_offset(u64 *ctx)
{
	struct rb_event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e)
		return 0;
	bpf_ringbuf_submit(&e->ts, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_reserve_hash_map(u64 *ctx)
{
	u64 *e = bpf_ringbuf_reserve(&rb_hash, 8, 0);
	if (!e)
		return 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_lookup_ringbuf(u64 *ctx)
{
	u32 k = 0;
	u64 *v = bpf_map_lookup_elem(&rb, &k);
	if (v)
		rb_sink = *v;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_output(u64 *ctx)
{
	struct rb_event ev = {};
	ev.pid = bpf_get_current_pid_tgid();
	ev.ts = bpf_ktime_get_ns();
	bpf_ringbuf_output(&rb, &ev, sizeof(ev), 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_output_uninit(u64 *ctx)
{
	struct rb_event ev;
	ev.pid = 1;
	bpf_ringbuf_output(&rb, &ev, sizeof(ev), 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_output_too_big(u64 *ctx)
{
	struct rb_event ev = {};
	bpf_ringbuf_output(&rb, &ev, sizeof(ev) + 8, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_query(u64 *ctx)
{
	rb_sink = bpf_ringbuf_query(&rb, 0);
	return 0;
}
SEC("lsm/file_open") int rb_lsm_open_event(u64 *ctx)
{
	struct file *f = (struct file *)ctx[0];
	struct rb_event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e)
		return 0;
	e->pid = f->f_flags;
	e->ts = f->f_inode->i_ino;
	bpf_ringbuf_submit(e, 0);
	return 0;
}
SEC("fexit/bpf_fentry_test1") int rb_fexit_ret(u64 *ctx)
{
	u64 *e = bpf_ringbuf_reserve(&rb, 16, 0);
	if (!e)
		return 0;
	e[0] = ctx[0];
	e[1] = ctx[1];
	bpf_ringbuf_submit(e, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_helper_into_record(u64 *ctx)
{
	char *e = bpf_ringbuf_reserve(&rb, 32, 0);
	if (!e)
		return 0;
	bpf_get_current_comm(e, 32);
	bpf_probe_read_kernel(e + 16, 16, (void *)ctx[0]);
	bpf_ringbuf_submit(e, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_helper_past_record(u64 *ctx)
{
	char *e = bpf_ringbuf_reserve(&rb, 16, 0);
	if (!e)
		return 0;
	bpf_get_current_comm(e, 32);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int rb_reserve_huge(u64 *ctx)
{
	char *e = bpf_ringbuf_reserve(&rb, 1 << 20, 0);
	if (!e)
		return 0;
	bpf_ringbuf_discard(e, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_submit_unchecked(u64 *ctx)
{
	char *e = bpf_ringbuf_reserve(&rb, 8, 0);
	bpf_ringbuf_submit(e, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_record_in_map_value(u64 *ctx)
{
	u32 k = 0;
	u64 *v = bpf_map_lookup_elem(&rb_hash, &k);
	if (!v)
		return 0;
	char *e = bpf_ringbuf_reserve(&rb, 8, 0);
	if (!e)
		return 0;
	*(u64 *)e = *v;
	bpf_ringbuf_submit(e, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_two_records(u64 *ctx)
{
	u64 *a = bpf_ringbuf_reserve(&rb, 8, 0);
	if (!a)
		return 0;
	u64 *b = bpf_ringbuf_reserve(&rb, 8, 0);
	if (!b) {
		bpf_ringbuf_discard(a, 0);
		return 0;
	}
	*a = 1;
	*b = 2;
	bpf_ringbuf_submit(a, 0);
	bpf_ringbuf_submit(b, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int rb_two_records_leak_second(u64 *ctx)
{
	u64 *a = bpf_ringbuf_reserve(&rb, 8, 0);
	if (!a)
		return 0;
	u64 *b = bpf_ringbuf_reserve(&rb, 8, 0);
	if (!b) {
		bpf_ringbuf_discard(a, 0);
		return 0;
	}
	bpf_ringbuf_submit(a, 0);
	return 0;
}
SEC("lsm/bprm_check_security") int rb_lsm_exec(u64 *ctx)
{
	struct linux_binprm *bprm = (struct linux_binprm *)ctx[0];
	struct rb_event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e)
		return 0;
	e->pid = bpf_get_current_pid_tgid() >> 32;
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), bprm->filename);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

char _license[] SEC("license") = "GPL";
