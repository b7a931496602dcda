package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// An object that mixes program types: trampjit verify judges the tracing and LSM programs
// and names the others, each with its reason, instead of refusing the object.
func TestVerifySkipsOtherProgramTypes(t *testing.T) {
	code, out, errOut := trampjit("verify", "../../testdata/verifier/sections.bpf.o", "--btf", btf612, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res verifyJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	skipped := map[string]string{}
	for _, s := range res.Skipped {
		skipped[s.Name] = s.Reason
	}
	for _, n := range []string{"sec_kprobe", "sec_kretprobe", "sec_tracepoint", "sec_raw_tp", "sec_iter", "sec_perf_event",
		"sec_cgroup_skb", "sec_cgroup_connect4", "sec_struct_ops", "sec_xdp", "sec_freplace", "sec_lsm_cgroup"} {
		if skipped[n] == "" || !strings.Contains(skipped[n], "not modelled") {
			t.Errorf("%s: skipped %q", n, skipped[n])
		}
	}
	verified := map[string]bool{}
	for _, p := range res.Programs {
		verified[p.Name] = true
	}
	for _, n := range []string{"sec_tp_btf", "sec_q_tp_btf", "sec_q_fentry", "sec_mod_vmlinux", "sec_fexit_s"} {
		if !verified[n] {
			t.Errorf("%s not verified", n)
		}
	}
	code, out, _ = trampjit("verify", "--btf", btf612, "../../testdata/verifier/sections.bpf.o", "--color", "never")
	if code != 0 || !strings.Contains(out, "sec_kprobe kprobe/tcp_v4_connect  skipped: ") || !strings.Contains(out, ", 12 skipped") {
		t.Errorf("text output (exit %d):\n%s", code, out)
	}
}
