/* tp_btf programs (BPF_PROG_TYPE_TRACING, BPF_TRACE_RAW_TP): ctx access over the arguments of
 * the btf_trace_<tracepoint> typedef (its 'void *__data' skipped), trusted arguments, the
 * raw_tp_null_args table, writes and bad offsets, the helpers a program without a trampoline
 * may not call, and the return value. */
#include "common.h"

#ifndef __ksym
#define __ksym __attribute__((section(".ksyms")))
#endif

struct request { unsigned int __data_len; int tag; } CORE;
struct sk_buff___tp { unsigned int len; } CORE;
struct page___tp { unsigned long flags; } CORE;

extern struct task_struct *bpf_task_acquire(struct task_struct *p) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;

u64 tp_sink;

/* sched_switch(bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state) */
SEC("tp_btf/sched_switch") int tp_switch_next_pid(u64 *ctx)
{
	struct task_struct *next = (void *)ctx[2];
	tp_sink = next->pid;
	return 0;
}
SEC("tp_btf/sched_switch") int tp_switch_prev_comm(u64 *ctx)
{
	struct task_struct *prev = (void *)ctx[1];
	tp_sink = prev->comm[0] + prev->comm[15];
	return 0;
}
SEC("tp_btf/sched_switch") int tp_switch_preempt(u64 *ctx) { tp_sink = ctx[0]; return 0; }
SEC("tp_btf/sched_switch") int tp_switch_prev_state(u64 *ctx) { tp_sink = ctx[3]; return 0; }
SEC("tp_btf/sched_switch") int tp_switch_past_args(u64 *ctx) { tp_sink = ctx[4]; return 0; }
SEC("tp_btf/sched_switch") int tp_switch_far(u64 *ctx) { tp_sink = ctx[6]; return 0; }
SEC("tp_btf/sched_switch") int tp_switch_parent_walk(u64 *ctx)
{
	struct task_struct *next = (void *)ctx[2];
	tp_sink = next->real_parent->tgid;
	return 0;
}
SEC("tp_btf/sched_switch") int tp_switch_write_ctx(u64 *ctx) { ctx[1] = 0; return 0; }
SEC("tp_btf/sched_switch") int tp_switch_write_task(u64 *ctx)
{
	struct task_struct *next = (void *)ctx[2];
	next->pid = 1;
	return 0;
}
SEC("tp_btf/sched_switch") int tp_switch_narrow_ptr(u64 *ctx) { tp_sink = *(u32 *)&ctx[1]; return 0; }
SEC("tp_btf/sched_switch") int tp_switch_narrow_bool(u64 *ctx) { tp_sink = *(u8 *)&ctx[0]; return 0; }
SEC("tp_btf/sched_switch") int tp_switch_unaligned(u64 *ctx) { tp_sink = *(u32 *)((char *)ctx + 4); return 0; }
SEC("tp_btf/sched_switch") int tp_switch_negative(u64 *ctx) { tp_sink = ctx[-1]; return 0; }
SEC("tp_btf/sched_switch") int tp_switch_ret_one(u64 *ctx) { return 1; }
SEC("tp_btf/sched_switch") int tp_switch_ret_arg(u64 *ctx) { return ctx[3]; }

/* sched_process_exec(struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm) */
SEC("tp_btf/sched_process_exec") int tp_exec_old_pid(u64 *ctx) { tp_sink = ctx[1]; return 0; }
SEC("tp_btf/sched_process_exec") int tp_exec_bprm_file(u64 *ctx)
{
	struct linux_binprm *bprm = (void *)ctx[2];
	tp_sink = bprm->file->f_inode->i_ino;
	return 0;
}
SEC("tp_btf/sched_process_exec") int tp_exec_filename(u64 *ctx)
{
	struct linux_binprm *bprm = (void *)ctx[2];
	char buf[32];
	bpf_probe_read_kernel_str(buf, sizeof(buf), bprm->filename);
	tp_sink = buf[0];
	return 0;
}
SEC("tp_btf/sched_process_exec") int tp_exec_deref_pid_slot(u64 *ctx)
{
	struct task_struct *p = (void *)ctx[1];
	tp_sink = p->pid;
	return 0;
}

/* block_rq_complete(struct request *rq, blk_status_t error, unsigned int nr_bytes) */
SEC("tp_btf/block_rq_complete") int tp_rq_complete(u64 *ctx)
{
	struct request *rq = (void *)ctx[0];
	tp_sink = rq->__data_len + ctx[1] + ctx[2];
	return 0;
}

/* raw_tp_null_args: sched_pi_setprio's pi_task, mm_page_alloc's page, tcp_send_reset's sk */
SEC("tp_btf/sched_pi_setprio") int tp_pi_task_unchecked(u64 *ctx)
{
	struct task_struct *pi = (void *)ctx[1];
	tp_sink = pi->pid;
	return 0;
}
SEC("tp_btf/sched_pi_setprio") int tp_pi_task_checked(u64 *ctx)
{
	struct task_struct *pi = (void *)ctx[1];
	if (pi)
		tp_sink = pi->pid;
	return 0;
}
SEC("tp_btf/sched_pi_setprio") int tp_pi_tsk(u64 *ctx)
{
	struct task_struct *t = (void *)ctx[0];
	tp_sink = t->pid;
	return 0;
}
SEC("tp_btf/mm_page_alloc") int tp_page_alloc_unchecked(u64 *ctx)
{
	struct page___tp *pg = (void *)ctx[0];
	tp_sink = pg->flags + ctx[1];
	return 0;
}
SEC("tp_btf/tcp_send_reset") int tp_send_reset_sk(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	tp_sink = sk->sk_mark;
	return 0;
}

/* pointers a tracepoint passes that are not to structs */
SEC("tp_btf/cgroup_mkdir") int tp_mkdir_path_deref(u64 *ctx) { tp_sink = *(char *)ctx[1]; return 0; }
SEC("tp_btf/sys_enter") int tp_sys_enter_id(u64 *ctx) { tp_sink = ctx[1]; return 0; }
SEC("tp_btf/kfree_skb") int tp_kfree_skb_reason(u64 *ctx)
{
	struct sk_buff___tp *skb = (void *)ctx[0];
	tp_sink = skb->len + ctx[2];
	return 0;
}

/* helpers: the func-arg family needs a trampoline */
SEC("tp_btf/sched_switch") int tp_get_func_ip(u64 *ctx) { tp_sink = bpf_get_func_ip(ctx); return 0; }
SEC("tp_btf/sched_switch") int tp_get_func_arg_cnt(u64 *ctx) { tp_sink = bpf_get_func_arg_cnt(ctx); return 0; }
SEC("tp_btf/sched_switch") int tp_get_func_arg(u64 *ctx)
{
	u64 v = 0;
	bpf_get_func_arg(ctx, 0, &v);
	tp_sink = v;
	return 0;
}
SEC("tp_btf/sched_switch") int tp_get_attach_cookie(u64 *ctx) { tp_sink = bpf_get_attach_cookie(ctx); return 0; }
SEC("tp_btf/sched_switch") int tp_current_task_btf(u64 *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	tp_sink = t->pid + bpf_get_current_pid_tgid() + bpf_ktime_get_ns();
	return 0;
}

/* a trusted argument to a KF_TRUSTED_ARGS kfunc */
SEC("tp_btf/sched_switch") int tp_task_acquire(u64 *ctx)
{
	struct task_struct *t = bpf_task_acquire((void *)ctx[2]);
	if (!t)
		return 0;
	tp_sink = t->pid;
	bpf_task_release(t);
	return 0;
}

/* a tracepoint that does not exist */
SEC("tp_btf/no_such_tracepoint") int tp_missing(u64 *ctx) { return 0; }
/* typed __ksym variables: per-CPU (runqueues), through bpf_this_cpu_ptr / bpf_per_cpu_ptr
 * or dereferenced directly, and one the kernel does not have */
struct rq { int cpu; unsigned int nr_running; } CORE;
extern const struct rq runqueues __ksym;
extern const struct rq no_such_percpu_var __ksym;
SEC("tp_btf/sched_switch") int tp_ksym_this_cpu(u64 *ctx)
{
	struct rq *rq = bpf_this_cpu_ptr(&runqueues);
	tp_sink = rq->nr_running;
	return 0;
}
SEC("tp_btf/sched_switch") int tp_ksym_per_cpu_unchecked(u64 *ctx)
{
	struct rq *rq = bpf_per_cpu_ptr(&runqueues, 0);
	tp_sink = rq->nr_running;
	return 0;
}
SEC("tp_btf/sched_switch") int tp_ksym_per_cpu_checked(u64 *ctx)
{
	struct rq *rq = bpf_per_cpu_ptr(&runqueues, 1);
	if (rq)
		tp_sink = rq->cpu;
	return 0;
}
SEC("tp_btf/sched_switch") int tp_ksym_direct(u64 *ctx) { tp_sink = runqueues.cpu; return 0; }
SEC("tp_btf/sched_switch") int tp_ksym_missing(u64 *ctx)
{
	struct rq *rq = bpf_this_cpu_ptr(&no_such_percpu_var);
	tp_sink = rq->cpu;
	return 0;
}

char _license[] SEC("license") = "GPL";
