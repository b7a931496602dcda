package amd64

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit/jittest"
)

var update = flag.Bool("update", false, "rewrite the golden listings in testdata/golden/amd64")

// TestGolden keeps an annotated listing of every curated case (jittest.Cases) with the
// synthetic layout. Regenerate with `make golden` and review the diff; the kernel package
// checks these images against the kernel corpus.
func TestGolden(t *testing.T) {
	jittest.CheckGolden(t, btfmodel.AMD64, Backend{}, Disassembler{},
		filepath.Join("..", "testdata", "golden", "amd64"), *update, checkImage)
}
