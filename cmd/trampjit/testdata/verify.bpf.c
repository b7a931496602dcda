// Programs for trampjit verify tests. Rebuild: clang -target bpf -g -O2 -c verify.bpf.c -o verify.bpf.o
typedef unsigned long long u64;
typedef unsigned short u16;
struct sock_common { u16 skc_family; } __attribute__((preserve_access_index));
struct sock { struct sock_common __sk_common; } __attribute__((preserve_access_index));
#define SEC(x) __attribute__((section(x), used))
u64 out;
SEC("fentry/tcp_v4_connect") int ok_prog(u64 *ctx) {
	struct sock *sk = (struct sock *)ctx[0];
	out = sk->__sk_common.skc_family;
	return 0;
}
SEC("fentry/tcp_v4_connect") int bad_arg(u64 *ctx) { out = ctx[3]; return 0; }
SEC("fexit/tcp_v4_connect") int ret_slot(u64 *ctx) { out = ctx[3]; return 0; }
SEC("fexit/tcp_v4_connect") int bad_ret(u64 *ctx) { return 1; }
char _license[] SEC("license") = "GPL";
