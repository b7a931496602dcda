package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// `trampjit model --struct-ops`: the member's model from each kernel's BTF. Indexes are
// include/net/tcp.h's member order (7.2 starts with cong_avoid; 6.12 with ssthresh); flags are
// bpf_struct_ops_prepare_trampoline's (INDIRECT from 6.8 on, RET_FENTRY_RET when non-void).
func TestModelStructOps(t *testing.T) {
	for _, c := range []struct {
		key, kernel, arch, member string
		index                     int
		flags                     string
	}{
		{"7.2-amd64", "7.2", "amd64", "ssthresh", 2, "RET_FENTRY_RET|INDIRECT"},
		{"6.12-arm64", "6.12", "arm64", "ssthresh", 0, "RET_FENTRY_RET|INDIRECT"},
		{"6.1-amd64", "6.1", "amd64", "cong_avoid", 1, "0"},
		{"7.2-riscv64", "7.2", "riscv64", "cwnd_event_tx_start", 5, "INDIRECT"},
	} {
		code, out, errOut := trampjit("model", "--struct-ops", "tcp_congestion_ops."+c.member,
			"--btf", "../../testdata/kernel/"+c.key+"/vmlinux.btf.xz", "--kernel", c.kernel, "--arch", c.arch, "--format", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.key, code, errOut)
		}
		var m structOpsJSON
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatal(err)
		}
		if m.Index != c.index || m.Flags != c.flags || !m.Verdict.OK || m.Prototype == "" {
			t.Errorf("%s %s: index %d flags %s verdict %+v %s", c.key, c.member, m.Index, m.Flags, m.Verdict, m.Prototype)
		}
	}
	code, out, _ := trampjit("model", "--struct-ops", "tcp_congestion_ops.get_info",
		"--btf", "../../testdata/kernel/6.12-amd64/vmlinux.btf.xz", "--kernel", "6.12", "--color", "never")
	if code != 1 || !strings.Contains(out, "refused  at load, ENOTSUPP: attach to unsupported member get_info of struct tcp_congestion_ops") {
		t.Errorf("get_info (exit %d):\n%s", code, out)
	}
	for _, bad := range []string{"tcp_congestion_ops", "tcp_congestion_ops.", ".cong_avoid"} {
		if code, _, errOut := trampjit("model", "--struct-ops", bad, "--btf", "../../testdata/kernel/6.12-amd64/vmlinux.btf.xz"); code != 2 || !strings.Contains(errOut, "want OPS.MEMBER") {
			t.Errorf("%q: exit %d: %s", bad, code, errOut)
		}
	}
}

// gen refuses struct_ops until a backend builds the images, rather than emitting a tracing
// trampoline for them.
func TestGenStructOpsNotYet(t *testing.T) {
	code, out, errOut := trampjit("gen", "--struct-ops", "tcp_congestion_ops.cong_avoid",
		"--btf", "../../testdata/kernel/7.2-arm64/vmlinux.btf.xz", "--kernel", "7.2", "--arch", "arm64")
	if code != 1 || out != "" || !strings.Contains(errOut, "struct_ops images are not generated yet") {
		t.Errorf("exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	if code, _, errOut := trampjit("gen", "--struct-ops", "tcp_congestion_ops.cong_avoid", "--fentry", "1",
		"--btf", "../../testdata/kernel/7.2-arm64/vmlinux.btf.xz", "--kernel", "7.2"); code != 2 || !strings.Contains(errOut, "drop the program flags") {
		t.Errorf("with --fentry: exit %d: %s", code, errOut)
	}
}
