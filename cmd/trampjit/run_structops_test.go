package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/emu"
)

// `trampjit run --struct-ops`: the member's image called through the ops table's pointer on
// every architecture, in both output forms; the caller gets the program's return value as
// the member's type makes it (u32 ssthresh: the low word on x86_64 and arm64, sign-extended
// into a0 on riscv64, whose trampoline re-derives a0 from a5 with sext.w).
func TestRunStructOps(t *testing.T) {
	for _, c := range []struct {
		key, kernel, arch string
		ret               uint64
	}{
		{"6.1-amd64", "6.1", "amd64", 0x80000001},
		{"6.12-arm64", "6.12", "arm64", 0x80000001},
		{"7.2-amd64", "7.2", "amd64", 0x80000001},
		{"7.2-riscv64", "7.2", "riscv64", 0xffffffff80000001},
	} {
		args := []string{"run", "--struct-ops", "tcp_congestion_ops.ssthresh", "--btf", "../../testdata/kernel/" + c.key + "/vmlinux.btf.xz",
			"--kernel", c.kernel, "--arch", c.arch, "--ret-values", "0x1234567880000001", "--count", "10", "--clobber"}
		code, out, errOut := trampjit(append(args, "--format", "json")...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s%s", c.key, code, errOut, out)
		}
		var r emu.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if !r.OK || r.Ret != c.ret || r.StructOps != "tcp_congestion_ops.ssthresh" || r.OriginalCalled || r.Hits != 10 ||
			len(r.Programs) != 1 || !r.Programs[0].Ran || r.Programs[0].Kind != "struct_ops" {
			t.Errorf("%s: %+v", c.key, r)
		}
		code, out, _ = trampjit(append(args, "--color", "never")...)
		if code != 0 || !strings.Contains(out, "called    tcp_congestion_ops.ssthresh through the ops table's pointer") ||
			!strings.Contains(out, "none called (a struct_ops image has no original") || !strings.Contains(out, "landing       ok") {
			t.Errorf("%s text (exit %d):\n%s", c.key, code, out)
		}
	}
	if emu.NativeSupported {
		code, out, errOut := trampjit("run", "--struct-ops", "sched_ext_ops.select_cpu", "--btf", "../../testdata/kernel/7.2-amd64/vmlinux.btf.xz",
			"--kernel", "7.2", "--engine", "native", "--count", "1000", "--miss", "0", "--format", "json")
		var r emu.Report
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || !r.OK || r.Engine != "native" || r.Programs[0].Ran || r.Ret != 0xeeeeeeee {
			t.Errorf("native, recursion miss (exit %d): %s%s", code, errOut, out)
		}
	}
	btf := "../../testdata/kernel/6.12-amd64/vmlinux.btf.xz"
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--ret-values", "1,2"}, 1, "2 return values for 1 struct_ops program"},
		{[]string{"--miss", "1"}, 1, "miss: no program 1"},
		{[]string{"--args", "1,2"}, 1, "2 argument words for 3 register slots"},
		{[]string{"--fexit", "1"}, 2, "drop the program flags"},
	} {
		code, _, errOut := trampjit(append([]string{"run", "--struct-ops", "tcp_congestion_ops.cong_avoid", "--btf", btf}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d: %s", c.args, code, errOut)
		}
	}
}
