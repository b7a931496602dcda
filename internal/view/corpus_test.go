package view_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/trampjit/trampjit/arm64"
	"github.com/trampjit/trampjit/internal/view"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel"
	_ "github.com/trampjit/trampjit/riscv64"
)

// TestCorpusFrames draws the frame of every image the real kernels built (each corpus case's
// request, on its architecture and profile): every writer and reader the backend names is an
// instruction of the listing, the text has a row per slot, the SVG is well-formed with a box
// per slot, and the page links every touched slot.
func TestCorpusFrames(t *testing.T) {
	dirs, err := filepath.Glob("../../testdata/kernel/*-*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no corpora under testdata/kernel: %v", err)
	}
	images, frames, refused := 0, 0, 0
	for _, dir := range dirs {
		cases, err := kernel.ReadCorpus(dir)
		if err != nil {
			t.Fatal(err)
		}
		for i := range cases {
			c := &cases[i]
			if !c.Captured() || c.Error != "" || c.Request == nil {
				continue
			}
			req := *c.Request
			tr, img, err := jit.Generate(&req)
			if err != nil {
				refused++ // the model's refusals are diff's business
				if refused == 1 {
					t.Logf("%s %s: %v", dir, c.ID, err)
				}
				continue
			}
			images++
			_, dis, _ := jit.Lookup(req.Arch)
			lines, err := jit.Listing(tr, img, dis)
			if err != nil {
				t.Fatalf("%s %s: %v", dir, c.ID, err)
			}
			f, err := jit.FrameOf(tr, img)
			if err != nil {
				t.Errorf("%s %s: frame: %v", dir, c.ID, err)
				continue
			}
			if f == nil {
				continue
			}
			frames++
			fv := view.Resolve(f, string(req.Kernel), lines)
			for _, s := range fv.Slots {
				for _, w := range append(append([]view.Touch{}, s.Writers...), s.Readers...) {
					if w.Section == "?" {
						t.Errorf("%s %s: slot %q touched at %#x, which starts no instruction", dir, c.ID, s.Name, w.Offset)
					}
				}
			}
			txt := fv.Text()
			if rows := strings.Count(txt, "│ "); rows < len(fv.Slots) {
				t.Errorf("%s %s: %d rows for %d slots", dir, c.ID, rows, len(fv.Slots))
			}
			if n := svgBoxes(t, fv.SVG("img", true)); n != len(fv.Slots) {
				t.Errorf("%s %s: %d SVG boxes for %d slots", dir, c.ID, n, len(fv.Slots))
			}
			var b bytes.Buffer
			p := view.Page{Title: c.ID, Images: []view.Image{{ID: "img", Lines: lines, Frame: fv}}}
			if err := p.Write(&b); err != nil {
				t.Fatal(err)
			}
			for k, s := range fv.Slots {
				if len(s.Writers)+len(s.Readers) > 0 && !strings.Contains(b.String(), `href="#`+view.SlotKey("img", k)+`"`) {
					t.Errorf("%s %s: no listing link to slot %q", dir, c.ID, s.Name)
				}
			}
		}
	}
	t.Logf("%d images, %d frames drawn (%d requests the model refuses)", images, frames, refused)
	if frames == 0 {
		t.Fatal("no frame drawn: no backend describes its frame")
	}
}

func svgBoxes(t *testing.T, doc string) int {
	d := xml.NewDecoder(strings.NewReader(doc))
	d.Strict = true
	n := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatalf("SVG not well-formed: %v", err)
		}
		if e, ok := tok.(xml.StartElement); ok && e.Name.Local == "g" {
			for _, a := range e.Attr {
				if a.Name.Local == "class" && strings.HasPrefix(a.Value, "slot ") {
					n++
				}
			}
		}
	}
}
