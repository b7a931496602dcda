package btfmodel

import (
	"strings"
	"testing"
)

// attachCase is the kernel's answer for one attachment, written from the rules in
// kernel/bpf/verifier.c (bpf_check_attach_target, check_attach_btf_id), kernel/bpf/bpf_lsm.c
// and the arch JITs (arch/*/net/bpf_jit_comp.c): "ok", or the errno and the start of the
// message; the kernel corpus confirms them (docs/kernel-facts.md).
type attachCase struct {
	key, fn string
	at      AttachType
	want    string // "ok" or "ERRNO: message prefix"
}

var attachCases = []attachCase{
	// Argument registers per arch and profile (link time, -ENOTSUPP).
	{"6.12-amd64", "tcp_v4_send_ack", Fentry, "ok"},                       // 12 slots: stack args since 6.6
	{"6.1-amd64", "tcp_v4_send_ack", Fentry, "ENOTSUPP: the 6.1 x86_64"},  // 6.1: six registers
	{"6.12-arm64", "tcp_v4_send_ack", Fentry, "ENOTSUPP: the 6.12 arm64"}, // arm64: x0-x7
	{"6.12-arm64", "bpf_modify_return_test2", Fentry, "ok"},               // 7 registers
	{"6.12-arm64", "ZSTD_compress_usingCDict_advanced", Fexit, "ok"},      // 6 + 2 = 8 registers
	{"6.12-arm64", "do_sock_setsockopt", Fentry, "ok"},                    // 7 registers
	{"6.1-amd64", "sock_setsockopt", Fentry, "ok"},                        // 4 + 2 = 6 registers
	{"6.1-amd64", "bpf_fentry_test6", Fexit, "ok"},                        // exactly 6
	{"6.1-amd64", "bpf_trace_run11", Fentry, "ENOTSUPP: the 6.1 x86_64"},  // 12 args
	{"6.12-amd64", "bpf_trace_run11", Fexit, "ok"},                        // 12 args
	{"6.12-amd64", "bpf_trace_run12", Fentry, "EINVAL: The function bpf_trace_run12 has 13 arguments. Too many."},
	{"6.12-arm64", "_printk", Fexit, "EINVAL: The function _printk with variable args is unsupported."},
	// fmod_ret: error injection, security_ hooks, fmod_ret id sets (6.3+).
	{"6.12-amd64", "bpf_modify_return_test", ModRet, "ok"}, // fmod_ret id set
	// ALLOW_ERROR_INJECTION in 6.1, but Debian builds without error injection: refused
	// (captured from Debian 6.1.176 under qemu).
	{"6.1-amd64", "bpf_modify_return_test", ModRet, "EINVAL: bpf_modify_return_test() is not modifiable"},
	{"6.12-amd64", "security_socket_connect", ModRet, "ok"},
	// Debian builds without error injection, and 6.12 has no syscall-wrapper fallback yet
	// (captured: "__x64_sys_getpgid() is not modifiable").
	{"6.12-amd64", "__x64_sys_getpgid", ModRet, "EINVAL: __x64_sys_getpgid() is not modifiable"},
	{"6.12-arm64", "__arm64_sys_getpgid", ModRet, "EINVAL: __arm64_sys_getpgid() is not modifiable"},
	{"6.12-amd64", "tcp_v4_connect", ModRet, "EINVAL: tcp_v4_connect() is not modifiable"},
	{"6.1-amd64", "vfs_read", ModRet, "EINVAL: vfs_read() is not modifiable"},
	{"6.12-amd64", "tcp_v4_connect", Fexit, "ok"},
	// Deny lists: btf_id_deny for all tracing, noreturn_deny for fexit/fmod_ret.
	{"6.12-amd64", "migrate_disable", Fentry, "EINVAL: btf_id_deny"},
	{"6.1-amd64", "migrate_disable", Fexit, "EINVAL: btf_id_deny"},
	{"6.12-amd64", "do_exit", Fentry, "ok"},
	{"6.12-amd64", "do_exit", Fexit, "EINVAL: Attaching fexit/fmod_ret to __noreturn functions is rejected."},
	{"6.1-amd64", "do_exit", Fexit, "ok"}, // no noreturn_deny in 6.1
	// LSM: only bpf_lsm_* hooks; 6.12 disables some.
	{"6.12-amd64", "bpf_lsm_socket_connect", LSM, "ok"},
	{"6.1-amd64", "bpf_lsm_inode_getsecurity", LSM, "ok"},
	{"6.12-amd64", "bpf_lsm_inode_getsecurity", LSM, "EINVAL: attach_btf_id"},
	{"6.12-amd64", "tcp_v4_connect", LSM, "EINVAL: attach_btf_id"},
}

func TestCheckAttach(t *testing.T) {
	for _, c := range attachCases {
		t.Run(c.key+"/"+c.fn+"/"+string(c.at), func(t *testing.T) {
			parts := strings.Split(c.key, "-")
			spec := loadSpec(t, c.key)
			fn, err := FuncByName(spec, c.fn)
			if err != nil {
				t.Fatal(err)
			}
			k, arch := Kernel(parts[0]), Arch(parts[1])
			m, derr := Distill(fn, k)
			id, _ := spec.TypeID(fn)
			v := CheckAttach(c.fn, m, derr, c.at, AttachEnv{Kernel: k, Arch: arch, BTFID: uint32(id)})
			got := "ok"
			if !v.OK {
				got = v.Errno + ": " + v.Msg
			}
			if !strings.HasPrefix(got, c.want) {
				t.Errorf("got %q, want %q...", got, c.want)
			}
		})
	}
}

func TestCheckAttachMessages(t *testing.T) {
	spec := loadSpec(t, "6.12-amd64")
	fn, _ := FuncByName(spec, "bpf_lsm_inode_getsecurity")
	id, _ := spec.TypeID(fn)
	m, _ := Distill(fn, Kernel612)
	v := CheckAttach(fn.Name, m, nil, LSM, AttachEnv{Kernel: Kernel612, Arch: AMD64, BTFID: uint32(id)})
	want := "attach_btf_id " + itoa(int(id)) + " points to disabled hook bpf_lsm_inode_getsecurity"
	if v.Msg != want || !v.KernelMsg || v.Stage != StageLoad {
		t.Errorf("got %+v, want message %q from the verifier", v, want)
	}
}

func TestErrorInjectionList(t *testing.T) {
	spec := loadSpec(t, "6.12-amd64")
	fn, _ := FuncByName(spec, "tcp_v4_connect")
	m, _ := Distill(fn, Kernel612)
	env := AttachEnv{Kernel: Kernel612, Arch: AMD64, ErrorInjection: map[string]bool{"tcp_v4_connect": true}}
	if v := CheckAttach(fn.Name, m, nil, ModRet, env); !v.OK {
		t.Errorf("listed function: %+v", v)
	}
	fn, _ = FuncByName(spec, "__x64_sys_getpgid")
	m, _ = Distill(fn, Kernel612)
	if v := CheckAttach(fn.Name, m, nil, ModRet, env); v.OK {
		t.Errorf("unlisted syscall wrapper accepted: %+v", v)
	}
	// Sleepable: error-injectable but in btf_non_sleepable_error_inject.
	env.ErrorInjection["should_failslab"] = true
	v := CheckAttach("should_failslab", &FuncModel{Name: "should_failslab"}, nil, ModRet,
		AttachEnv{Kernel: Kernel612, Arch: AMD64, Sleepable: true, ErrorInjection: env.ErrorInjection})
	if v.OK || v.Msg != "should_failslab is not sleepable" {
		t.Errorf("sleepable should_failslab: %+v", v)
	}
}

func TestBPFProgTargetArm64_61(t *testing.T) {
	env := AttachEnv{Kernel: Kernel61, Arch: ARM64}
	plain := &FuncModel{Name: "p", Args: []Arg{{Size: 8}, {Size: 4}}}
	if errno, _ := CheckBPFProgTarget(plain, env); errno != "" {
		t.Errorf("plain BPF-program target refused: %s", errno)
	}
	withStruct := &FuncModel{Name: "p", Args: []Arg{{Size: 16, Flags: StructArg}}}
	if errno, _ := CheckBPFProgTarget(withStruct, env); errno != "ENOTSUPP" {
		t.Errorf("struct arg on arm64 6.1: %q, want ENOTSUPP", errno)
	}
	if v := CheckAttach("f", plain, nil, Fentry, env); v.OK || v.Errno != "ENOTSUPP" {
		t.Errorf("kernel function on arm64 6.1: %+v, want ENOTSUPP", v)
	}
}
