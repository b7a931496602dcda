// Package viewtest checks trampjit's pages the way a person looks at them, in headless
// Chromium: a screenshot that is not blank, and a DOM with the expected sections and slots.
package viewtest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/internal/view"
	"github.com/trampjit/trampjit/internal/view/headless"
	"golang.org/x/net/html"
)

// CheckScreenshot takes a screenshot of the page and fails when it is blank: fewer than 2%
// of the pixels differ from the background, or only a few colours are used.
func CheckScreenshot(t *testing.T, bin, path string) {
	t.Helper()
	img, err := headless.Screenshot(bin, path, 1200, 900)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	ink, colours := headless.Ink(img, 64)
	if total := b.Dx() * b.Dy(); ink*50 < total || colours < 8 {
		t.Errorf("%s renders blank: %d of %d pixels are not background, %d colours", filepath.Base(path), ink, total, colours)
	}
}

// LoadDOM is the page's DOM after Chromium loaded it.
func LoadDOM(t *testing.T, bin, path string) *headless.DOM {
	t.Helper()
	out, err := headless.DumpDOM(bin, path)
	if err != nil {
		t.Fatal(err)
	}
	dom, err := headless.ParseDOM(out)
	if err != nil {
		t.Fatal(err)
	}
	return dom
}

// SectionNames are the names of the page's collapsible sections, in order.
func SectionNames(dom *headless.DOM) []string {
	var out []string
	for _, d := range dom.All("details", func(n *html.Node) bool { return headless.HasClass(n, "section") }) {
		out = append(out, headless.Attr(d, "data-section"))
	}
	return out
}

// CheckSlotLinks checks that every slot of fv is drawn in the SVG and listed, that every
// instruction that touches it links to it, and that the diagram links back to each of them.
func CheckSlotLinks(t *testing.T, dom *headless.DOM, id string, fv *view.FrameView) {
	t.Helper()
	if n := len(dom.All("svg", nil)); n != 1 {
		t.Errorf("%d inline SVG diagrams, want 1", n)
	}
	for i, s := range fv.Slots {
		key := view.SlotKey(id, i)
		g := dom.ByID(key)
		if g == nil || g.Data != "g" || !strings.Contains(headless.Text(g), s.Name) {
			t.Errorf("slot %q: no diagram box %s naming it", s.Name, key)
			continue
		}
		links := dom.All("a", func(n *html.Node) bool { return headless.Attr(n, "href") == "#"+key })
		if len(links) != len(s.Writers)+len(s.Readers) {
			t.Errorf("slot %q: %d listing links to it, want %d (its writers and readers)", s.Name, len(links), len(s.Writers)+len(s.Readers))
		}
		for _, a := range links {
			if headless.Text(a) != s.Name {
				t.Errorf("slot %q linked as %q", s.Name, headless.Text(a))
			}
		}
		for _, w := range append(append([]view.Touch{}, s.Writers...), s.Readers...) {
			row := dom.ByID(view.LineKey(id, w.Offset))
			if row == nil || row.Data != "tr" {
				t.Errorf("slot %q: instruction %x has no listing row", s.Name, w.Offset)
				continue
			}
			back := dom.All("a", func(n *html.Node) bool {
				return headless.Attr(n, "href") == "#"+view.LineKey(id, w.Offset) && isIn(n, g)
			})
			if len(back) == 0 {
				t.Errorf("slot %q: the diagram does not link to instruction %x", s.Name, w.Offset)
			}
		}
	}
}

func isIn(n, anc *html.Node) bool {
	for p := n; p != nil; p = p.Parent {
		if p == anc {
			return true
		}
	}
	return false
}
