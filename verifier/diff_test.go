package verifier

import (
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/trampjit/trampjit/btfmodel"
)

// Differential cases, numbered as when they were written from kernel/bpf/verifier.c and
// kernel/bpf/btf.c. Expected verdicts and messages are the kernel's own verbose() strings,
// written from its source, never from running the model.
func TestDifferentialCases(t *testing.T) {
	// The error-injection lists these cases assume (a kernel built with
	// CONFIG_FUNCTION_ERROR_INJECTION, unlike Debian's): 6.1 marks the test_run.c targets
	// ALLOW_ERROR_INJECTION, 6.12 moved them to the fmod_ret id set; syscall wrappers are
	// error-injectable on both.
	inj := map[string][]string{
		"6.1":  {"bpf_modify_return_test", "bpf_fentry_test1", "__x64_sys_getpgid"},
		"6.12": {"__x64_sys_getpgid"},
	}
	const (
		R0, R1, R2, R3, R6, R10 = asm.R0, asm.R1, asm.R2, asm.R3, asm.R6, asm.R10
		DW, W, H, B             = asm.DWord, asm.Word, asm.Half, asm.Byte
	)
	cases := []vcase{
		{name: "1-fentry-arg0", sec: "fentry/bpf_fentry_test1", prog: fixed(ret0(ldx(R2, R1, 0, DW))...), want: "ok",
			loads: []string{"r2 = ctx[0] (int) -> SCALAR"}},
		{name: "2-fentry-ret-slot", sec: "fentry/bpf_fentry_test2", prog: fixed(ret0(ldx(R2, R1, 16, DW))...),
			want: "invalid bpf_context access off=16 size=8", errno: "EACCES",
			logHas: []string{"func 'bpf_fentry_test2' doesn't have 3-th argument"}},
		{name: "3-fexit-ret-slot", sec: "fexit/bpf_fentry_test2", prog: fixed(ret0(ldx(R2, R1, 16, DW))...), want: "ok",
			loads: []string{"r2 = ctx[2] (return value, int) -> SCALAR"}},
		{name: "4-fexit-past-ret", sec: "fexit/bpf_fentry_test2", prog: fixed(ret0(ldx(R2, R1, 24, DW))...),
			want: "invalid bpf_context access off=24 size=8", logHas: []string{"func 'bpf_fentry_test2' doesn't have 4-th argument"}},
		{name: "5-offset-not-multiple-of-8", sec: "fentry/bpf_fentry_test1", prog: fixed(ret0(ldx(R2, R1, 4, W))...),
			want: "invalid bpf_context access off=4 size=4", logHas: []string{"func 'bpf_fentry_test1' offset 4 is not multiple of 8"}},
		{name: "6-misaligned-silent", sec: "fentry/bpf_fentry_test1", prog: fixed(ret0(ldx(R2, R1, 2, W))...),
			want: "invalid bpf_context access off=2 size=4"},
		{name: "7-off-96", sec: "fentry/bpf_fentry_test1", prog: fixed(ret0(ldx(R2, R1, 96, DW))...),
			want: "invalid bpf_context access off=96 size=8"},
		{name: "8-negative-off", sec: "fentry/bpf_fentry_test1", prog: fixed(ret0(ldx(R2, R1, -8, DW))...),
			want: "invalid bpf_context access off=-8 size=8"},
		{name: "9-ctx-write", sec: "fentry/bpf_fentry_test1", prog: fixed(ret0(movi(R2, 0), stx(R1, 0, R2, DW))...),
			want: "invalid bpf_context access off=0 size=8"},
		{name: "10-ctx-st", sec: "fentry/bpf_fentry_test1", prog: fixed(ret0(st(R1, 0, 0, DW))...),
			want61: "BPF_ST stores into R1 ctx is not allowed", want: "invalid bpf_context access off=0 size=8"},
		{name: "11-modified-ctx", sec: "fentry/bpf_fentry_test2", prog: fixed(ret0(addi(R1, 8), ldx(R2, R1, 0, DW))...),
			want: "dereference of modified ctx ptr R1 off=8 disallowed"},
		{name: "12-ptr-walk", sec: "fentry/bpf_fentry_test7", prog: fixed(ret0(ldx(R2, R1, 0, DW), ldx(R3, R2, 0, DW))...), want: "ok",
			logHas: []string{"func 'bpf_fentry_test7' arg0 has btf_id"},
			loads:  []string{"r2 = ctx[0] (struct bpf_fentry_test_t *) -> PTR_TO_BTF_ID bpf_fentry_test_t", "r3 = *(u64 *)(r2 +0) -> arg->a (PTR_TO_BTF_ID bpf_fentry_test_t)"}},
		{name: "13-ptr-member-narrow", sec: "fentry/bpf_fentry_test7", prog: fixed(ret0(ldx(R2, R1, 0, DW), ldx(R3, R2, 0, W))...),
			want: "cannot access ptr member a with moff 0 in struct bpf_fentry_test_t with off 0 size 4"},
		{name: "14-beyond-struct", sec: "fentry/bpf_fentry_test7", prog: fixed(ret0(ldx(R2, R1, 0, DW), ldx(R3, R2, 8, DW))...),
			want: "access beyond struct bpf_fentry_test_t at off 8 size 8"},
		{name: "15-btf-write", sec: "fentry/bpf_fentry_test7", prog: fixed(ret0(ldx(R2, R1, 0, DW), movi(R3, 0), stx(R2, 0, R3, DW))...),
			want: "only read is supported"},
		{name: "16-negative-btf", sec: "fentry/bpf_fentry_test7", prog: fixed(ret0(ldx(R2, R1, 0, DW), addi(R2, -8), ldx(R3, R2, 0, DW))...),
			want: "R2 is ptr_bpf_fentry_test_t invalid negative access: off=-8"},
		{name: "17-variable-btf", sec: "fentry/bpf_fentry_test7", prog: fixed(ret0(ldx(R6, R1, 0, DW), call(asm.FnGetPrandomU32),
			asm.And.Imm(R0, 0xff), asm.Add.Reg(R6, R0), ldx(R3, R6, 0, DW))...),
			want: "R6 is ptr_bpf_fentry_test_t invalid variable offset: off=0, var_off=(0x0; 0xff)"},
		{name: "17b-unbounded", sec: "fentry/bpf_fentry_test7", prog: fixed(ret0(ldx(R6, R1, 0, DW), call(asm.FnGetPrandomU32),
			asm.Add.Reg(R6, R0), ldx(R3, R6, 0, DW))...),
			want: "math between ptr_ pointer and register with unbounded min value is not allowed"},
		{name: "18-int-ptr-scalar", sec: "fentry/bpf_modify_return_test", prog: fixed(ret0(ldx(R2, R1, 8, DW), ldx(R3, R2, 0, W))...),
			want: "R2 invalid mem access 'scalar'"},
		{name: "19-narrow-ptr-arg", sec: "fentry/bpf_modify_return_test", prog: fixed(ret0(ldx(R2, R1, 8, W))...),
			want61: "ok", want: "invalid bpf_context access off=8 size=4",
			logHas612: []string{"func 'bpf_modify_return_test' size 4 must be 8"}},
		{name: "20-void-ptr-and-char", sec: "fentry/bpf_fentry_test4", prog: fixed(ret0(ldx(R2, R1, 0, DW), ldx(R3, R1, 8, B))...), want: "ok",
			loads: []string{"r2 = ctx[0] (void *) -> SCALAR", "r3 = ctx[1] (char) -> SCALAR"}},
		{name: "21-const-void-ptr", sec: "fentry/kfree", prog: fixed(ret0(ldx(R2, R1, 0, DW))...),
			want: "invalid bpf_context access off=0 size=8", logHas: []string{"func 'kfree' arg0 type UNKNOWN is not a struct"}},
		{name: "22-void-no-ret-slot", sec: "fexit/kfree", prog: fixed(ret0(ldx(R2, R1, 8, DW))...),
			want: "invalid bpf_context access off=8 size=8", logHas: []string{"func 'kfree' doesn't have 3-th argument"}},
		{name: "23-fexit-ret-ptr", sec: "fexit/sock_alloc", prog: func(k string) asm.Instructions {
			return ret0(ldx(R2, R1, 0, DW), ldx(R3, R2, offsetOf(t, k, "socket", "sk"), DW))
		}, want: "ok", loads: []string{"r2 = ctx[0] (return value, struct socket *) -> PTR_TO_BTF_ID socket", "-> ret->sk (PTR_TO_BTF_ID sock)"}},
		{name: "24-fentry-ret-1", sec: "fentry/bpf_fentry_test1", prog: fixed(movi(R0, 1), exit()),
			want61: "At program exit the register R0 has value (0x1; 0x0) should have been in (0x0; 0x0)",
			want:   "At program exit the register R0 has smin=1 smax=1 should have been in [0, 0]", errno: "EINVAL"},
		{name: "25-r0-unset", sec: "fentry/bpf_fentry_test1", prog: fixed(exit()), want: "R0 !read_ok", errno: "EACCES"},
		{name: "26-r0-ctx", sec: "fentry/bpf_fentry_test1", prog: fixed(mov(R0, R1), exit()),
			want: "At program exit the register R0 is not a known value (ctx)"},
		{name: "27-fmod-ret-any", errInj: inj, sec: "fmod_ret/bpf_modify_return_test", prog: fixed(ldx(R2, R1, 16, DW), movi(R0, 1), exit()), want: "ok"},
		{name: "28-fmod-ret-not-modifiable", sec: "fmod_ret/tcp_v4_connect", prog: fixed(ret0()...), want: "tcp_v4_connect() is not modifiable"},
		{name: "29-fmod-ret-security", sec: "fmod_ret/security_file_open", prog: fixed(ret0()...), want: "ok"},
		{name: "31-fexit-noreturn", sec: "fexit/do_exit", prog: fixed(ret0()...),
			want61: "ok", want: "Attaching fexit/fmod_ret to __noreturn functions is rejected."},
		{name: "32-fentry-noreturn", sec: "fentry/do_exit", prog: fixed(ret0()...), want: "ok"},
		{name: "33-deny-list", sec: "fentry/migrate_disable", prog: fixed(ret0()...), want: "", errno: "EINVAL"},
		{name: "34-sleepable-denied", sec: "fentry.s/tcp_v4_connect", prog: fixed(ret0()...), want: "tcp_v4_connect is not sleepable"},
		{name: "35-sleepable-test1", errInj: inj, sec: "fentry.s/bpf_fentry_test1", prog: fixed(ret0()...), want: "ok"},
		{name: "36-sleepable-modify-return-test", errInj: inj, sec: "fentry.s/bpf_modify_return_test", prog: fixed(ret0()...),
			want61: "ok", want: "bpf_modify_return_test is not sleepable"},
		{name: "37-fmod-ret-syscall", errInj: inj, on: []string{"6.1-amd64", "6.12-amd64"}, sec: "fmod_ret/__x64_sys_getpgid", prog: fixed(ret0()...), want: "ok"},
		// Debian's kernels have no error injection (btfmodel, confirmed by capture).
		{name: "27-debian-6.1-no-error-injection", on: []string{"6.1-amd64"}, sec: "fmod_ret/bpf_modify_return_test", prog: fixed(ret0()...),
			want: "bpf_modify_return_test() is not modifiable"},
		{name: "37-debian-no-error-injection", on: []string{"6.1-amd64", "6.12-amd64"}, sec: "fmod_ret/__x64_sys_getpgid", prog: fixed(ret0()...),
			want: "__x64_sys_getpgid() is not modifiable"},
		{name: "38-lsm", sec: "lsm/file_open", prog: fixed(ret0()...), want: "ok"},
		{name: "39-lsm-ret-1", sec: "lsm/file_open", prog: fixed(movi(R0, 1), exit()),
			want61: "ok", want: "At program exit the register R0 has smin=1 smax=1 should have been in [-4095, 0]"},
		{name: "40-lsm-license", sec: "lsm/file_open", license: "Proprietary", prog: fixed(ret0()...),
			want: "LSM programs must have a GPL compatible license"},
		{name: "41-lsm-wrong-hook", at: btfmodel.LSM, target: "tcp_v4_connect", prog: fixed(ret0()...),
			want: "attach_btf_id ..."},
		{name: "42-lsm-retval-slot", sec: "lsm/file_open", prog: fixed(ldx(R2, R1, 8, DW), mov(R0, R2), exit()), want: "ok"},
		{name: "43-lsm-trusted", sec: "lsm/file_open", prog: func(k string) asm.Instructions {
			return ret0(ldx(R2, R1, 0, DW), ldx(R3, R2, offsetOf(t, k, "file", "f_inode"), DW))
		}, want: "ok", logHas61: []string{"R2_w=ptr_file(", "R3_w=ptr_inode("},
			logHas612: []string{"R2_w=trusted_ptr_file()", "R3_w=trusted_ptr_inode()"},
			loads:     []string{"-> file->f_inode (PTR_TO_BTF_ID inode"}},
		{name: "48-get-func-ret-fentry", sec: "fentry/bpf_fentry_test1", prog: fixed(ret0(st(R10, -8, 0, DW), mov(R2, R10), addi(R2, -8),
			call(asm.FnGetFuncRet))...), want: "ok"},
		{name: "49-copy-from-user", sec: "fentry/bpf_fentry_test1", prog: fixed(ret0(mov(R1, R10), addi(R1, -8), movi(R2, 8), movi(R3, 0),
			call(asm.FnCopyFromUser))...),
			want61: "unknown func bpf_copy_from_user#148", want: "helper call might sleep in a non-sleepable prog"},
		{name: "50-user-char-ptr", sec: "fentry/vfs_read", prog: fixed(ret0(ldx(R2, R1, 8, DW), ldx(R3, R2, 0, B))...),
			want: "R2 invalid mem access 'scalar'"},
	}
	runCases(t, cases)
}
