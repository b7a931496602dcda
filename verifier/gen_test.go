package verifier_test

import (
	"strings"
	"testing"

	"github.com/trampjit/trampjit/verifier"
)

// TestGenerator checks that generated programs are well formed (the kernel converter
// encodes them), that about a third have bpf-to-bpf, callback or kfunc calls, and that the
// model meets both verdicts on the programs it judges, for every profile.
func TestGenerator(t *testing.T) {
	for _, profile := range truthProfiles {
		env := profileEnv(t, profile)
		gen := verifier.NewGenerator(env, 7)
		accepted, judged, calls := 0, 0, 0
		const n = 300
		for i := 0; i < n; i++ {
			p := gen.Program("g")
			if _, err := wireFromJSON(p); err != nil {
				t.Fatalf("%s: program %d (%s): %v\n%v", profile, i, p.Section, err, p.Instructions)
			}
			for _, ins := range p.Instructions {
				if ins.IsFunctionCall() || ins.IsKfuncCall() || ins.IsLoadOfFunctionPointer() {
					calls++
					break
				}
			}
			res := verifier.Check(p, env)
			if strings.HasPrefix(res.Error, "model: ") {
				continue // not judged (yet): no side of the boundary
			}
			judged++
			if res.Accepted {
				accepted++
			}
		}
		if calls < n/4 {
			t.Errorf("%s: %d of %d generated programs have calls, want a quarter at least", profile, calls, n)
		}
		if accepted < judged/10 || accepted > judged*9/10 {
			t.Errorf("%s: the model accepts %d of %d generated programs it judges: not near the boundary", profile, accepted, judged)
		}
		t.Logf("%s: model accepts %d/%d judged (%d generated, %d with calls)", profile, accepted, judged, n, calls)
	}
}
