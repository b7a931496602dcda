package btfmodel

import "testing"

// Fsession parses as a kind, and the 6.1/6.12 profiles, which predate BPF_TRACE_FSESSION,
// refuse it at load instead of treating it as an fentry.
func TestFsessionKind(t *testing.T) {
	at, err := ParseAttachType("fsession")
	if err != nil || at != Fsession {
		t.Fatalf("ParseAttachType(fsession) = %q, %v", at, err)
	}
	m := &FuncModel{Name: "bpf_fentry_test1"}
	for _, k := range []Kernel{Kernel61, Kernel612} {
		v := CheckAttach("bpf_fentry_test1", m, nil, Fsession, AttachEnv{Kernel: k, Arch: AMD64})
		if v.OK || v.Stage != StageLoad || v.Errno != "EINVAL" {
			t.Errorf("%s: fsession verdict %+v, want a load refusal", k, v)
		}
	}
}
