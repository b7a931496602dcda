package view_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/trampjit/trampjit/amd64"
	. "github.com/trampjit/trampjit/internal/view"
	"github.com/trampjit/trampjit/internal/view/headless"
	"github.com/trampjit/trampjit/internal/view/viewtest"
	"github.com/trampjit/trampjit/jit"
	"golang.org/x/net/html"
)

// listing is a real amd64 image's listing (fentry + fexit on a two-argument prototype),
// and a frame whose slots point at some of its instructions: the renderer is under test
// here, not the backend's frame.
func listing(t *testing.T) (*jit.Tramp, *jit.Image, []jit.Line, *jit.Frame) {
	t.Helper()
	req := &jit.Request{Arch: "amd64", Kernel: "6.12", Proto: "int f(struct sock *sk, long len)",
		Progs: []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit}}}
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	tr, img, err := jit.Generate(req)
	if err != nil {
		t.Fatal(err)
	}
	_, dis, err := jit.Lookup(req.Arch)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := jit.BuildListing(img, dis, tr.Symbols())
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) < 12 {
		t.Fatalf("%d lines", len(lines))
	}
	f := &jit.Frame{Arch: "amd64", Base: "rbp", Size: 0x38, SPBase: 0x38, Slots: []jit.Slot{
		{Name: "ctx[0] sk", Off: -0x18, SPOff: 0x20, Size: 8, Writers: []int{lines[4].Offset}, Readers: []int{lines[9].Offset}},
		{Name: jit.SlotRetAddr, Off: 8, SPOff: 0x40, Size: 8},
		{Name: jit.SlotRetval, Off: -8, SPOff: 0x30, Size: 8, Writers: []int{lines[10].Offset}, Note: "<b>not</b> markup"},
		{Name: jit.SlotRunCtxCook, Off: -0x38, SPOff: 0, Size: 8, Readers: []int{lines[6].Offset, lines[11].Offset}},
	}}
	jit.AnnotateSlots(lines, f)
	return tr, img, lines, f
}

func TestFrameText(t *testing.T) {
	_, _, lines, f := listing(t)
	fv := Resolve(f, "6.12", lines)
	txt := fv.Text()
	var order []string
	for _, s := range fv.Slots {
		order = append(order, s.Name)
	}
	if want := "return address,retval,ctx[0] sk,run_ctx.cookie"; strings.Join(order, ",") != want {
		t.Errorf("slots from the top: %s, want %s", strings.Join(order, ","), want)
	}
	for _, want := range []string{
		"frame base rbp, 56 bytes below it; sp = rbp-0x38",
		"(unused)", // 0x0..-0x8 is the saved rbp: no slot in this frame, so a gap
		fmt.Sprintf("written by %x <%s>; read by %x <%s>", lines[4].Offset, lines[4].Section, lines[9].Offset, lines[9].Section),
		"(<b>not</b> markup)",
		"<- sp",
	} {
		if !strings.Contains(txt, want) {
			t.Errorf("frame text lacks %q:\n%s", want, txt)
		}
	}
	if i, j := strings.Index(txt, "return address"), strings.Index(txt, "run_ctx.cookie"); i < 0 || j < i {
		t.Errorf("high addresses are not at the top:\n%s", txt)
	}
	// An offset no instruction covers is shown, not dropped.
	f.Slots[0].Writers = append(f.Slots[0].Writers, 1<<20)
	if fv := Resolve(f, "6.12", lines); fv.Slots[2].Writers[1].Section != "?" {
		t.Errorf("an offset past the image resolved to %+v", fv.Slots[2].Writers[1])
	}
}

func TestSVGEscapes(t *testing.T) {
	_, _, lines, f := listing(t)
	svg := Resolve(f, "6.12", lines).SVG("img", true)
	if strings.Contains(svg, "<b>") || !strings.Contains(svg, "&lt;b&gt;not&lt;/b&gt;") {
		t.Errorf("the note is not escaped in the SVG")
	}
	if !strings.HasPrefix(svg, "<?xml") || !strings.Contains(svg, `xmlns="http://www.w3.org/2000/svg"`) {
		t.Errorf("standalone SVG lacks the XML declaration or namespace")
	}
}

// page writes the test page into a temporary file.
func page(t *testing.T) (string, []jit.Line, *FrameView) {
	tr, img, lines, f := listing(t)
	fv := Resolve(f, "6.12", lines)
	p := Page{Title: "test <page> & \"quotes\"", Notes: []string{"<script>alert(1)</script>"},
		Images: []Image{{ID: "img", Heading: "amd64 6.12", Summary: jit.Describe(tr, img), Lines: lines, Frame: fv}}}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script>alert") {
		t.Fatal("a note is not escaped")
	}
	for _, bad := range []string{"http://", "https://", "src="} {
		if i := strings.Index(strings.ReplaceAll(b.String(), `xmlns="http://www.w3.org/2000/svg"`, ""), bad); i >= 0 {
			t.Errorf("the page refers outside itself (%q)", bad)
		}
	}
	path := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, lines, fv
}

func TestPageInChromium(t *testing.T) {
	bin := headless.Chromium(t)
	path, lines, fv := page(t)
	viewtest.CheckScreenshot(t, bin, path)
	dom := viewtest.LoadDOM(t, bin, path)
	if got := headless.Text(dom.All("title", nil)[0]); got != `test <page> & "quotes"` {
		t.Errorf("title %q", got)
	}
	var want []string
	for _, l := range lines {
		if len(want) == 0 || want[len(want)-1] != l.Section {
			want = append(want, l.Section)
		}
	}
	if got := viewtest.SectionNames(dom); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("collapsible sections %q, want %q", got, want)
	}
	viewtest.CheckSlotLinks(t, dom, "img", fv)
}

// TestBlankPageIsBlank makes sure the screenshot check can fail: an empty page has no ink.
func TestBlankPageIsBlank(t *testing.T) {
	bin := headless.Chromium(t)
	path := filepath.Join(t.TempDir(), "blank.html")
	if err := os.WriteFile(path, []byte("<!DOCTYPE html><html><body></body></html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := headless.Screenshot(bin, path, 400, 300)
	if err != nil {
		t.Fatal(err)
	}
	if ink, colours := headless.Ink(img, 64); ink != 0 || colours != 1 {
		t.Errorf("a blank page: %d pixels of ink, %d colours; want 0 and 1", ink, colours)
	}
}

// TestSlotHighlight follows a link to a slot as a click would (the page opened at its
// anchor): the script marks the slot's box, its table row and every listing link to it.
func TestSlotHighlight(t *testing.T) {
	bin := headless.Chromium(t)
	path, _, fv := page(t)
	for i, s := range fv.Slots {
		if len(s.Writers)+len(s.Readers) == 0 {
			continue
		}
		key := SlotKey("img", i)
		dom := viewtest.LoadDOM(t, bin, path+"#"+key)
		var lit []string
		for _, n := range dom.All("", func(n *html.Node) bool { return headless.HasClass(n, "hl") }) {
			if headless.Attr(n, "data-slot") != key {
				t.Errorf("%s highlighted with slot %s", headless.Attr(n, "data-slot"), key)
			}
			lit = append(lit, n.Data)
		}
		if want := 2 + len(s.Writers) + len(s.Readers); len(lit) != want {
			t.Errorf("slot %q: %d elements highlighted (%q), want %d: its box, its row and each instruction's link", s.Name, len(lit), lit, want)
		}
		return
	}
	t.Fatal("no slot is touched")
}
