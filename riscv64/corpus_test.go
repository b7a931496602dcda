package riscv64_test

import (
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/jit/jittest"
	"github.com/trampjit/trampjit/riscv64"
)

// TestCuratedPassOracle runs every curated request under Unicorn against the emulator's
// oracle (derived from the request alone, emu/oracle.go): programs run in order with the
// arguments as the caller passed them (stack slots included), fmod_ret short-circuits, the
// return value and the callee-saved registers survive, fsession programs run on entry and
// on return.
func TestCuratedPassOracle(t *testing.T) {
	cases := append(jittest.Cases(btfmodel.RISCV64), riscv64.Cases72()...)
	for _, c := range cases {
		req := c.Req
		m, err := req.Model()
		if err != nil {
			t.Fatal(err)
		}
		args := make([]uint64, m.NrRegs())
		for i := range args {
			args[i] = 0x0101010101010101 * uint64(i+1) // every byte set
		}
		rep, err := emu.Run(&req, emu.Options{Clobber: true, Args: args})
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		for _, f := range rep.Failed() {
			t.Errorf("%s: %s: %s", c.Name, f.Name, f.Detail)
		}
		if len(rep.Checks) < 4 {
			t.Errorf("%s: only %d checks ran", c.Name, len(rep.Checks))
		}
	}
}
