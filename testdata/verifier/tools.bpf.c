/* The shapes of real tracers: exec and open tracers, a latency histogram, stack
 * sampling, perf buffer output, and the bpf_get_current_* / probe-read / d_path
 * helpers they are built from. */
#include "common.h"

struct exec_event { u32 pid; u32 uid; char comm[16]; char filename[64]; };
struct open_start { u64 ts; u64 fname; };
struct stack_event { u32 pid; s32 stack_id; u64 stack[8]; };

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} tl_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, u32);
	__type(value, struct open_start);
} tl_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 32);
	__type(key, u32);
	__type(value, u64);
} tl_hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} tl_pcpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} tl_perf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 128);
	__uint(key_size, sizeof(u32));
	__uint(value_size, 127 * sizeof(u64));
} tl_stacks SEC(".maps");

u64 tl_sink;
const char tl_fmt[] = "%d %llx";

SEC("fentry/bprm_execve") int tl_exec_ringbuf(u64 *ctx)
{
	struct linux_binprm *bprm = (struct linux_binprm *)ctx[0];
	struct exec_event *e = bpf_ringbuf_reserve(&tl_events, sizeof(*e), 0);
	if (!e)
		return 0;
	e->pid = bpf_get_current_pid_tgid() >> 32;
	e->uid = bpf_get_current_uid_gid();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), bprm->filename);
	bpf_ringbuf_submit(e, 0);
	return 0;
}
SEC("fentry/do_sys_openat2") int tl_open_entry(u64 *ctx)
{
	u32 tid = bpf_get_current_pid_tgid();
	struct open_start s = { .ts = bpf_ktime_get_ns(), .fname = ctx[1] };
	bpf_map_update_elem(&tl_start, &tid, &s, 0);
	return 0;
}
SEC("fexit/do_sys_openat2") int tl_open_exit(u64 *ctx)
{
	u32 tid = bpf_get_current_pid_tgid();
	struct open_start *s = bpf_map_lookup_elem(&tl_start, &tid);
	if (!s)
		return 0;
	struct { u64 lat; long ret; char fname[32]; } ev = {};
	ev.lat = bpf_ktime_get_ns() - s->ts;
	ev.ret = ctx[3];
	bpf_probe_read_user_str(ev.fname, sizeof(ev.fname), (void *)s->fname);
	bpf_map_delete_elem(&tl_start, &tid);
	bpf_perf_event_output(ctx, &tl_perf, BPF_F_CURRENT_CPU, &ev, sizeof(ev));
	return 0;
}
SEC("fexit/do_sys_openat2") int tl_open_exit_no_check(u64 *ctx)
{
	u32 tid = bpf_get_current_pid_tgid();
	struct open_start *s = bpf_map_lookup_elem(&tl_start, &tid);
	tl_sink = bpf_ktime_get_ns() - s->ts;
	return 0;
}
SEC("fentry/blk_mq_start_request") int tl_hist_log2(u64 *ctx)
{
	u64 d = bpf_ktime_get_ns() - tl_sink;
	u32 slot = 0;
	for (int i = 0; i < 31 && d > 1; i++) {
		d >>= 1;
		slot++;
	}
	u64 *c = bpf_map_lookup_elem(&tl_hist, &slot);
	if (c)
		__sync_fetch_and_add(c, 1);
	return 0;
}
SEC("fentry/blk_mq_start_request") int tl_hist_unchecked_slot(u64 *ctx)
{
	u32 slot = bpf_get_prandom_u32();
	u64 *c = bpf_map_lookup_elem(&tl_hist, &slot);
	if (c)
		c[slot] += 1;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_perf_stack(u64 *ctx)
{
	struct stack_event ev = {};
	ev.pid = bpf_get_current_pid_tgid();
	bpf_get_stack(ctx, ev.stack, sizeof(ev.stack), 0);
	bpf_perf_event_output(ctx, &tl_perf, BPF_F_CURRENT_CPU, &ev, sizeof(ev));
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_get_stack_too_big(u64 *ctx)
{
	u64 stack[4];
	bpf_get_stack(ctx, stack, 64, 0);
	tl_sink = stack[0];
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_perf_output_ringbuf(u64 *ctx)
{
	u64 v = 1;
	bpf_perf_event_output(ctx, &tl_events, BPF_F_CURRENT_CPU, &v, sizeof(v));
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_perf_output_not_ctx(u64 *ctx)
{
	u64 v = 1;
	bpf_perf_event_output(&v, &tl_perf, BPF_F_CURRENT_CPU, &v, sizeof(v));
	return 0;
}
SEC("lsm/file_open") int tl_perf_output_lsm(u64 *ctx)
{
	u64 v = 1;
	bpf_perf_event_output(ctx, &tl_perf, BPF_F_CURRENT_CPU, &v, sizeof(v));
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_stackid(u64 *ctx)
{
	tl_sink = bpf_get_stackid(ctx, &tl_stacks, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_stackid_hash(u64 *ctx)
{
	tl_sink = bpf_get_stackid(ctx, &tl_start, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_lookup_stack_map(u64 *ctx)
{
	u32 id = 0;
	u64 *ips = bpf_map_lookup_elem(&tl_stacks, &id);
	if (ips)
		tl_sink = ips[0];
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_perf_read_value(u64 *ctx)
{
	struct bpf_perf_event_value v;
	bpf_perf_event_read_value(&tl_perf, BPF_F_CURRENT_CPU, &v, sizeof(v));
	tl_sink = v.counter;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_comm_small(u64 *ctx)
{
	char c[8];
	bpf_get_current_comm(c, sizeof(c));
	tl_sink = c[0];
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_comm_too_big(u64 *ctx)
{
	char c[16];
	bpf_get_current_comm(c, 32);
	tl_sink = c[0];
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_ids(u64 *ctx)
{
	tl_sink = bpf_get_current_uid_gid() + bpf_get_current_cgroup_id() +
		  bpf_get_current_ancestor_cgroup_id(1) + bpf_get_smp_processor_id() +
		  bpf_get_prandom_u32();
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_clocks(u64 *ctx)
{
	tl_sink = bpf_ktime_get_ns() + bpf_ktime_get_coarse_ns() + bpf_ktime_get_tai_ns();
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_current_task_read(u64 *ctx)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	int pid = 0;
	bpf_probe_read_kernel(&pid, sizeof(pid), &t->pid);
	tl_sink = pid;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_current_task_deref(u64 *ctx)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	tl_sink = t->pid;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_send_signal(u64 *ctx)
{
	if (ctx[0] == 9)
		bpf_send_signal(9);
	else
		bpf_send_signal_thread(15);
	return 0;
}
SEC("fentry/vfs_truncate") int tl_d_path_truncate(u64 *ctx)
{
	char buf[64];
	bpf_d_path((struct path *)ctx[0], buf, sizeof(buf));
	tl_sink = buf[0];
	return 0;
}
SEC("lsm/file_open") int tl_d_path_lsm(u64 *ctx)
{
	struct file *f = (struct file *)ctx[0];
	char buf[64];
	bpf_d_path(&f->f_path, buf, sizeof(buf));
	tl_sink = buf[0];
	return 0;
}
SEC("fentry/vfs_read") int tl_d_path_not_allowed(u64 *ctx)
{
	struct file *f = (struct file *)ctx[0];
	char buf[64];
	bpf_d_path(&f->f_path, buf, sizeof(buf));
	tl_sink = buf[0];
	return 0;
}
SEC("fentry/security_file_open") int tl_d_path_scalar(u64 *ctx)
{
	char buf[64];
	bpf_d_path((struct path *)bpf_get_current_task(), buf, sizeof(buf));
	tl_sink = buf[0];
	return 0;
}
SEC("fentry/security_file_open") int tl_d_path_file_not_path(u64 *ctx)
{
	char buf[64];
	bpf_d_path((struct path *)ctx[0], buf, sizeof(buf));
	tl_sink = buf[0];
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_probe_read_old(u64 *ctx)
{
	u64 v;
	bpf_probe_read(&v, sizeof(v), (void *)ctx[0]);
	tl_sink = v;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_probe_read_str_old(u64 *ctx)
{
	char s[16];
	bpf_probe_read_str(s, sizeof(s), (void *)ctx[0]);
	tl_sink = s[0];
	return 0;
}
SEC("fentry/do_sys_openat2") int tl_probe_read_user_str(u64 *ctx)
{
	char s[32];
	long n = bpf_probe_read_user_str(s, sizeof(s), (void *)ctx[1]);
	tl_sink = n;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_probe_read_user_into_map(u64 *ctx)
{
	u32 k = 0;
	u64 *v = bpf_map_lookup_elem(&tl_hist, &k);
	if (v)
		bpf_probe_read_user(v, 16, (void *)ctx[0]);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_snprintf(u64 *ctx)
{
	char out[32];
	u64 args[2] = { bpf_get_current_pid_tgid(), ctx[0] };
	bpf_snprintf(out, sizeof(out), tl_fmt, args, sizeof(args));
	tl_sink = out[0];
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_ns_pid_tgid(u64 *ctx)
{
	struct bpf_pidns_info ns;
	bpf_get_ns_current_pid_tgid(0, 0, &ns, sizeof(ns));
	tl_sink = ns.pid;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_task_pt_regs(u64 *ctx)
{
	struct pt_regs *r = bpf_task_pt_regs(bpf_get_current_task_btf());
	tl_sink = (u64)r;
	return 0;
}
SEC("lsm.s/file_open") int tl_copy_from_user_task(u64 *ctx)
{
	char b[16];
	bpf_copy_from_user_task(b, sizeof(b), (void *)ctx[1], bpf_get_current_task_btf(), 0);
	tl_sink = b[0];
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_percpu_lookup(u64 *ctx)
{
	u32 k = 0;
	u64 *v = bpf_map_lookup_percpu_elem(&tl_pcpu, &k, 0);
	if (v)
		tl_sink = *v;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_override_return(u64 *ctx)
{
	long (*bpf_override_return)(void *regs, u64 rc) = (void *)58;
	bpf_override_return(ctx, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_seq_printf(u64 *ctx)
{
	long (*bpf_seq_write)(void *m, const void *data, u32 len) = (void *)127;
	bpf_seq_write(ctx, ctx, 8);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int tl_tai(u64 *ctx)
{
	tl_sink = bpf_ktime_get_tai_ns();
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_task_stack(u64 *ctx)
{
	long (*bpf_get_task_stack)(struct task_struct *task, void *buf, u32 size, u64 flags) = (void *)141;
	u64 ips[8];
	long n = bpf_get_task_stack(bpf_get_current_task_btf(), ips, sizeof(ips), 0);
	tl_sink = n > 0 ? ips[0] : 0;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_comm_zero(u64 *ctx)
{
	char c[16];
	bpf_get_current_comm(c, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_perf_event_read(u64 *ctx)
{
	long (*bpf_perf_event_read)(void *map, u64 flags) = (void *)22;
	tl_sink = bpf_perf_event_read(&tl_perf, BPF_F_CURRENT_CPU);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_perf_output_var_size(u64 *ctx)
{
	u64 buf[8] = {};
	u64 n = ctx[0] & 63;
	bpf_perf_event_output(ctx, &tl_perf, BPF_F_CURRENT_CPU, buf, n);
	return 0;
}
SEC("fentry/filp_close") int tl_d_path_filp_close(u64 *ctx)
{
	struct file *f = (struct file *)ctx[0];
	char buf[64];
	long n = bpf_d_path(&f->f_path, buf, sizeof(buf));
	tl_sink = n;
	return 0;
}
SEC("lsm/task_kill") int tl_send_signal_lsm(u64 *ctx)
{
	bpf_send_signal(9);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_stackid_not_ctx(u64 *ctx)
{
	u64 v = 0;
	tl_sink = bpf_get_stackid(&v, &tl_stacks, 0);
	return 0;
}

SEC("fentry/bpf_fentry_test1") int tl_str_len_index(u64 *ctx)
{
	char buf[32];
	long n = bpf_probe_read_kernel_str(buf, sizeof(buf), (void *)ctx[0]);
	if (n > 0)
		tl_sink = buf[n - 1];
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_str_len_unchecked(u64 *ctx)
{
	char buf[32];
	long n = bpf_probe_read_kernel_str(buf, sizeof(buf), (void *)ctx[0]);
	tl_sink = buf[n];
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_stack_len_output(u64 *ctx)
{
	u64 ips[8];
	long n = bpf_get_stack(ctx, ips, sizeof(ips), 0);
	if (n > 0)
		bpf_perf_event_output(ctx, &tl_perf, BPF_F_CURRENT_CPU, ips, n);
	return 0;
}
SEC("fentry/do_sys_openat2") int tl_user_str_len_copy(u64 *ctx)
{
	char buf[64];
	long n = bpf_probe_read_user_str(buf, sizeof(buf), (void *)ctx[1]);
	if (n <= 0)
		return 0;
	char *e = bpf_ringbuf_reserve(&tl_events, 64, 0);
	if (!e)
		return 0;
	bpf_probe_read_kernel(e, n, buf);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

struct {
	__uint(type, 22); /* BPF_MAP_TYPE_QUEUE */
	__uint(max_entries, 16);
	__type(value, u64);
} tl_queue SEC(".maps");

struct {
	__uint(type, 8); /* BPF_MAP_TYPE_CGROUP_ARRAY */
	__uint(max_entries, 1);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} tl_cgroups SEC(".maps");

char tl_fmt_rw[8] = "%d";
static long (*bpf_map_push_elem)(void *map, const void *value, u64 flags) = (void *)87;
static long (*bpf_map_pop_elem)(void *map, void *value) = (void *)88;

SEC("fentry/bpf_fentry_test1") int tl_queue_push_pop(u64 *ctx)
{
	u64 v = ctx[0];
	bpf_map_push_elem(&tl_queue, &v, 0);
	u64 out;
	if (bpf_map_pop_elem(&tl_queue, &out) == 0)
		tl_sink = out;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_pop_hash(u64 *ctx)
{
	struct open_start out;
	bpf_map_pop_elem(&tl_start, &out);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_copy_from_user_task_nonsleep(u64 *ctx)
{
	char b[8];
	bpf_copy_from_user_task(b, sizeof(b), (void *)ctx[0], bpf_get_current_task_btf(), 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_task_under_cgroup(u64 *ctx)
{
	long (*bpf_current_task_under_cgroup)(void *map, u32 index) = (void *)37;
	tl_sink = bpf_current_task_under_cgroup(&tl_cgroups, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_probe_write_user(u64 *ctx)
{
	long (*bpf_probe_write_user)(void *dst, const void *src, u32 len) = (void *)36;
	u64 v = 0;
	bpf_probe_write_user((void *)ctx[0], &v, sizeof(v));
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_snprintf_btf(u64 *ctx)
{
	struct btf_ptr p = { .ptr = bpf_get_current_task_btf(), .type_id = 1 };
	char out[64];
	bpf_snprintf_btf(out, sizeof(out), &p, sizeof(p), 0);
	tl_sink = out[0];
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_snprintf_fmt_stack(u64 *ctx)
{
	char fmt[4] = "%d";
	char out[16];
	u64 args[1] = { ctx[0] };
	bpf_snprintf(out, sizeof(out), fmt, args, sizeof(args));
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_snprintf_fmt_rw(u64 *ctx)
{
	char out[16];
	u64 args[1] = { ctx[0] };
	bpf_snprintf(out, sizeof(out), tl_fmt_rw, args, sizeof(args));
	return 0;
}
SEC("fentry/bpf_sk_storage_free") int tl_sk_storage_in_itself(u64 *ctx)
{
	void *v = bpf_sk_storage_get(&tl_start, (void *)ctx[0], 0, 0);
	tl_sink = v != 0;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_get_stack_var_size(u64 *ctx)
{
	u64 ips[8];
	long n = bpf_get_stack(ctx, ips, ctx[0] & 63, 0);
	tl_sink = n;
	return 0;
}
SEC("fmod_ret/security_file_open") int tl_override_fmod_ret(u64 *ctx)
{
	long (*bpf_override_return)(void *regs, u64 rc) = (void *)58;
	bpf_override_return(ctx, 0);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_ringbuf_output_var(u64 *ctx)
{
	u64 buf[4] = {};
	bpf_ringbuf_output(&tl_events, buf, ctx[0] & 31, 0);
	return 0;
}

struct tcp_sock { u32 srtt_us; } CORE;
static u64 (*bpf_get_socket_cookie)(void *sk) = (void *)46;
static struct tcp_sock *(*bpf_skc_to_tcp_sock)(void *sk) = (void *)137;
static struct socket *(*bpf_sock_from_file)(struct file *file) = (void *)162;

SEC("fentry/tcp_v4_connect") int tl_socket_cookie(u64 *ctx)
{
	tl_sink = bpf_get_socket_cookie((void *)ctx[0]);
	return 0;
}
SEC("fentry/tcp_v4_connect") int tl_socket_cookie_scalar(u64 *ctx)
{
	tl_sink = bpf_get_socket_cookie((void *)ctx[2]);
	return 0;
}
SEC("fentry/tcp_v4_connect") int tl_skc_to_tcp_sock(u64 *ctx)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)ctx[0]);
	if (tp)
		tl_sink = tp->srtt_us;
	return 0;
}
SEC("fentry/tcp_v4_connect") int tl_skc_to_tcp_sock_unchecked(u64 *ctx)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)ctx[0]);
	tl_sink = tp->srtt_us;
	return 0;
}
SEC("lsm/file_open") int tl_sock_from_file(u64 *ctx)
{
	struct socket *s = bpf_sock_from_file((struct file *)ctx[0]);
	if (s)
		tl_sink = s->type;
	return 0;
}

static long (*bpf_trace_vprintk)(const char *fmt, u32 fmt_size, const void *data, u32 data_len) = (void *)177;
static long (*bpf_strncmp)(const char *s1, u32 s1_sz, const char *s2) = (void *)182;
static long (*bpf_get_branch_snapshot)(void *entries, u32 size, u64 flags) = (void *)176;
const char tl_vfmt[] = "%d %d %d %d";
const char tl_bash[] = "bash";

SEC("fentry/bpf_fentry_test1") int tl_vprintk(u64 *ctx)
{
	u64 args[4] = { 1, 2, 3, ctx[0] };
	bpf_trace_vprintk(tl_vfmt, sizeof(tl_vfmt), args, sizeof(args));
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_vprintk_args_past(u64 *ctx)
{
	u64 args[2] = { 1, ctx[0] };
	bpf_trace_vprintk(tl_vfmt, sizeof(tl_vfmt), args, 32);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_strncmp_comm(u64 *ctx)
{
	char comm[16];
	bpf_get_current_comm(comm, sizeof(comm));
	tl_sink = bpf_strncmp(comm, sizeof(comm), tl_bash) == 0;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_strncmp_stack_str(u64 *ctx)
{
	char comm[16];
	char want[8] = "bash";
	bpf_get_current_comm(comm, sizeof(comm));
	tl_sink = bpf_strncmp(comm, sizeof(comm), want) == 0;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int tl_branch_snapshot(u64 *ctx)
{
	u64 entries[6];
	long n = bpf_get_branch_snapshot(entries, sizeof(entries), 0);
	tl_sink = n;
	return 0;
}

char _license[] SEC("license") = "GPL";
