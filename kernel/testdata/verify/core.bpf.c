// SPDX-License-Identifier: GPL-2.0-only
// A CO-RE program for kernel/verifyconv_test.go and kernel/verify_test.go: the offset of
// sk->__sk_common.skc_family is relocated against the target kernel's BTF on the host.
//
//	clang -g -O2 -target bpf -c core.bpf.c -o core.bpf.o
typedef unsigned short __u16;
typedef unsigned long long __u64;

#define SEC(n) __attribute__((section(n), used))

struct sock_common {
	unsigned short skc_family;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
} __attribute__((preserve_access_index));

char LICENSE[] SEC("license") = "GPL";

__u16 last_family;

SEC("fentry/tcp_v4_connect")
int core_family(__u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];

	last_family = sk->__sk_common.skc_family;
	return 0;
}
