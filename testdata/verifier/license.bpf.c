/* A non-GPL object: LSM programs and GPL-only helpers need a GPL-compatible license. */
#include "common.h"

SEC("lsm/file_open") int lic_lsm(u64 *ctx) { return 0; }
SEC("fentry/bpf_fentry_test1") int lic_fentry(u64 *ctx) { return 0; }
SEC("fentry/bpf_fentry_test1") int lic_printk(u64 *ctx)
{
	char fmt[] = "x";
	bpf_trace_printk(fmt, sizeof(fmt));
	return 0;
}
SEC("fentry/bpf_fentry_test1") int lic_probe_read(u64 *ctx)
{
	u64 v;
	bpf_probe_read_kernel(&v, sizeof(v), (void *)ctx[0]);
	return 0;
}
SEC("fentry/bpf_fentry_test1") int lic_ktime(u64 *ctx) { return bpf_ktime_get_ns() & 0; }

char _license[] SEC("license") = "Proprietary";
