/* Return codes per attach type (check_return_code). */
#include "common.h"

SEC("fentry/bpf_fentry_test1") int rc_fentry_0(u64 *ctx) { return 0; }
SEC("fentry/bpf_fentry_test1") int rc_fentry_1(u64 *ctx) { return 1; }
SEC("fentry/bpf_fentry_test1") int rc_fentry_arg(u64 *ctx) { return ctx[0]; }
SEC("fentry/bpf_fentry_test1") int rc_fentry_masked_zero(u64 *ctx) { return ctx[0] & 0x100000000ull ? 0 : 0; }
SEC("fexit/bpf_fentry_test1") int rc_fexit_neg(u64 *ctx) { return -1; }
SEC("fexit/bpf_fentry_test1") int rc_fexit_ret_slot(u64 *ctx) { return ctx[1]; }
SEC("fmod_ret/bpf_modify_return_test") int rc_fmodret_any(u64 *ctx) { return ctx[0]; }
SEC("fmod_ret/bpf_modify_return_test") int rc_fmodret_neg(u64 *ctx) { return -22; }
SEC("lsm/file_open") int rc_lsm_0(u64 *ctx) { return 0; }
SEC("lsm/file_open") int rc_lsm_eperm(u64 *ctx) { return -1; }
SEC("lsm/file_open") int rc_lsm_max_errno(u64 *ctx) { return -4095; }
SEC("lsm/file_open") int rc_lsm_past_errno(u64 *ctx) { return -4096; }
SEC("lsm/file_open") int rc_lsm_1(u64 *ctx) { return 1; }
SEC("lsm/file_open") int rc_lsm_unknown(u64 *ctx) { return bpf_get_prandom_u32(); }
SEC("lsm/file_open") int rc_lsm_branches(u64 *ctx) { return ctx[1] ? -13 : 0; }
SEC("lsm/task_free") int rc_lsm_void_1(u64 *ctx) { return 1; }
SEC("lsm/socket_create") int rc_lsm_socket_neg(u64 *ctx) { return ctx[0] == 2 ? -1 : 0; }
SEC("lsm.s/file_open") int rc_lsm_sleepable_1(u64 *ctx) { return 1; }

char _license[] SEC("license") = "GPL";
