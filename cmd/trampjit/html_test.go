package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/trampjit/trampjit/internal/view"
	"github.com/trampjit/trampjit/internal/view/headless"
	"github.com/trampjit/trampjit/internal/view/viewtest"
	"github.com/trampjit/trampjit/kernel"
)

// htmlPage runs a command with --format html -o FILE and returns the file; want is the exit
// status it should have (diff exits 3 when it finds differences).
func htmlPage(t *testing.T, want int, args ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), args[0]+".html")
	args = append(args, "--format", "html")
	withO := args[0] == "gen" || args[0] == "frame" // -o: written whole or not at all
	if withO {
		args = append(args, "-o", path)
	}
	code, out, errOut := trampjit(args...)
	if code != want {
		t.Fatalf("%q: exit %d, want %d: %.300s%s", args, code, want, out, errOut)
	}
	if withO && out != "" {
		t.Errorf("%q: wrote to standard output too: %.200s", args, out)
	}
	if !withO {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "<!DOCTYPE html>") {
		t.Fatalf("%q: not an HTML page: %.200s", args, b)
	}
	for _, bad := range []string{"https://", "src=", "<link", "@import"} {
		if strings.Contains(string(b), bad) {
			t.Errorf("%q: the page is not self-contained (%q)", args, bad)
		}
	}
	return path
}

// listingSections are the sections of `gen --format json`'s listing, in order.
func listingSections(t *testing.T, args ...string) []string {
	t.Helper()
	code, out, errOut := trampjit(append(args, "--format", "json")...)
	var g genJSON
	if err := json.Unmarshal([]byte(out), &g); code != 0 || err != nil {
		t.Fatalf("gen json: exit %d, %v: %s", code, err, errOut)
	}
	var secs []string
	for _, l := range g.Listing {
		if len(secs) == 0 || secs[len(secs)-1] != l.Section {
			secs = append(secs, l.Section)
		}
	}
	return secs
}

// frameOf is `trampjit frame --format json` of the request.
func frameOf(t *testing.T, args ...string) *view.FrameView {
	t.Helper()
	code, out, errOut := trampjit(append(append([]string{"frame"}, args[1:]...), "--format", "json")...)
	var fv view.FrameView
	if err := json.Unmarshal([]byte(out), &fv); code != 0 || err != nil {
		t.Fatalf("frame json: exit %d, %v: %s", code, err, errOut)
	}
	return &fv
}

// TestHTMLPagesInChromium loads a page of each kind in headless Chromium: its screenshot
// is not blank, and its DOM has the sections, slots and columns the command's JSON names.
func TestHTMLPagesInChromium(t *testing.T) {
	bin := headless.Chromium(t)
	for _, arch := range []string{"amd64", "arm64", "riscv64"} {
		req := frameArgs(arch, "6.12")[1:]
		t.Run("gen-"+arch, func(t *testing.T) {
			gen := append([]string{"gen"}, req...)
			path := htmlPage(t, 0, gen...)
			viewtest.CheckScreenshot(t, bin, path)
			dom := viewtest.LoadDOM(t, bin, path)
			if got, want := viewtest.SectionNames(dom), listingSections(t, gen...); strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("collapsible sections %q, the listing's %q", got, want)
			}
			viewtest.CheckSlotLinks(t, dom, "img", frameOf(t, gen...))
		})
	}
	t.Run("frame", func(t *testing.T) {
		args := frameArgs("arm64", "7.2")
		path := htmlPage(t, 0, args...)
		viewtest.CheckScreenshot(t, bin, path)
		dom := viewtest.LoadDOM(t, bin, path)
		fv := frameOf(t, args...)
		viewtest.CheckSlotLinks(t, dom, "img", fv)
		rows := dom.All("tr", func(n *html.Node) bool { return headless.HasClass(n, "slotrow") })
		if len(rows) != len(fv.Slots) {
			t.Errorf("%d rows in the slot table, %d slots", len(rows), len(fv.Slots))
		}
		// The frame page puts the diagram before the listing.
		svg, listing := dom.All("svg", nil), dom.All("table", func(n *html.Node) bool { return headless.HasClass(n, "listing") })
		if len(svg) == 0 || len(listing) == 0 || !before(dom, svg[0], listing[0]) {
			t.Error("the frame page does not show the diagram first")
		}
	})
	t.Run("compare", func(t *testing.T) {
		args := []string{"compare", "--btf", modretBTF, "--func", "bpf_modify_return_test", "--fentry", "1", "--fexit", "1",
			"--arch", "amd64,arm64", "--kernel", "6.1,6.12"}
		code, out, _ := trampjit(append(args, "--format", "json")...)
		var res compareJSON
		if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil {
			t.Fatalf("compare json: exit %d, %v", code, err)
		}
		path := htmlPage(t, 0, args...)
		viewtest.CheckScreenshot(t, bin, path)
		dom := viewtest.LoadDOM(t, bin, path)
		var grid []string
		for _, g := range res.Grid {
			grid = append(grid, g.Name)
		}
		if got := viewtest.SectionNames(dom); len(grid) == 0 || strings.Join(got, "|") != strings.Join(grid, "|") {
			t.Errorf("sections %q, compare's %q", got, grid)
		}
		// A frame diagram per column with an image, each with its frame's slots.
		svgs := dom.All("svg", nil)
		var imaged []compareColumn
		for _, c := range res.Columns {
			if c.Refusal == "" {
				imaged = append(imaged, c)
			}
		}
		if len(svgs) != len(imaged) || len(imaged) == len(res.Columns) {
			t.Errorf("%d frame diagrams, %d of %d columns have an image", len(svgs), len(imaged), len(res.Columns))
		}
		for i := range min(len(svgs), len(imaged)) {
			c := imaged[i]
			fv := frameOf(t, "frame", "--btf", modretBTF, "--func", "bpf_modify_return_test", "--fentry", "1", "--fexit", "1",
				"--arch", c.Arch, "--kernel", c.Kernel)
			boxes := 0
			for _, g := range allIn(svgs[i], "g") {
				if headless.HasClass(g, "slot") {
					boxes++
				}
			}
			if boxes != len(fv.Slots) {
				t.Errorf("%s: %d slot boxes, its frame has %d slots", c.Title, boxes, len(fv.Slots))
			}
		}
		slots := dom.All("span", func(n *html.Node) bool { return headless.HasClass(n, "cslot") })
		if want := countSlots(res); len(slots) != want || want == 0 {
			t.Errorf("%d slot names in the cells, compare names %d", len(slots), want)
		}
		marked, differs := 0, 0
		for _, c := range res.Columns {
			for _, in := range c.Insns {
				if in.Differs {
					marked++
				}
			}
		}
		differs = len(dom.All("td", func(n *html.Node) bool { return headless.HasClass(n, "differs") }))
		if marked == 0 || differs != marked {
			t.Errorf("%d cells marked as differing, compare marks %d instructions", differs, marked)
		}
		for _, tab := range dom.All("table", func(n *html.Node) bool { return headless.HasClass(n, "side") }) {
			if th := len(allIn(tab, "th")); th != len(res.Columns) {
				t.Errorf("a section has %d column heads, compare has %d columns", th, len(res.Columns))
			}
		}
	})
	t.Run("diff-kernels", func(t *testing.T) {
		a, b := corpora+"6.12-amd64", corpora+"7.2-amd64"
		args := []string{"diff", a, b, "--only", "bpf_fentry_test1-fentry-fexit,bpf_fentry_test1-fsession"}
		code, out, _ := trampjit(append(args, "--format", "json")...)
		var cmp kernel.Comparison
		if err := json.Unmarshal([]byte(out), &cmp); code != exitDisagree || err != nil {
			t.Fatalf("diff json: exit %d, %v", code, err)
		}
		path := htmlPage(t, exitDisagree, args...)
		viewtest.CheckScreenshot(t, bin, path)
		dom := viewtest.LoadDOM(t, bin, path)
		var want []string
		for _, c := range cmp.Cases {
			for _, s := range c.Sections {
				want = append(want, s.Name)
			}
		}
		if got := viewtest.SectionNames(dom); len(want) == 0 || strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("sections %q, the diff's %q", got, want)
		}
		open := 0
		for _, d := range dom.All("details", nil) {
			for _, a := range d.Attr {
				if a.Key == "open" {
					open++
				}
			}
		}
		if want := len(cmp.Cases[0].Changed); open != want {
			t.Errorf("%d sections open, the diff changed %d (%q)", open, want, cmp.Cases[0].Changed)
		}
		bad := dom.All("tr", func(n *html.Node) bool { return headless.HasClass(n, "bad") })
		if len(bad) != len(cmp.Cases) {
			t.Errorf("%d cases marked as not agreeing, want %d", len(bad), len(cmp.Cases))
		}
	})
	t.Run("diff-corpus", func(t *testing.T) {
		args := []string{"diff", "--corpus", corpora + "6.12-riscv64", "--only", "bpf_fentry_test1-*"}
		code, out, _ := trampjit(append(args, "--format", "json")...)
		var res diffJSON
		if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || len(res.Cases) == 0 {
			t.Fatalf("diff json: exit %d, %v, %d cases", code, err, len(res.Cases))
		}
		path := htmlPage(t, 0, args...)
		viewtest.CheckScreenshot(t, bin, path)
		dom := viewtest.LoadDOM(t, bin, path)
		var ids []string
		for _, tr := range dom.All("tr", nil) {
			if td := allIn(tr, "td"); len(td) > 0 {
				ids = append(ids, headless.Text(td[0]))
			}
		}
		var want []string
		for _, c := range res.Cases {
			want = append(want, c.ID)
		}
		if strings.Join(ids, ",") != strings.Join(want, ",") {
			t.Errorf("case rows %q, want %q", ids, want)
		}

		// A 6.12 capture against the 7.2 model differs: the case is set side by side, marked
		// as compare marks the model beside the corpus case.
		dir, id := corpora+"6.12-amd64", "bpf_fentry_test1-fentry-fexit"
		code, out, _ = trampjit("compare", "--corpus", dir, "--case", id, "--arch", "amd64", "--kernel", "7.2", "--format", "json")
		var cmp compareJSON
		if err := json.Unmarshal([]byte(out), &cmp); code != 0 || err != nil || len(cmp.Columns) != 2 {
			t.Fatalf("compare json: exit %d, %v, %d columns", code, err, len(cmp.Columns))
		}
		marked := 0
		for _, c := range cmp.Columns {
			for _, in := range c.Insns {
				if in.Differs {
					marked++
				}
			}
		}
		path = htmlPage(t, exitDisagree, "diff", "--corpus", dir, "--profile", "7.2", "--only", id)
		dom = viewtest.LoadDOM(t, bin, path)
		sides := dom.All("section", func(n *html.Node) bool { return headless.HasClass(n, "side") })
		differs := dom.All("td", func(n *html.Node) bool { return headless.HasClass(n, "differs") })
		if len(sides) != 1 || marked == 0 || len(differs) != marked {
			t.Errorf("%d side-by-side views (want 1), %d cells marked, compare marks %d", len(sides), len(differs), marked)
		}
	})
}

func allIn(n *html.Node, tag string) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == tag {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

// before reports whether a comes before b in document order.
func before(dom *headless.DOM, a, b *html.Node) bool {
	for _, n := range dom.All("", nil) {
		switch n {
		case a:
			return true
		case b:
			return false
		}
	}
	return false
}

// countSlots counts the slot names compare's grid gives its cells.
func countSlots(res compareJSON) int {
	n := 0
	for _, g := range res.Grid {
		for _, r := range g.Rows {
			for _, c := range r.Cells {
				if c != nil {
					n += len(c.Slots)
				}
			}
		}
	}
	return n
}
