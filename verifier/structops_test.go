package verifier

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/trampjit/trampjit/btfmodel"
)

// libbpf's struct_ops sections carry no member; a program given without an object names
// it as OPS:MEMBER, and .s makes it sleepable.
func TestParseSectionStructOps(t *testing.T) {
	at, target, sl, err := ParseSection("struct_ops.s/sched_ext_ops:init")
	if err != nil || at != btfmodel.StructOps || target != "sched_ext_ops:init" || !sl {
		t.Errorf("struct_ops.s: %v %q %v %v", at, target, sl, err)
	}
	if _, _, sl, err := ParseSection("?struct_ops/tcp_congestion_ops:ssthresh"); err != nil || sl {
		t.Errorf("?struct_ops: sleepable=%v, %v", sl, err)
	}
	for _, bad := range []string{"struct_ops/rn_init", "struct_ops/:ssthresh", "struct_ops/tcp_congestion_ops:"} {
		if _, _, _, err := ParseSection(bad); err == nil || !strings.Contains(err.Error(), "OPS:MEMBER") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// The objects' programs take their member from the .struct_ops.link map pointing at them
// (clang-built; the member names are the C initialisers').
func TestLoadELFStructOpsMembers(t *testing.T) {
	progs, _, err := LoadELFObject("../testdata/verifier/structops.bpf.o", loadSpec(t, "6.12-amd64"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"rn_cong_avoid": "tcp_congestion_ops:cong_avoid", "bad_get_info": "tcp_congestion_ops:get_info",
		"dummy_sleepable": "bpf_dummy_ops:test_sleepable", "kr_undo_cwnd": "tcp_congestion_ops:undo_cwnd"}
	got := 0
	for _, p := range progs {
		if w, ok := want[p.Name]; ok {
			got++
			if p.AttachType != btfmodel.StructOps || p.Target != w {
				t.Errorf("%s: %s %q, want struct_ops %q", p.Name, p.AttachType, p.Target, w)
			}
			if p.Sleepable != (p.Name == "dummy_sleepable") {
				t.Errorf("%s: sleepable=%v", p.Name, p.Sleepable)
			}
		}
	}
	if got != len(want) {
		t.Errorf("found %d of %d programs", got, len(want))
	}
}

// A struct_ops program given without its member is bad input, not a kernel verdict.
func TestStructOpsTargetWithoutMember(t *testing.T) {
	res := Check(Program{Name: "p", AttachType: btfmodel.StructOps, Target: "tcp_congestion_ops", License: "GPL",
		Instructions: mustAsm(t, "r0 = 0", "exit")}, envFor(t, "6.12-amd64"))
	if res.Accepted || !strings.HasPrefix(res.Error, "model: ") || !strings.Contains(res.Error, "OPS:MEMBER") {
		t.Errorf("accepted=%v error %q", res.Accepted, res.Error)
	}
}

func mustAsm(t *testing.T, lines ...string) asm.Instructions {
	t.Helper()
	insns, err := ParseInstructions(lines, nil)
	if err != nil {
		t.Fatal(err)
	}
	return insns
}

// JSON programs may name the member as attach_type and target instead of a section.
func TestParseJSONStructOps(t *testing.T) {
	progs, err := ParseJSON([]byte(`{"programs": [{"name": "a", "attach_type": "struct_ops", "target": "bpf_dummy_ops:test_1", "sleepable": true, "license": "GPL", "insns": ["r0 = 0", "exit"]}]}`))
	if err != nil || len(progs) != 1 || progs[0].AttachType != btfmodel.StructOps || progs[0].Target != "bpf_dummy_ops:test_1" || !progs[0].Sleepable {
		t.Fatalf("%+v %v", progs, err)
	}
	// bpf_dummy_ops_check_member: only test_sleepable may sleep (6.12's capture:
	// "attach to unsupported member test_1 of struct bpf_dummy_ops").
	if res := Check(progs[0], envFor(t, "6.12-amd64")); res.Accepted || res.Error != "attach to unsupported member test_1 of struct bpf_dummy_ops" {
		t.Errorf("accepted=%v %q", res.Accepted, res.Error)
	}
	if _, err := ParseJSON([]byte(`{"programs": [{"name": "a", "attach_type": "struct_ops", "target": "bpf_dummy_ops", "insns": ["exit"]}]}`)); err == nil || !strings.Contains(err.Error(), "OPS:MEMBER") {
		t.Errorf("target without member: %v", err)
	}
}
