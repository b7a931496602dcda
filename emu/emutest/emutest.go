// Package emutest holds the emulator checks that every architecture package runs on its own
// curated cases, so that a mutation of that package's code is caught by that package's tests.
package emutest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/jit/jittest"
)

// ImagesPassOracle runs every curated case's image for arch under Unicorn against the
// emulator's oracle (derived from the request alone): programs called in order with the right
// ctx, fmod_ret short-circuit, return values, callee-saved registers and the stack. It runs
// with clobbering stubs, distinct argument words, and with and without a non-zero fmod_ret
// return.
func ImagesPassOracle(t *testing.T, arch btfmodel.Arch) {
	t.Helper()
	for _, c := range jittest.Cases(arch) {
		if c.Req.Features.CallDepth {
			continue // per-CPU call-depth data through gs: not mapped by the harness
		}
		req := c.Req
		_, m, err := emu.Generate(&req)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		args := make([]uint64, m.NrRegs())
		for i := range args {
			args[i] = 0x1111 * uint64(i+1)
		}
		nmod := 0
		for _, p := range req.Progs {
			if p.Kind == jit.ModRet {
				nmod++
			}
		}
		for _, ret := range []uint64{0, 7} {
			rets := make([]uint64, nmod)
			if nmod > 0 {
				rets[nmod-1] = ret // one program short-circuits; the oracle says what follows
			}
			req := c.Req
			rep, err := emu.Run(&req, emu.Options{Clobber: true, RetValues: rets, Args: args})
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			for _, f := range rep.Failed() {
				t.Errorf("%s (fmod_ret returns %d): %s: %s", c.Name, ret, f.Name, f.Detail)
			}
		}
	}
}

// ProgramSymbolsNumbered checks that listings name the programs by emission number (README:
// "progs in emission order", `mov $prog#1,%rdi`, `call bpf_func#1`): every case's relocations
// name prog#i and bpf_func#i for exactly i = 1..the request's program count.
func ProgramSymbolsNumbered(t *testing.T, arch btfmodel.Arch) {
	t.Helper()
	for _, c := range jittest.Cases(arch) {
		req := c.Req
		img, _, err := emu.Generate(&req)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		got := map[string]bool{}
		for _, r := range img.Relocs {
			if strings.HasPrefix(r.Symbol, "prog#") || strings.HasPrefix(r.Symbol, "bpf_func#") {
				got[r.Symbol] = true
			}
		}
		want := map[string]bool{}
		for i := range req.Progs {
			want[fmt.Sprintf("prog#%d", i+1)] = true
			want[fmt.Sprintf("bpf_func#%d", i+1)] = true
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: symbols %v, want %v", c.Name, got, want)
		}
	}
}
