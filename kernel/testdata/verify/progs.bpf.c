// SPDX-License-Identifier: GPL-2.0-only
// Programs for kernel/verifyconv_test.go and kernel/verify_test.go: a small clang-built
// object with a map, a frozen .rodata constant, a subprogram, and fentry, fexit and LSM
// programs. No headers, so any clang with the BPF target builds it:
//
//	clang -g -O2 -target bpf -c progs.bpf.c -o progs.bpf.o
typedef unsigned long long __u64;
typedef unsigned int __u32;

#define SEC(n) __attribute__((section(n), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, 1); /* BPF_MAP_TYPE_HASH */
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;

const volatile __u64 limit = 7;

static __attribute__((noinline)) __u64 twice(__u64 x)
{
	return x * 2;
}

/* Accepted: reads ctx[0] (bpf_fentry_test1 takes one int), a map, .rodata, a subprogram. */
SEC("fentry/bpf_fentry_test1")
int count_test1(__u64 *ctx)
{
	__u32 key = (__u32)ctx[0];
	__u64 *v = bpf_map_lookup_elem(&counts, &key);

	if (v && *v < limit)
		__sync_fetch_and_add(v, twice(key));
	return 0;
}

/* Rejected: fexit programs must return 0. */
SEC("fexit/bpf_fentry_test1")
int exit_ret1(__u64 *ctx)
{
	return 1;
}

/* Accepted: a sleepable LSM program. */
SEC("lsm.s/file_open")
int lsm_file_open(__u64 *ctx)
{
	return 0;
}
