package verifier

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/trampjit/trampjit/btfmodel"
)

func TestParseSection(t *testing.T) {
	cases := []struct {
		sec    string
		at     btfmodel.AttachType
		target string
		sleep  bool
		bad    bool
	}{
		{sec: "fentry/tcp_v4_connect", at: btfmodel.Fentry, target: "tcp_v4_connect"},
		{sec: "fexit.s/vfs_read", at: btfmodel.Fexit, target: "vfs_read", sleep: true},
		{sec: "fmod_ret/security_file_open", at: btfmodel.ModRet, target: "security_file_open"},
		{sec: "lsm/file_open", at: btfmodel.LSM, target: "bpf_lsm_file_open"},
		{sec: "lsm.s/bprm_check_security", at: btfmodel.LSM, target: "bpf_lsm_bprm_check_security", sleep: true},
		{sec: "kprobe/tcp_v4_connect", bad: true},
		{sec: "fentry", bad: true},
		{sec: "fentry/", bad: true},
	}
	for _, c := range cases {
		at, target, sleep, err := ParseSection(c.sec)
		if (err != nil) != c.bad {
			t.Errorf("%s: err %v", c.sec, err)
			continue
		}
		if !c.bad && (at != c.at || target != c.target || sleep != c.sleep) {
			t.Errorf("%s: got %s %s %v", c.sec, at, target, sleep)
		}
	}
}

func TestCheckInputs(t *testing.T) {
	prog := asm.Instructions{movi(asm.R0, 0), exit()}
	env := envFor(t, "6.12-amd64")
	// A target without BTF: libbpf stops before the kernel is asked.
	res := Check(Program{Section: "fentry/no_such_function_xyz", License: "GPL", Instructions: prog}, env)
	if res.Accepted || res.Errno != "ESRCH" || res.Error != "failed to find kernel BTF type ID of 'no_such_function_xyz': -ESRCH" {
		t.Errorf("missing target: %+v", res)
	}
	// Explicit attach type and target instead of a section.
	res = Check(Program{AttachType: btfmodel.Fexit, Target: "bpf_fentry_test1", License: "GPL", Instructions: prog}, env)
	if !res.Accepted {
		t.Errorf("explicit target: %+v", res)
	}
	// No target at all, and no BTF: the model's own errors.
	for _, p := range []Program{{Instructions: prog}, {Section: "uprobe/x", Instructions: prog}} {
		if res := Check(p, env); res.Accepted || !strings.HasPrefix(res.Error, "model: ") {
			t.Errorf("%+v: %+v", p, res)
		}
	}
	if res := Check(Program{Section: "fentry/bpf_fentry_test1", Instructions: prog}, Env{Kernel: btfmodel.Kernel612}); !strings.HasPrefix(res.Error, "model: ") {
		t.Errorf("no BTF: %+v", res)
	}
	// Rejected programs carry no load explanations; accepted ones do, in insn order.
	res = Check(Program{Section: "fentry/bpf_fentry_test2", License: "GPL", Instructions: asm.Instructions{
		ldx(asm.R3, asm.R1, 8, asm.DWord), ldx(asm.R2, asm.R1, 0, asm.DWord), movi(asm.R0, 0), exit()}}, env)
	if !res.Accepted || len(res.Loads) != 2 || res.Loads[0].Insn != 0 || res.Loads[1].String() != "1: r2 = ctx[0] (int) -> SCALAR" {
		t.Errorf("loads: %+v", res.Loads)
	}
	res = Check(Program{Section: "fentry/bpf_fentry_test2", License: "GPL", Instructions: asm.Instructions{
		ldx(asm.R2, asm.R1, 0, asm.DWord), movi(asm.R0, 1), exit()}}, env)
	if res.Accepted || res.Loads != nil {
		t.Errorf("rejected with loads: %+v", res)
	}
	// The attach-time (link) refusal of the arch JIT is not a verifier error: a note.
	res = Check(Program{Section: "fentry/tcp_v4_send_ack", License: "GPL", Instructions: prog}, envFor(t, "6.12-arm64"))
	if !res.Accepted || len(res.Notes) == 0 || !strings.Contains(res.Notes[0], "ENOTSUPP") {
		t.Errorf("link-time refusal: %+v", res)
	}
}
