package riscv64

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit/jittest"
)

var update = flag.Bool("update", false, "rewrite the golden listings in testdata/golden*")

// TestGolden keeps an annotated listing of every curated case (jittest.Cases) with the
// synthetic layout. Regenerate with -update and review the diff; TestGoldenShapesCaptured
// checks each curated case that has a captured counterpart against the kernel's bytes.
func TestGolden(t *testing.T) {
	jittest.CheckGolden(t, btfmodel.RISCV64, Backend{}, Disassembler{},
		filepath.Join("testdata", "golden"), *update, nil)
}
