package jittest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// CheckGolden generates every curated case of arch with be and compares its annotated listing
// with testdata/golden/<arch>/<case>.txt (dir is that folder), or rewrites the files when
// update is set; check, if not nil, runs the package's own invariants on each image. Both
// architecture packages call it from their TestGolden.
func CheckGolden(t *testing.T, arch btfmodel.Arch, be jit.Backend, dis jit.Disassembler, dir string, update bool,
	check func(*testing.T, *jit.Tramp, *jit.Image)) {
	cases := Cases(arch)
	if len(cases) < 30 {
		t.Fatalf("only %d curated cases", len(cases))
	}
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
			img, err := be.Generate(tr)
			if err != nil {
				t.Fatal(err)
			}
			if check != nil {
				check(t, tr, img)
			}
			var buf bytes.Buffer
			if err := jit.WriteImage(&buf, tr, img, dis, jit.Palette{}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, c.Name+".txt")
			if update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
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
