package kernel

import (
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/kernel/wire"
)

// sections.bpf.o mixes program types: the tracing and LSM ones convert, the others are
// skipped with a reason, and tp_btf travels as raw_tp.
func TestProgramsFromELFSkipped(t *testing.T) {
	spec, err := btfmodel.LoadFile("../testdata/kernel/6.12-amd64/vmlinux.btf.xz", nil)
	if err != nil {
		t.Fatal(err)
	}
	progs, skipped, err := ProgramsFromELFSkipped("../testdata/verifier/sections.bpf.o", ELFOptions{KernelBTF: spec})
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 12 {
		t.Errorf("skipped %v, want the kprobe, kretprobe, tracepoint, raw_tp, iter, perf_event, cgroup, struct_ops, xdp, freplace and lsm_cgroup programs", skipped)
	}
	byName := map[string]wire.VerifyProgram{}
	for _, p := range progs {
		byName[p.Name] = p
	}
	if p := byName["sec_q_tp_btf"]; p.AttachType != "raw_tp" || p.AttachTo != "sched_process_exec" || p.Type != "tracing" {
		t.Errorf("?tp_btf/sched_process_exec: %+v", p)
	}
	if p := byName["sec_fexit_s"]; p.AttachType != "fexit" || !p.Sleepable {
		t.Errorf("fexit.s: %+v", p)
	}
	if p := byName["sec_mod_vmlinux"]; p.AttachTo != "vmlinux:bpf_fentry_test1" {
		t.Errorf("module target: %+v", p)
	}
	for _, c := range []struct{ sec, at string }{{"tp_btf/sched_switch", "raw_tp"}, {"?fentry/f", "fentry"}, {"?lsm.s/file_open", "lsm_mac"}} {
		p, err := ProgramForSection("x", c.sec)
		if err != nil || p.AttachType != c.at {
			t.Errorf("%s: %+v %v", c.sec, p, err)
		}
	}
	if _, err := ProgramForSection("x", "tp_btf.s/sched_switch"); err == nil {
		t.Errorf("tp_btf.s accepted")
	}
}
