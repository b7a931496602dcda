package verifier

import (
	"testing"

	"github.com/cilium/ebpf/asm"
)

// ctx access: btf_ctx_access (kernel/bpf/btf.c) for TRACING and LSM, per profile.
func TestCtxAccess(t *testing.T) {
	const (
		R0, R1, R2, R3 = asm.R0, asm.R1, asm.R2, asm.R3
		DW, W, H, B    = asm.DWord, asm.Word, asm.Half, asm.Byte
	)
	cases := []vcase{
		// Slot mapping: a 16-byte struct by value takes two slots, both arg0 (btf_ctx_arg_idx).
		{name: "struct-arg-slot0", sec: "fentry/__audit_tk_injoffset", prog: fixed(ret0(ldx(R2, R1, 0, DW))...), want: "ok",
			loads: []string{"r2 = ctx[0] (struct timespec64, slot 1 of 2) -> SCALAR"}},
		{name: "struct-arg-slot1", sec: "fentry/__audit_tk_injoffset", prog: fixed(ret0(ldx(R2, R1, 8, DW))...), want: "ok",
			loads: []string{"r2 = ctx[1] (struct timespec64, slot 2 of 2) -> SCALAR"}},
		{name: "struct-arg-void-no-ret-slot", sec: "fexit/__audit_tk_injoffset", prog: fixed(ret0(ldx(R2, R1, 16, DW))...),
			want: "invalid bpf_context access off=16 size=8", logHas: []string{"func '__audit_tk_injoffset' doesn't have 3-th argument"}},
		// Narrow loads of scalar args are fine when off % size == 0 and off % 8 == 0.
		{name: "narrow-int-arg", sec: "fentry/bpf_fentry_test2", prog: fixed(ret0(ldx(R2, R1, 8, W))...), want: "ok"},
		{name: "narrow-off-4-size-2", sec: "fentry/bpf_fentry_test2", prog: fixed(ret0(ldx(R2, R1, 4, H))...),
			want: "invalid bpf_context access off=4 size=2", logHas: []string{"func 'bpf_fentry_test2' offset 4 is not multiple of 8"}},
		{name: "byte-off-1", sec: "fentry/bpf_fentry_test2", prog: fixed(ret0(ldx(R2, R1, 1, B))...),
			want: "invalid bpf_context access off=1 size=1", logHas: []string{"func 'bpf_fentry_test2' offset 1 is not multiple of 8"}},
		// Pointer args: struct pointers become PTR_TO_BTF_ID; int pointers and void * scalars.
		{name: "sockaddr-arg", sec: "fentry/tcp_v4_connect", prog: fixed(ret0(ldx(R2, R1, 8, DW))...), want: "ok",
			logHas: []string{"func 'tcp_v4_connect' arg1 has btf_id "},
			loads:  []string{"r2 = ctx[1] (struct sockaddr *) -> PTR_TO_BTF_ID sockaddr"}},
		{name: "int-arg-after-ptrs", sec: "fentry/tcp_v4_connect", prog: fixed(ret0(ldx(R2, R1, 16, W))...), want: "ok",
			loads: []string{"r2 = ctx[2] (int) -> SCALAR"}},
		{name: "fexit-ret-of-3-args", sec: "fexit/tcp_v4_connect", prog: fixed(ret0(ldx(R2, R1, 24, DW))...), want: "ok",
			loads: []string{"r2 = ctx[3] (return value, int) -> SCALAR"}},
		{name: "fentry-ret-of-3-args", sec: "fentry/tcp_v4_connect", prog: fixed(ret0(ldx(R2, R1, 24, DW))...),
			want: "invalid bpf_context access off=24 size=8", logHas: []string{"func 'tcp_v4_connect' doesn't have 4-th argument"}},
		{name: "u32-ptr-arg", on: []string{"6.12-amd64", "6.12-arm64"}, sec: "fentry/bpf_fentry_test9", prog: fixed(ret0(ldx(R2, R1, 0, DW))...), want: "ok",
			loads: []string{"r2 = ctx[0] (u32 *) -> SCALAR"}},
		{name: "ptr-to-ptr-arg", sec: "fentry/register_kretprobes", prog: fixed(ret0(ldx(R2, R1, 0, DW))...),
			want: "invalid bpf_context access off=0 size=8", logHas: []string{"func 'register_kretprobes' arg0 type PTR is not a struct"}},
		{name: "narrow-struct-ptr", sec: "fentry/tcp_v4_connect", prog: fixed(ret0(ldx(R2, R1, 0, W))...),
			want61: "ok", want: "invalid bpf_context access off=0 size=4", logHas612: []string{"func 'tcp_v4_connect' size 4 must be 8"}},
		// Writes and BPF_ST through ctx on TRACING.
		{name: "ctx-write-u32", sec: "fexit/bpf_fentry_test1", prog: fixed(ret0(movi(R2, 0), stx(R1, 8, R2, W))...),
			want: "invalid bpf_context access off=8 size=4"},
		{name: "ctx-variable-offset", sec: "fentry/bpf_fentry_test2", prog: fixed(ret0(ldx(R2, R1, 8, B), asm.Add.Reg(R1, R2), ldx(R3, R1, 0, DW))...),
			want: "variable ctx access var_off=(0x0; 0xff) disallowed"},
		{name: "ctx-negative-fixed", sec: "fentry/bpf_fentry_test2", prog: fixed(ret0(addi(R1, -8), ldx(R2, R1, 8, DW))...),
			want: "negative offset ctx ptr R1 off=-8 disallowed"},
		{name: "ctx-atomic", sec: "fentry/bpf_fentry_test1", prog: fixed(ret0(movi(R2, 1), asm.StoreXAdd(R1, R2, DW))...),
			want: "BPF_ATOMIC stores into R1 ctx is not allowed"},
		// fmod_ret reading a pointer return slot (arg == nr_args); sock_alloc made modifiable
		// by the list.
		{name: "fmod-ret-ptr-return", sec: "fmod_ret/sock_alloc", errInj: map[string][]string{"6.1": {"sock_alloc"}, "6.12": {"sock_alloc"}},
			prog: fixed(ret0(ldx(R2, R1, 0, DW))...),
			want: "invalid bpf_context access off=0 size=8", logHas: []string{"ret type PTR not allowed for fmod_ret"}},
		{name: "fmod-ret-int-return", sec: "fmod_ret/security_file_open", prog: fixed(ret0(ldx(R2, R1, 8, DW))...), want: "ok",
			loads: []string{"r2 = ctx[1] (return value, int) -> SCALAR"}},
		// LSM: btf_ctx_access directly, no 96-byte/sign/write/off%size pre-checks (those are
		// tracing_prog_is_valid_access's; LSM programs skip it).
		{name: "lsm-arg", sec: "lsm/socket_post_create", prog: fixed(ret0(ldx(R2, R1, 8, W))...), want: "ok",
			loads: []string{"r2 = ctx[1] (int) -> SCALAR"}},
		{name: "lsm-negative-off", sec: "lsm/file_open", prog: fixed(ret0(ldx(R2, R1, -8, DW))...),
			want: "invalid bpf_context access off=-8 size=8", logHas: []string{"func 'bpf_lsm_file_open' doesn't have 3-th argument"}},
		{name: "lsm-negative-unaligned", sec: "lsm/file_open", prog: fixed(ret0(ldx(R2, R1, -4, W))...),
			want: "invalid bpf_context access off=-4 size=4", logHas: []string{"func 'bpf_lsm_file_open' offset -4 is not multiple of 8"}},
		{name: "lsm-off-96", sec: "lsm/file_open", prog: fixed(ret0(ldx(R2, R1, 96, DW))...),
			want: "invalid bpf_context access off=96 size=8", logHas: []string{"func 'bpf_lsm_file_open' doesn't have 3-th argument"}},
		{name: "lsm-ctx-write", sec: "lsm/file_open", prog: fixed(ret0(movi(R2, 0), stx(R1, 8, R2, DW))...), want: "ok"}, // inferred: nothing in btf_ctx_access refuses it
		{name: "lsm-void-hook-no-ret-slot", sec: "lsm/task_free", prog: fixed(ldx(R2, R1, 8, DW), exit()),
			want: "invalid bpf_context access off=8 size=8", logHas: []string{"func 'bpf_lsm_task_free' doesn't have 3-th argument"}},
		// LSM argument trust: trusted on 6.12 except untrusted_lsm_hooks; never on 6.1.
		{name: "lsm-untrusted-hook", sec: "lsm/file_alloc_security", prog: fixed(ret0(ldx(R2, R1, 0, DW))...), want: "ok",
			logHas61: []string{"R2_w=ptr_file(off=0,imm=0)"}, logHas612: []string{"R2_w=ptr_file()"}},
		{name: "lsm-trusted-hook", sec: "lsm/bprm_check_security", prog: fixed(ret0(ldx(R2, R1, 0, DW))...), want: "ok",
			logHas612: []string{"R2_w=trusted_ptr_linux_binprm()"}, loads: []string{"r2 = ctx[0] (struct linux_binprm *) -> PTR_TO_BTF_ID linux_binprm"}},
		// LSM return-value slot: 6.12 bounds it to [-4095, 0], so returning it passes the exit check.
		{name: "lsm-retval-narrow", sec: "lsm/file_open", prog: fixed(ldx(R0, R1, 8, W), exit()),
			want: "ok"}, // 6.12 keeps the slot's s32 range through a 4-byte load (asm.json j_ctx_lsm_ret_narrow)
	}
	runCases(t, cases)
}
