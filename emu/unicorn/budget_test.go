//go:build cgo

package unicorn

import "testing"

// TestBudgetExact checks Run's block-level budget against an exact count of
// the same run (a C code hook on every instruction): a budget of exactly the
// instructions executed passes, one less ends by budget, for several loop
// lengths on one engine (the block counts are cached across runs).
func TestBudgetExact(t *testing.T) {
	for _, s := range allSnippets {
		e := setup(t, s.arch, s.loop)
		must(t, e.AddSentinel(sentinelAt(s, s.loop[:s.stubOff]), SentinelHalt))
		_, err := e.CountInsns(codeBase, codeBase+0xfff)
		must(t, err)
		start := func(n, budget uint64) (Exit, error) {
			must(t, e.WriteRegs([]Reg{s.res, s.loopCounter(), s.sp()}, []uint64{0, n, stackTop - 0x100}))
			return e.Run(codeBase, budget)
		}
		for _, n := range []uint64{1, 7, 1000} {
			x, err := start(n, 0)
			must(t, err)
			total := x.Count
			if total < 4*n {
				t.Fatalf("%v: %d iterations counted %d instructions", s.arch, n, total)
			}
			if x, err := start(n, total); err != nil || x.Reason != ReasonSentinel {
				t.Errorf("%v n=%d: budget %d (exact) ended %+v, %v", s.arch, n, total, x, err)
			}
			if x, err := start(n, total-1); err == nil || x.Reason != ReasonBudget {
				t.Errorf("%v n=%d: budget %d (one short) ended %+v, %v", s.arch, n, total-1, x, err)
			}
		}
	}
}
