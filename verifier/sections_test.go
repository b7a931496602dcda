package verifier

import (
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
)

// libbpf's spellings (tools/lib/bpf/libbpf.c section_defs): what the verifier is told.
func TestParseSectionSpellings(t *testing.T) {
	for _, c := range []struct {
		sec    string
		at     btfmodel.AttachType
		target string
		sleep  bool
	}{
		{"fentry/tcp_v4_connect", btfmodel.Fentry, "tcp_v4_connect", false},
		{"fentry.s/bpf_fentry_test1", btfmodel.Fentry, "bpf_fentry_test1", true},
		{"fexit.s/f", btfmodel.Fexit, "f", true},
		{"fmod_ret.s/f", btfmodel.ModRet, "f", true},
		{"lsm.s/file_open", btfmodel.LSM, "bpf_lsm_file_open", true},
		{"tp_btf/sched_switch", btfmodel.RawTP, "sched_switch", false},
		{"?tp_btf/sched_switch", btfmodel.RawTP, "sched_switch", false},
		{"?lsm/file_open", btfmodel.LSM, "bpf_lsm_file_open", false},
		{"fentry/vmlinux:bpf_fentry_test1", btfmodel.Fentry, "vmlinux:bpf_fentry_test1", false},
	} {
		at, target, sleep, err := ParseSection(c.sec)
		if err != nil || at != c.at || target != c.target || sleep != c.sleep {
			t.Errorf("%s: got %s %s %v %v", c.sec, at, target, sleep, err)
		}
	}
	for _, sec := range []string{"kprobe/tcp_v4_connect", "tp_btf.s/sched_switch", "iter/task", "tp_btf", "raw_tp/sched_switch"} {
		if _, _, _, err := ParseSection(sec); err == nil {
			t.Errorf("%s: accepted", sec)
		}
	}
}

// An object that mixes program types: the others are skipped, each with its reason.
func TestELFSkipsOtherProgramTypes(t *testing.T) {
	progs, skipped, err := LoadELFObject("../testdata/verifier/sections.bpf.o", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"sec_kprobe": "Kprobe", "sec_kretprobe": "Kprobe", "sec_tracepoint": "TracePoint",
		"sec_raw_tp": "RawTracepoint", "sec_iter": "BPF_TRACE_ITER", "sec_perf_event": "PerfEvent",
		"sec_cgroup_skb": "CGroupSKB", "sec_cgroup_connect4": "CGroupSockAddr", "sec_struct_ops": ".struct_ops map",
		"sec_xdp": "XDP", "sec_freplace": "Extension", "sec_lsm_cgroup": "LSMCgroup"}
	if len(skipped) != len(want) {
		t.Errorf("skipped %v, want %d", skipped, len(want))
	}
	for _, s := range skipped {
		if w, ok := want[s.Name]; !ok || !strings.Contains(s.Reason, w) {
			t.Errorf("skipped %s: %q", s.Name, s.Reason)
		}
	}
	for _, p := range progs {
		if _, ok := want[p.Name]; ok {
			t.Errorf("%s was not skipped", p.Name)
		}
	}
	if len(progs) < 15 {
		t.Errorf("%d programs verified, want the fentry/fexit/fmod_ret/lsm/tp_btf ones", len(progs))
	}
}
