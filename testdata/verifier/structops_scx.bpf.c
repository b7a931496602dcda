/* A minimal sched_ext scheduler's ops (BPF_PROG_TYPE_STRUCT_OPS on sched_ext_ops, 7.2):
 * CPU selection keeping the previous CPU, a time slice set at enqueue (the one task field
 * with dsq_vtime a scheduler may write), a sleepable init, an exit reading the exit code; and
 * the failures: a write to another task field, a sleepable select_cpu, dispatch's
 * maybe-NULL previous task used unchecked, a pointer returned. Kernels without sched_ext
 * (6.1, 6.12) have no sched_ext_ops: libbpf refuses before loading. */
#include "common.h"

struct sched_ext_entity { u64 slice; u64 dsq_vtime; } CORE;
struct task_struct___scx { int pid; struct sched_ext_entity scx; } CORE;
struct scx_exit_info { s64 exit_code; } CORE;

#define SCX_SLICE_DFL 20000000ULL

SEC("struct_ops/mini_select_cpu") s32 mini_select_cpu(u64 *ctx)
{
	return (s32)ctx[1]; /* prev_cpu */
}

SEC("struct_ops/mini_enqueue") void mini_enqueue(u64 *ctx)
{
	struct task_struct___scx *p = (void *)ctx[0];

	p->scx.slice = SCX_SLICE_DFL / 4;
}

SEC("struct_ops/mini_running") void mini_running(u64 *ctx)
{
	struct task_struct___scx *p = (void *)ctx[0];

	if (p->pid == 1)
		p->scx.dsq_vtime = 0;
}

SEC("struct_ops/mini_dispatch") void mini_dispatch(u64 *ctx)
{
	struct task_struct___scx *prev = (void *)ctx[1];

	if (prev && prev->scx.slice == 0)
		prev->scx.slice = SCX_SLICE_DFL;
}

SEC("struct_ops.s/mini_init") s32 mini_init(u64 *ctx) { return 0; }

SEC("struct_ops/mini_exit") void mini_exit(u64 *ctx)
{
	struct scx_exit_info *ei = (void *)ctx[0];
	volatile s64 code = ei->exit_code;

	(void)code;
}

/* --- failures ------------------------------------------------------------------------- */

SEC("struct_ops/scx_bad_write_pid") void scx_bad_write_pid(u64 *ctx)
{
	struct task_struct___scx *p = (void *)ctx[0];

	p->pid = 0;
}

SEC("struct_ops.s/scx_bad_sleepable") s32 scx_bad_sleepable(u64 *ctx) { return (s32)ctx[1]; }

SEC("struct_ops/scx_bad_dispatch") void scx_bad_dispatch(u64 *ctx)
{
	struct task_struct___scx *prev = (void *)ctx[1];

	prev->scx.slice = SCX_SLICE_DFL;
}

SEC("struct_ops/scx_bad_ret") s32 scx_bad_ret(u64 *ctx) { return ctx[0]; }

struct sched_ext_ops {
	s32 (*select_cpu)(struct task_struct___scx *p, s32 prev_cpu, u64 wake_flags);
	void (*enqueue)(struct task_struct___scx *p, u64 enq_flags);
	void (*dispatch)(s32 cpu, struct task_struct___scx *prev);
	void (*running)(struct task_struct___scx *p);
	s32 (*init)(void);
	void (*exit)(struct scx_exit_info *ei);
	char name[128];
};

SEC(".struct_ops.link") struct sched_ext_ops mini = {
	.select_cpu = (void *)mini_select_cpu,
	.enqueue = (void *)mini_enqueue,
	.dispatch = (void *)mini_dispatch,
	.running = (void *)mini_running,
	.init = (void *)mini_init,
	.exit = (void *)mini_exit,
	.name = "mini",
};

SEC(".struct_ops.link") struct sched_ext_ops scx_bad1 = {
	.select_cpu = (void *)scx_bad_sleepable,
	.running = (void *)scx_bad_write_pid,
	.dispatch = (void *)scx_bad_dispatch,
	.name = "scx_bad1",
};

SEC(".struct_ops.link") struct sched_ext_ops scx_bad2 = {
	.select_cpu = (void *)scx_bad_ret,
	.name = "scx_bad2",
};

char _license[] SEC("license") = "GPL";
