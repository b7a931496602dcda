package arm64_test

import (
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/emu/emutest"
	"github.com/trampjit/trampjit/jit"
)

// Every curated case's image passes the emulator's oracle (emutest.ImagesPassOracle).
func TestImagesPassOracle(t *testing.T) { emutest.ImagesPassOracle(t, btfmodel.ARM64) }

// Relocations number the programs 1..n in emission order (emutest.ProgramSymbolsNumbered).
func TestProgramSymbolsNumbered(t *testing.T) { emutest.ProgramSymbolsNumbered(t, btfmodel.ARM64) }

// A request whose addresses lack a helper the trampoline calls is refused naming the
// helper, for the enter and for the exit helper alike, never built with a zero address.
func TestMissingHelperNamed(t *testing.T) {
	for _, missing := range []string{"__bpf_prog_enter_recur", "__bpf_prog_exit_recur"} {
		req := jit.Request{Arch: btfmodel.ARM64, Kernel: btfmodel.Kernel612, Proto: "int f(int a)", Progs: []jit.Prog{{Kind: jit.Fentry}}}
		a := *emu.Addrs(&req)
		a.Helpers = map[string]jit.Addr{}
		for k, v := range emu.Addrs(&req).Helpers {
			if k != missing {
				a.Helpers[k] = v
			}
		}
		req.Addrs = &a
		_, _, err := emu.Generate(&req)
		if err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("without %s: %v", missing, err)
		}
	}
}
