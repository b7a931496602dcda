package emu

import (
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit/jittest"
)

// TestGoldenCasesPassOracle runs every curated golden case (testdata/golden/<arch>, the
// synthetic layout) through the oracle, with clobbering stubs: the golden images that have no
// kernel image of the same shape (kernel.TestGoldenAgainstCorpus) are checked here.
func TestGoldenCasesPassOracle(t *testing.T) {
	for _, arch := range btfmodel.Arches {
		for _, c := range jittest.Cases(arch) {
			t.Run(string(arch)+"/"+c.Name, func(t *testing.T) {
				if c.Req.Features.CallDepth {
					t.Skip("call-depth accounting reads per-CPU data through the gs segment, which the harness does not map")
				}
				req := c.Req
				rep, err := Run(&req, Options{Clobber: true})
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range rep.Failed() {
					t.Errorf("%s: %s", f.Name, f.Detail)
				}
			})
		}
	}
}
