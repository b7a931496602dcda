/* .kconfig externs as tools write them: LINUX_KERNEL_VERSION and CONFIG_* values that libbpf
 * reads from the running kernel's configuration and writes into a read-only, frozen
 * .kconfig map before loading (bpf_object__resolve_externs). */
#include "common.h"

#define __kconfig __attribute__((section(".kconfig")))
#define KERNEL_VERSION(a, b, c) (((a) << 16) + ((b) << 8) + ((c) > 255 ? 255 : (c)))

enum libbpf_tristate { TRI_NO = 0, TRI_YES = 1, TRI_MODULE = 2 };

extern unsigned int LINUX_KERNEL_VERSION __kconfig;
extern int CONFIG_HZ __kconfig;
extern _Bool CONFIG_BPF_SYSCALL __kconfig;
extern enum libbpf_tristate CONFIG_EXT4_FS __kconfig;
extern char CONFIG_DEFAULT_HOSTNAME[8] __kconfig;

u64 kc_sink;

SEC("fentry/bpf_fentry_test1") int kc_version(u64 *ctx) { kc_sink = LINUX_KERNEL_VERSION; return 0; }
SEC("fentry/bpf_fentry_test1") int kc_version_branch(u64 *ctx)
{
	if (LINUX_KERNEL_VERSION >= KERNEL_VERSION(6, 2, 0))
		kc_sink = 1;
	else
		kc_sink = 2;
	return 0;
}
SEC("fentry/bpf_fentry_test1") int kc_hz(u64 *ctx) { kc_sink = bpf_ktime_get_ns() / (1000000000u / (unsigned int)CONFIG_HZ); return 0; }
SEC("fentry/bpf_fentry_test1") int kc_bool_tristate(u64 *ctx)
{
	kc_sink = CONFIG_BPF_SYSCALL + (CONFIG_EXT4_FS == TRI_YES) * 2;
	return 0;
}
SEC("tp_btf/sched_switch") int kc_hostname(u64 *ctx) { kc_sink = CONFIG_DEFAULT_HOSTNAME[1]; return 0; }
SEC("fentry/bpf_fentry_test1") int kc_write(u64 *ctx) { LINUX_KERNEL_VERSION = 1; return 0; }
SEC("fentry/bpf_fentry_test1") int kc_past_end(u64 *ctx) { kc_sink = *((volatile char *)&CONFIG_HZ + 40); return 0; }

char _license[] SEC("license") = "GPL";
