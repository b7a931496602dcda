/* Attach-time checks: BTF targets, deny lists, __noreturn, fmod_ret allow rules, sleepable
 * rules, LSM hooks. The bodies are trivial: only the target and the flags matter. */
#include "common.h"

SEC("fentry/bpf_fentry_test1") int at_fentry_ok(u64 *ctx) { return 0; }
SEC("fexit/bpf_fentry_test1") int at_fexit_ok(u64 *ctx) { return 0; }
/* no BTF for the target: libbpf cannot even resolve it */
SEC("fentry/trampjit_no_such_function") int at_no_btf(u64 *ctx) { return 0; }
/* __noreturn: fexit refused where the backport is, fentry always fine */
SEC("fexit/do_exit") int at_fexit_noreturn(u64 *ctx) { return 0; }
SEC("fentry/do_exit") int at_fentry_noreturn(u64 *ctx) { return 0; }
/* btf_id_deny */
SEC("fentry/migrate_disable") int at_deny_migrate_disable(u64 *ctx) { return 0; }
SEC("fexit/migrate_enable") int at_deny_migrate_enable(u64 *ctx) { return 0; }
/* a 0-argument target, an 11-argument target (loads; the trampoline limit is at attach) */
SEC("fentry/sock_alloc") int at_no_args(u64 *ctx) { return 0; }
SEC("fentry/__ext4_new_inode") int at_many_args(u64 *ctx) { return 0; }
/* fmod_ret allow rules: error injection list, fmod_ret id set, security_ prefix */
SEC("fmod_ret/tcp_v4_connect") int at_fmodret_not_modifiable(u64 *ctx) { return 0; }
SEC("fmod_ret/security_file_open") int at_fmodret_security(u64 *ctx) { return 0; }
SEC("fmod_ret/bpf_modify_return_test") int at_fmodret_modify_test(u64 *ctx) { return 0; }
SEC("fmod_ret/bpf_fentry_test1") int at_fmodret_fentry_test1(u64 *ctx) { return 0; }
SEC("fmod_ret/__x64_sys_getpgid") int at_fmodret_x64_getpgid(u64 *ctx) { return 0; }
SEC("fmod_ret/__arm64_sys_getpgid") int at_fmodret_arm64_getpgid(u64 *ctx) { return 0; }
SEC("fmod_ret/do_exit") int at_fmodret_noreturn(u64 *ctx) { return 0; }
SEC("fmod_ret/kfree") int at_fmodret_void(u64 *ctx) { return 0; }
/* sleepable rules */
SEC("fentry.s/tcp_v4_connect") int at_sleep_tcp(u64 *ctx) { return 0; }
SEC("fentry.s/bpf_fentry_test1") int at_sleep_test1(u64 *ctx) { return 0; }
SEC("fentry.s/bpf_modify_return_test") int at_sleep_modify_test(u64 *ctx) { return 0; }
SEC("fexit.s/__x64_sys_getpgid") int at_sleep_x64_getpgid(u64 *ctx) { return 0; }
SEC("fentry.s/security_file_open") int at_sleep_security(u64 *ctx) { return 0; }
SEC("fmod_ret.s/bpf_modify_return_test") int at_sleep_fmodret(u64 *ctx) { return 0; }
/* LSM hooks */
SEC("lsm/file_open") int at_lsm_ok(u64 *ctx) { return 0; }
SEC("lsm.s/file_open") int at_lsm_sleep_ok(u64 *ctx) { return 0; }
SEC("lsm.s/inode_permission") int at_lsm_sleep_inode_permission(u64 *ctx) { return 0; }
SEC("lsm.s/task_free") int at_lsm_sleep_task_free(u64 *ctx) { return 0; }
SEC("lsm/trampjit_no_such_hook") int at_lsm_no_hook(u64 *ctx) { return 0; }
SEC("lsm/vm_enough_memory") int at_lsm_disabled_vm(u64 *ctx) { return 0; }
SEC("lsm/getprocattr") int at_lsm_disabled_getprocattr(u64 *ctx) { return 0; }
SEC("fentry/bpf_lsm_file_open") int at_fentry_on_lsm_hook(u64 *ctx) { return 0; }

char _license[] SEC("license") = "GPL";
