/* Shapes the differential fuzz found the model wrong on (H10): each program pins one rule.
 * See fuzzfix.json for the instruction-level ones. */
#include "kfuncs.h"

u64 sink;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, u32);
	__type(value, u64);
} ff_arr SEC(".maps");

/* btf_struct_ids_match walks css_set from offset 0: its first member, subsys[], is an array
 * of pointers, so btf_struct_walk logs "cannot access ptr member subsys" before the kfunc's
 * own refusal. */
SEC("fexit/vfs_read") int ff_css_set_as_cgroup(u64 *ctx)
{
	struct task_struct___k *cur = (void *)bpf_get_current_task_btf();
	struct cgroup *cg = bpf_cgroup_acquire((struct cgroup *)cur->cgroups);
	if (cg)
		bpf_cgroup_release(cg);
	return 0;
}

/* A for_each callback's key is PTR_TO_MAP_KEY: an 8-byte read of a 4-byte key is
 * "invalid access to map key". */
static long ff_cb_key_u64(void *map, u32 *key, u64 *val, void *c)
{
	sink = *(u64 *)key;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int ff_for_each_key_overread(u64 *ctx)
{
	bpf_for_each_map_elem(&ff_arr, ff_cb_key_u64, 0, 0);
	return 0;
}

/* A static subprogram's BTF says int; a stack pointer is passed: 6.12 and 7.2 log
 * "R1 is not a scalar" at the call and walk on; the program is refused at its exit. */
static __noinline int ff_twice(long a)
{
	return a + a;
}

SEC("lsm/file_open") int ff_static_arg_pointer(u64 *ctx)
{
	u64 x = bpf_get_prandom_u32();
	long r = ff_twice((long)&x);
	sink = r + x;
	return 1;
}

/* The main program logs btf_ctx_access's "func ... arg0 has btf_id" line; the global
 * function then fails: 6.12 and 7.2 keep only its own walk in the log. */
__noinline int ff_gl_read_nocheck(u64 *p)
{
	return *p;
}

SEC("fentry/tcp_v4_connect") int ff_global_fail_after_ctx(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	u64 x = (u64)sk;
	sink = ff_gl_read_nocheck(&x);
	return 0;
}
/* 7.2 checks a global function's pointer argument for its offset first: a moved context is
 * "dereference of modified ctx ptr" (check_func_arg_reg_off), not a type mismatch. */
__noinline int ff_gl_peek(u64 *p)
{
	if (!p)
		return 0;
	return 1;
}

SEC("fmod_ret/bpf_modify_return_test") int ff_global_moved_ctx(u64 *ctx)
{
	sink = ff_gl_peek((u64 *)((char *)ctx + 3));
	return 0;
}

char _license[] SEC("license") = "GPL";
