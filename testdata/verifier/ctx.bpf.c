/* ctx access (btf_ctx_access): slot mapping, struct args, the return slot of fexit,
 * fmod_ret and LSM, load sizes, writes, offsets outside the arguments. */
#include "common.h"

u64 sink; /* keeps loads alive */

SEC("fentry/bpf_fentry_test1") int ctx_arg0_int(u64 *ctx) { sink = ctx[0]; return 0; }
SEC("fentry/bpf_fentry_test6") int ctx_arg5_of_6(u64 *ctx) { sink = ctx[5]; return 0; }
SEC("fentry/bpf_fentry_test2") int ctx_past_args(u64 *ctx) { sink = ctx[2]; return 0; }
SEC("fentry/bpf_fentry_test1") int ctx_off_96(u64 *ctx) { sink = ctx[12]; return 0; }
SEC("fentry/bpf_fentry_test1") int ctx_negative(u64 *ctx) { sink = ctx[-1]; return 0; }
SEC("fexit/bpf_fentry_test2") int ctx_fexit_ret(u64 *ctx) { sink = ctx[2]; return 0; }
SEC("fexit/bpf_fentry_test2") int ctx_fexit_past_ret(u64 *ctx) { sink = ctx[3]; return 0; }
SEC("fexit/kfree") int ctx_fexit_void_ret(u64 *ctx) { sink = ctx[1]; return 0; }
SEC("fmod_ret/bpf_modify_return_test") int ctx_fmodret_ret(u64 *ctx) { sink = ctx[2]; return 0; }
SEC("fmod_ret/bpf_modify_return_test") int ctx_fmodret_past_ret(u64 *ctx) { sink = ctx[3]; return 0; }
SEC("lsm/file_open") int ctx_lsm_ret(u64 *ctx) { sink = ctx[1]; return 0; }
SEC("lsm/file_open") int ctx_lsm_past_ret(u64 *ctx) { sink = ctx[2]; return 0; }
/* returning the previous LSM's verdict: the return slot's range decides */
SEC("lsm/file_open") int ctx_lsm_ret_passthrough(u64 *ctx) { return ctx[1]; }
SEC("lsm/socket_create") int ctx_lsm_int_args(u64 *ctx)
{
	sink = ctx[0] + ctx[1] + ctx[2] + ctx[3];
	return 0;
}
/* sizes */
SEC("fentry/bpf_fentry_test1") int ctx_narrow_u32(u64 *ctx) { sink = *(u32 *)ctx; return 0; }
SEC("fentry/bpf_fentry_test3") int ctx_narrow_u8(u64 *ctx) { sink = *(u8 *)ctx; return 0; }
SEC("fentry/bpf_fentry_test3") int ctx_narrow_u16(u64 *ctx) { sink = *(u16 *)&ctx[1]; return 0; }
SEC("fentry/bpf_fentry_test1") int ctx_high_half(u64 *ctx) { sink = *(u32 *)((char *)ctx + 4); return 0; }
SEC("fentry/bpf_modify_return_test") int ctx_narrow_ptr_arg(u64 *ctx) { sink = *(u32 *)&ctx[1]; return 0; }
SEC("fentry/tcp_v4_connect") int ctx_narrow_struct_ptr(u64 *ctx) { sink = *(u32 *)&ctx[0]; return 0; }
/* writes */
SEC("fentry/bpf_fentry_test1") int ctx_write(u64 *ctx) { ctx[0] = sink; return 0; }
SEC("fexit/bpf_fentry_test1") int ctx_write_ret(u64 *ctx) { ctx[1] = sink; return 0; }
SEC("lsm/file_open") int ctx_lsm_write(u64 *ctx) { ctx[1] = sink; return 0; }
/* argument types: void *, char *, int *, loff_t *, struct pointers */
SEC("fentry/bpf_fentry_test4") int ctx_void_ptr(u64 *ctx) { sink = ctx[0] + ctx[1]; return 0; }
SEC("fentry/kfree") int ctx_const_void_ptr(u64 *ctx) { sink = ctx[0]; return 0; }
SEC("fentry/vfs_read") int ctx_char_ptr_deref(u64 *ctx) { sink = *(char *)ctx[1]; return 0; }
SEC("fentry/bpf_modify_return_test") int ctx_int_ptr_deref(u64 *ctx) { sink = *(int *)ctx[1]; return 0; }
SEC("fentry/vfs_read") int ctx_loff_ptr(u64 *ctx) { sink = ctx[3]; return 0; }
SEC("fentry/bpf_fentry_test9") int ctx_u32_ptr_deref(u64 *ctx) { sink = *(u32 *)ctx[0]; return 0; }
SEC("fentry/tcp_v4_connect") int ctx_sock_arg(u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	sink = sk->__sk_common.skc_family;
	return 0;
}
SEC("fentry/tcp_v4_connect") int ctx_sockaddr_arg(u64 *ctx)
{
	struct sockaddr *sa = (void *)ctx[1];
	sink = sa->sa_family + ctx[2];
	return 0;
}
/* a pointer return value on fexit, with and without a NULL check */
SEC("fexit/sock_alloc") int ctx_fexit_ptr_ret(u64 *ctx)
{
	struct socket *s = (void *)ctx[0];
	sink = s->type;
	return 0;
}
SEC("fexit/sock_alloc") int ctx_fexit_ptr_ret_checked(u64 *ctx)
{
	struct socket *s = (void *)ctx[0];
	if (s)
		sink = s->type;
	return 0;
}
/* struct timespec64 by value takes ctx[0..1] */
SEC("fentry/__audit_tk_injoffset") int ctx_struct_arg(u64 *ctx) { sink = ctx[0] + ctx[1]; return 0; }
SEC("fentry/__audit_tk_injoffset") int ctx_struct_arg_past(u64 *ctx) { sink = ctx[2]; return 0; }
SEC("fexit/__audit_tk_injoffset") int ctx_struct_arg_fexit(u64 *ctx) { sink = ctx[2]; return 0; }
SEC("fentry/__audit_tk_injoffset") int ctx_struct_arg_narrow(u64 *ctx) { sink = *(u32 *)&ctx[1]; return 0; }
/* variable index into ctx */
SEC("fentry/bpf_fentry_test2") int ctx_var_index(u64 *ctx)
{
	u32 i = bpf_get_prandom_u32() & 1;
	sink = ctx[i];
	return 0;
}

char _license[] SEC("license") = "GPL";
