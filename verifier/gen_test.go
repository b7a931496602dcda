package verifier_test

import (
	"testing"

	"github.com/trampjit/trampjit/verifier"
)

// TestGenerator checks that generated programs are well formed (the kernel converter
// encodes them) and meet both verdicts of the model, for every profile.
func TestGenerator(t *testing.T) {
	for _, profile := range truthProfiles {
		env := profileEnv(t, profile)
		gen := verifier.NewGenerator(env, 7)
		accepted := 0
		const n = 300
		for i := 0; i < n; i++ {
			p := gen.Program("g")
			if _, err := wireFromJSON(p); err != nil {
				t.Fatalf("%s: program %d (%s): %v\n%v", profile, i, p.Section, err, p.Instructions)
			}
			if verifier.Check(p, env).Accepted {
				accepted++
			}
		}
		if accepted < n/10 || accepted > n*9/10 {
			t.Errorf("%s: the model accepts %d of %d generated programs: not near the boundary", profile, accepted, n)
		}
		t.Logf("%s: model accepts %d/%d", profile, accepted, n)
	}
}
