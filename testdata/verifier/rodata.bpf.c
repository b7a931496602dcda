/* Frozen read-only maps as constants: libbpf writes .rodata (const volatile globals, the
 * options a tool's loader sets) and .kconfig (LINUX_KERNEL_VERSION, CONFIG_*) and freezes
 * them; a load at a constant offset from such a map is a known scalar for the verifier, so a
 * branch on it walks one side only. A tool that is off by default guards code the verifier
 * would refuse; the same code behind a flag that is on, or behind writable .data, is walked. */
#include "common.h"

#define __kconfig __attribute__((section(".kconfig")))
#define KERNEL_VERSION(a, b, c) (((a) << 16) + ((b) << 8) + ((c) > 255 ? 255 : (c)))

enum libbpf_tristate { TRI_NO = 0, TRI_YES = 1, TRI_MODULE = 2 };

extern unsigned int LINUX_KERNEL_VERSION __kconfig;
extern _Bool CONFIG_BPF_SYSCALL __kconfig;
extern enum libbpf_tristate CONFIG_EXT4_FS __kconfig;
extern int CONFIG_HZ __kconfig;

const volatile u8 ro_off = 0;     /* an option left off: what it guards is dead */
const volatile u8 ro_on = 1;      /* an option on: what it guards is walked */
const volatile u16 ro_port = 0;   /* a filter the loader did not set */
const volatile u32 ro_slots = 7;
const volatile u64 ro_wide = 0x1122334455667788ull;
const volatile s8 ro_neg = -3;
const volatile u32 ro_table[4] = { 1, 2, 3, 4 };

u32 rw_flag = 5; /* .data: writable, so never a constant */

u64 ro_hist[10][8]; /* .bss */
u64 ro_sink;

/* A computed index into a map value the kernel bounds only on the branch a tool takes by
 * default (the shape of a histogram kept only with an option on). */
static __attribute__((always_inline)) void ro_bump(u64 key, u64 slot)
{
	__sync_fetch_and_add(&ro_hist[key & 15][slot & 31], 1);
}

SEC("tp_btf/sched_switch") int ro_dead_index(u64 *ctx)
{
	u64 k = ctx[0];
	if (ro_off)
		ro_bump(k, bpf_get_prandom_u32());
	else
		ro_hist[k & 7][0]++;
	return 0;
}

SEC("tp_btf/sched_switch") int ro_live_index(u64 *ctx)
{
	u64 k = ctx[0];
	if (ro_on)
		ro_bump(k, bpf_get_prandom_u32());
	else
		ro_hist[k & 7][0]++;
	return 0;
}

/* A field read at an offset past the struct the argument is (a cast to a larger socket type
 * without CO-RE), guarded by a filter that is unset. */
SEC("fentry/tcp_v4_connect") int ro_dead_sock_field(u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	if (ro_port && ro_port != *(volatile u16 *)((char *)sk + 4000))
		return 0;
	ro_sink++;
	return 0;
}

SEC("fentry/tcp_v4_connect") int ro_live_sock_field(u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	if (ro_on && ro_port != *(volatile u16 *)((char *)sk + 4000))
		return 0;
	ro_sink++;
	return 0;
}

/* LINUX_KERNEL_VERSION picks the argument a tracepoint had: the old layout's branch is dead */
SEC("tp_btf/sched_switch") int ro_kver_dead(u64 *ctx)
{
	if (LINUX_KERNEL_VERSION < KERNEL_VERSION(5, 11, 0))
		ro_sink = ctx[9];
	else
		ro_sink = ctx[0];
	return 0;
}

SEC("tp_btf/sched_switch") int ro_kver_live(u64 *ctx)
{
	if (LINUX_KERNEL_VERSION >= KERNEL_VERSION(5, 11, 0))
		ro_sink = ctx[9];
	else
		ro_sink = ctx[0];
	return 0;
}

/* a version the kernels are on either side of */
SEC("tp_btf/sched_switch") int ro_kver_split(u64 *ctx)
{
	if (LINUX_KERNEL_VERSION >= KERNEL_VERSION(6, 5, 0))
		ro_sink = ctx[9];
	else
		ro_sink = ctx[0];
	return 0;
}

SEC("fentry/bpf_fentry_test1") int ro_config_bool(u64 *ctx)
{
	if (!CONFIG_BPF_SYSCALL)
		ro_bump(ctx[0], ctx[0] >> 8);
	ro_sink = 1;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int ro_config_tristate(u64 *ctx)
{
	if (CONFIG_EXT4_FS == TRI_NO)
		ro_bump(ctx[0], ctx[0] >> 8);
	else if (CONFIG_EXT4_FS == TRI_MODULE)
		ro_hist[1][1]++;
	ro_sink = 2;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int ro_config_int(u64 *ctx)
{
	if (CONFIG_HZ != 250)
		ro_bump(ctx[0], ctx[0] >> 8);
	ro_sink = 3;
	return 0;
}

/* the number is the index: a constant in bounds */
SEC("fentry/bpf_fentry_test1") int ro_const_index(u64 *ctx)
{
	ro_hist[ro_table[3] + ro_slots - 2][ro_slots]++;
	return 0;
}

/* a variable offset into .rodata: the kernel reads no constant, the index is unbounded */
SEC("fentry/bpf_fentry_test1") int ro_var_offset(u64 *ctx)
{
	u32 i = ro_table[ctx[0] & 3];
	ro_hist[i][0]++;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int ro_write(u64 *ctx)
{
	*(volatile u32 *)&ro_slots = 1;
	return 0;
}

/* .data is not frozen: the branch is walked */
SEC("fentry/bpf_fentry_test1") int ro_data_flag(u64 *ctx)
{
	if (rw_flag != 5)
		ro_bump(ctx[0], ctx[0] >> 8);
	return 0;
}

/* 8-byte and sign-extended 1-byte constants */
SEC("fentry/bpf_fentry_test1") int ro_wide_value(u64 *ctx)
{
	if (ro_wide != 0x1122334455667788ull)
		ro_bump(ctx[0], ctx[0] >> 8);
	ro_hist[(ro_wide >> 56) - 0x10][0]++;
	return 0;
}

SEC("fentry/bpf_fentry_test1") int ro_signed_value(u64 *ctx)
{
	if (ro_neg >= 0)
		ro_bump(ctx[0], ctx[0] >> 8);
	ro_hist[ro_neg + 5][0]++;
	return 0;
}

/* a 2-byte read of the low half of a 4-byte option */
SEC("fentry/bpf_fentry_test1") int ro_narrow_read(u64 *ctx)
{
	u16 lo = *(const volatile u16 *)&ro_slots;
	ro_hist[lo][0]++;
	return 0;
}

char _license[] SEC("license") = "GPL";
