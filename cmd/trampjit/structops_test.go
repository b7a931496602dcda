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

// gen's struct_ops flags: tracing program flags and bad CFI modes are usage errors.
func TestGenStructOpsFlags(t *testing.T) {
	btfArm := "../../testdata/kernel/7.2-arm64/vmlinux.btf.xz"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--fentry", "1"}, "drop the program flags"},
		{[]string{"--cfi", "fineibt", "--arch", "arm64"}, "FineIBT is x86_64 only"},
		{[]string{"--cfi", "cet"}, `features.cfi "cet": want "", "kcfi" or "fineibt"`},
		{[]string{"--cfi-hash", "0x1"}, "features.cfi_hash without features.cfi"},
		{[]string{"--cfi", "kcfi", "--cfi-hash", "0x100000000"}, "want a 32-bit number"},
	} {
		args := append([]string{"gen", "--struct-ops", "tcp_congestion_ops.cong_avoid", "--btf", btfArm, "--kernel", "7.2"}, c.args...)
		if code, _, errOut := trampjit(args...); code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d: %s", c.args, code, errOut)
		}
	}
}
