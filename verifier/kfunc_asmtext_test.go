package verifier_test

import (
	"testing"

	"github.com/trampjit/trampjit/verifier"
)

// TestKfuncTextCall: "call NAME" of a kfunc in the text format is a BPF_PSEUDO_KFUNC_CALL by
// name, as is the kernel log's "call NAME#BTF_ID"; the same list is then judged per profile
// as the kernel judged the probe program of that kfunc (kfunc-probe/<profile>.json) and the
// C program kfunc.bpf.c's kf_task_acquire_current.
func TestKfuncTextCall(t *testing.T) {
	for _, profile := range truthProfiles {
		env := profileEnv(t, profile)
		f := loadKfuncProbe(t, profile)
		want := f.Kfuncs[0]
		lines := []string{"r1 = 0", "r2 = 0", "r3 = 0", "r4 = 0", "r5 = 0", "call " + want.Name, "r0 = 0", "exit"}
		for _, form := range []string{"call " + want.Name, "call " + want.Name + "#99999"} {
			lines[5] = form
			insns, err := verifier.ParseInstructions(lines, nil)
			if err != nil {
				t.Fatalf("%s: %q: %v", profile, form, err)
			}
			if !insns[5].IsKfuncCall() || insns[5].Reference() != want.Name {
				t.Fatalf("%s: %q parsed as %v (reference %q)", profile, form, insns[5], insns[5].Reference())
			}
			for _, s := range probeSections {
				got := verifier.Check(verifier.Program{Name: "text", Section: s.section, License: "GPL", Instructions: insns}, env)
				if d := truthDiff(want.Results[s.kind], got); d != "" {
					t.Errorf("%s: %q from %s: %s", profile, form, s.kind, d)
				}
			}
		}
		// A label of that name is still a bpf-to-bpf call.
		insns, err := verifier.ParseInstructions([]string{"call bpf_task_acquire", "exit", "bpf_task_acquire:", "r0 = 0", "exit"}, nil)
		if err != nil || insns[0].IsKfuncCall() {
			t.Fatalf("%s: a label named like a kfunc: %v, %v", profile, insns, err)
		}
	}
}
