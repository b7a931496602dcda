package verifier_test

import (
	"fmt"
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

// TestGeneratorSeed checks that a seed makes the same programs (a disagreement found by a
// run can be made again from its seed and index).
func TestGeneratorSeed(t *testing.T) {
	env := profileEnv(t, "6.12-amd64")
	a, b := verifier.NewGenerator(env, 11), verifier.NewGenerator(env, 11)
	for i := 0; i < 200; i++ {
		pa, pb := a.Program("g"), b.Program("g")
		wa, err := wireFromJSON(pa)
		if err != nil {
			t.Fatal(err)
		}
		wb, _ := wireFromJSON(pb)
		if pa.Section != pb.Section || string(wa.Insns) != string(wb.Insns) || string(wa.FuncInfo) != string(wb.FuncInfo) ||
			fmt.Sprint(wa.Kfuncs) != fmt.Sprint(wb.Kfuncs) {
			t.Fatalf("program %d differs between two generators of seed 11:\n%v\n%v", i, pa.Instructions, pb.Instructions)
		}
	}
}
