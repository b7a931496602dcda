/* libbpf's section spellings (tools/lib/bpf/libbpf.c, section_defs): sleepable ".s"
 * variants, the '?' prefix (autoload off: still verifiable), "module:function" targets, and
 * an object that mixes program types: the kprobe, tracepoint, raw_tp, iter, perf_event,
 * cgroup, struct_ops, xdp, freplace and lsm_cgroup programs are skipped with a note, the
 * others are verified. */
#include "common.h"

u64 sec_sink;

SEC("fentry/bpf_fentry_test1") int sec_fentry(u64 *ctx) { sec_sink = ctx[0]; return 0; }
SEC("fexit/bpf_fentry_test1") int sec_fexit(u64 *ctx) { sec_sink = ctx[1]; return 0; }
SEC("fmod_ret/bpf_modify_return_test") int sec_fmod_ret(u64 *ctx) { return 0; }
SEC("lsm/file_open") int sec_lsm(u64 *ctx) { return 0; }
SEC("tp_btf/sched_switch") int sec_tp_btf(u64 *ctx) { sec_sink = ctx[3]; return 0; }
/* sleepable spellings */
SEC("fentry.s/bpf_fentry_test1") int sec_fentry_s(u64 *ctx) { return 0; }
SEC("fexit.s/bpf_fentry_test1") int sec_fexit_s(u64 *ctx) { return 0; }
SEC("fmod_ret.s/bpf_modify_return_test") int sec_fmod_ret_s(u64 *ctx) { return 0; }
SEC("lsm.s/file_open") int sec_lsm_s(u64 *ctx)
{
	char buf[8];
	bpf_copy_from_user(buf, sizeof(buf), (void *)ctx[0]);
	return 0;
}
SEC("lsm.s/bprm_committed_creds") int sec_lsm_s_void(u64 *ctx) { return 0; }
/* '?': autoload off, verified when asked */
SEC("?fentry/bpf_fentry_test1") int sec_q_fentry(u64 *ctx) { sec_sink = ctx[0]; return 0; }
SEC("?fexit/bpf_fentry_test2") int sec_q_fexit_bad(u64 *ctx) { sec_sink = ctx[5]; return 0; }
SEC("?lsm.s/file_open") int sec_q_lsm_s(u64 *ctx) { return 0; }
SEC("?tp_btf/sched_process_exec") int sec_q_tp_btf(u64 *ctx) { sec_sink = ctx[1]; return 0; }
/* module:function targets: vmlinux names the kernel itself, another module is searched in
 * the module BTFs */
SEC("fentry/vmlinux:bpf_fentry_test1") int sec_mod_vmlinux(u64 *ctx) { sec_sink = ctx[0]; return 0; }
SEC("fexit/vmlinux:bpf_fentry_test2") int sec_mod_vmlinux_fexit(u64 *ctx) { sec_sink = ctx[2]; return 0; }
SEC("fentry/no_such_module:no_such_function") int sec_mod_missing(u64 *ctx) { return 0; }
SEC("fentry/vmlinux:no_such_function") int sec_mod_vmlinux_missing(u64 *ctx) { return 0; }
/* not verified by the model or the backend: skipped, with a note */
SEC("kprobe/tcp_v4_connect") int sec_kprobe(void *ctx) { return 0; }
SEC("kretprobe/tcp_v4_connect") int sec_kretprobe(void *ctx) { return 0; }
SEC("tracepoint/sched/sched_switch") int sec_tracepoint(void *ctx) { return 0; }
SEC("raw_tp/sched_switch") int sec_raw_tp(void *ctx) { return 0; }
SEC("iter/task") int sec_iter(void *ctx) { return 0; }
SEC("perf_event") int sec_perf_event(void *ctx) { return 0; }
SEC("cgroup_skb/egress") int sec_cgroup_skb(void *ctx) { return 1; }
SEC("cgroup/connect4") int sec_cgroup_connect4(void *ctx) { return 1; }
SEC("struct_ops/test_1") int sec_struct_ops(void *ctx) { return 0; }
SEC("xdp") int sec_xdp(void *ctx) { return 2; }
SEC("freplace/bpf_fentry_test1") int sec_freplace(void *ctx) { return 0; }
SEC("lsm_cgroup/socket_bind") int sec_lsm_cgroup(u64 *ctx) { return 1; }
char _license[] SEC("license") = "GPL";
