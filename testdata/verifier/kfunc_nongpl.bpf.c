/* kfunc calls from a non-GPL object. */
#include "kfuncs.h"

SEC("fentry/bpf_fentry_test1") int kfn_task_acquire(u64 *ctx)
{
	struct task_struct *t = bpf_task_acquire(bpf_get_current_task_btf());
	if (t)
		bpf_task_release(t);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kfn_system_key(u64 *ctx)
{
	struct bpf_key *k = bpf_lookup_system_key(0);
	if (k)
		bpf_key_put(k);
	return 0;
}

char _license[] SEC("license") = "Dual BSD";
