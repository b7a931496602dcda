/* A sched_ext scheduler as scx_simple writes one (7.2): CPU selection through the default
 * idle picker with a direct insert into the local queue, a shared queue created at init and
 * fed at enqueue, dispatch moving from it, a kick of an idle CPU; and the kfuncs called
 * from members whose context does not allow them. */
#include "common.h"

#define __ksym __attribute__((section(".ksyms")))
extern s32 scx_bpf_select_cpu_dfl(struct task_struct *p, s32 prev_cpu, u64 wake_flags, _Bool *is_idle) __ksym;
extern void scx_bpf_dsq_insert(struct task_struct *p, u64 dsq_id, u64 slice, u64 enq_flags) __ksym;
extern _Bool scx_bpf_dsq_move_to_local(u64 dsq_id) __ksym;
extern s32 scx_bpf_create_dsq(u64 dsq_id, s32 node) __ksym;
extern s32 scx_bpf_dsq_nr_queued(u64 dsq_id) __ksym;
extern void scx_bpf_kick_cpu(s32 cpu, u64 flags) __ksym;
extern s32 scx_bpf_task_cpu(const struct task_struct *p) __ksym;

#define SHARED_DSQ 0
#define SCX_DSQ_LOCAL ((1ULL << 63) | 2)
#define SCX_SLICE_DFL 20000000ULL

SEC("struct_ops/sk_select_cpu") s32 sk_select_cpu(u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	_Bool is_idle = 0;
	s32 cpu = scx_bpf_select_cpu_dfl(p, (s32)ctx[1], ctx[2], &is_idle);

	if (is_idle)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, SCX_SLICE_DFL, 0);
	return cpu;
}

SEC("struct_ops/sk_enqueue") void sk_enqueue(u64 *ctx)
{
	scx_bpf_dsq_insert((void *)ctx[0], SHARED_DSQ, SCX_SLICE_DFL, ctx[1]);
}

SEC("struct_ops/sk_dispatch") void sk_dispatch(u64 *ctx)
{
	scx_bpf_dsq_move_to_local(SHARED_DSQ);
}

SEC("struct_ops/sk_running") void sk_running(u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];

	if (scx_bpf_dsq_nr_queued(SHARED_DSQ) > 1)
		scx_bpf_kick_cpu(scx_bpf_task_cpu(p), 0);
}

SEC("struct_ops.s/sk_init") s32 sk_init(u64 *ctx) { return scx_bpf_create_dsq(SHARED_DSQ, -1); }

/* --- kfuncs outside their members ------------------------------------------------------ */

SEC("struct_ops/sk_bad_create") void sk_bad_create(u64 *ctx) { scx_bpf_create_dsq(1, -1); }

SEC("struct_ops/sk_bad_move") void sk_bad_move(u64 *ctx) { scx_bpf_dsq_move_to_local(SHARED_DSQ); }

SEC("struct_ops/sk_bad_select_dfl") void sk_bad_select_dfl(u64 *ctx)
{
	_Bool idle;

	scx_bpf_select_cpu_dfl((void *)ctx[0], 0, 0, &idle);
}

struct sched_ext_ops {
	s32 (*select_cpu)(struct task_struct *p, s32 prev_cpu, u64 wake_flags);
	void (*enqueue)(struct task_struct *p, u64 enq_flags);
	void (*dispatch)(s32 cpu, struct task_struct *prev);
	void (*running)(struct task_struct *p);
	void (*stopping)(struct task_struct *p, _Bool runnable);
	void (*quiescent)(struct task_struct *p, u64 deq_flags);
	s32 (*init)(void);
	char name[128];
};

SEC(".struct_ops.link") struct sched_ext_ops simple = {
	.select_cpu = (void *)sk_select_cpu, .enqueue = (void *)sk_enqueue, .dispatch = (void *)sk_dispatch,
	.running = (void *)sk_running, .init = (void *)sk_init, .name = "simple",
};
SEC(".struct_ops.link") struct sched_ext_ops sk_bad = {
	.enqueue = (void *)sk_bad_create, .running = (void *)sk_bad_move, .stopping = (void *)sk_bad_select_dfl,
	.name = "sk_bad",
};

char _license[] SEC("license") = "GPL";
