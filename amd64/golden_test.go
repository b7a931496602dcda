package amd64

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/jit/jittest"
)

var update = flag.Bool("update", false, "rewrite the golden listings in testdata/golden/amd64")

// TestGolden keeps an annotated listing of every curated case (jittest.Cases) with the
// synthetic layout. Regenerate with `make golden` and review the diff.
func TestGolden(t *testing.T) {
	dir := filepath.Join("..", "testdata", "golden", "amd64")
	cases := jittest.Cases(btfmodel.AMD64)
	if len(cases) < 30 {
		t.Fatalf("only %d curated cases", len(cases))
	}
	_, statErr := os.Stat(dir)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			m, err := c.Req.Model()
			if err != nil {
				t.Fatal(err)
			}
			tr, err := jit.Resolve(&c.Req, m)
			if err != nil {
				t.Fatal(err)
			}
			img, err := Backend{}.Generate(tr)
			if err != nil {
				t.Fatal(err)
			}
			checkImage(t, tr, img)
			var buf bytes.Buffer
			if err := jit.WriteImage(&buf, tr, img, Disassembler{}, jit.Palette{}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, c.Name+".txt")
			if *update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if statErr != nil {
				t.Skipf("no golden listings in %s yet: run make golden", dir)
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run make golden)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s differs from the generated listing; if the change is intended, run make golden and review the diff\n--- got\n%s", path, buf.String())
			}
		})
	}
}
