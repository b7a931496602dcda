package emu_test

import (
	"fmt"
	"testing"

	"github.com/trampjit/trampjit/emu"
)

// TestNativeCostRuns: the three phases of a cost run (plain call, stubs' replay,
// trampoline) all complete, the image passes the checked run first, and the figures are
// ordered as they must be whatever the machine: a trampoline with four programs is not
// cheaper than the plain call.
func TestNativeCostRuns(t *testing.T) {
	needNative(t)
	r, err := emu.CostRequest("fentry+fexit", 4)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := emu.Run(r, emu.Options{Engine: emu.EngineNative, Count: 100}); err != nil || !rep.OK {
		t.Fatalf("checked run: %v%s", err, failures(rep))
	}
	c, err := emu.NativeCost(r, 2000, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Samples) != 5 || c.PlainCyc <= 0 || c.TrampCyc <= c.PlainCyc || c.StubsCyc <= c.PlainCyc {
		t.Errorf("%+v", c)
	}
	t.Log(fmt.Sprintf("plain %.1f stubs %.1f tramp %.1f cycles/hit", c.PlainCyc, c.StubsCyc, c.TrampCyc))
}
