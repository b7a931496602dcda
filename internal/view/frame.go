// Package view draws what trampjit computes for people to look at: the stack frame of an
// image (text, SVG) and self-contained HTML pages of listings, frames and side-by-side
// comparisons. Nothing here reaches the network: the CSS, SVG and script are inline.
package view

import (
	"fmt"
	"html"
	"sort"
	"strings"

	"github.com/trampjit/trampjit/jit"
)

// Touch is one instruction that writes or reads a slot, resolved through the listing.
type Touch struct {
	Offset  int    `json:"offset"`
	Section string `json:"section"`
	Asm     string `json:"asm"`
}

// SlotView is a frame slot with its writers and readers resolved to instructions.
type SlotView struct {
	Name    string  `json:"name"`
	Off     int     `json:"off"`
	SPOff   int     `json:"sp_off"`
	Size    int     `json:"size"`
	Writers []Touch `json:"writers"`
	Readers []Touch `json:"readers"`
	Note    string  `json:"note,omitempty"`
}

// FrameView is a frame as `trampjit frame` shows it: slots from the highest address down.
type FrameView struct {
	Arch   string     `json:"arch"`
	Kernel string     `json:"kernel"`
	Base   string     `json:"base"`
	Size   int        `json:"size"`
	SPBase int        `json:"sp_base"`
	Slots  []SlotView `json:"slots"`
}

// Resolve pairs f's slots with the instructions of lines that touch them, highest slot
// first. An offset no line covers is kept with the section "?" so that a wrong Writers
// entry shows instead of vanishing.
func Resolve(f *jit.Frame, kernel string, lines []jit.Line) *FrameView {
	fv := &FrameView{Arch: f.Arch, Kernel: kernel, Base: f.Base, Size: f.Size, SPBase: f.SPBase}
	at := func(off int) Touch {
		i := sort.Search(len(lines), func(i int) bool { return lines[i].Offset > off }) - 1
		if i >= 0 && off < lines[i].Offset+len(lines[i].Bytes)/2 {
			return Touch{Offset: off, Section: lines[i].Section, Asm: lines[i].Asm}
		}
		return Touch{Offset: off, Section: "?"}
	}
	for _, s := range f.Slots {
		sv := SlotView{Name: s.Name, Off: s.Off, SPOff: s.SPOff, Size: s.Size, Note: s.Note,
			Writers: []Touch{}, Readers: []Touch{}}
		for _, o := range s.Writers {
			sv.Writers = append(sv.Writers, at(o))
		}
		for _, o := range s.Readers {
			sv.Readers = append(sv.Readers, at(o))
		}
		fv.Slots = append(fv.Slots, sv)
	}
	sort.SliceStable(fv.Slots, func(i, j int) bool { return fv.Slots[i].Off > fv.Slots[j].Off })
	return fv
}

// hexOff prints a signed offset as the listings do: "+0x8", "-0x48", "0".
func hexOff(v int) string {
	switch {
	case v == 0:
		return "0"
	case v < 0:
		return fmt.Sprintf("-%#x", -v)
	}
	return fmt.Sprintf("+%#x", v)
}

func touches(ts []Touch) string {
	var s []string
	for _, t := range ts {
		s = append(s, fmt.Sprintf("%x <%s>", t.Offset, t.Section))
	}
	return strings.Join(s, ", ")
}

// gap is the unused space between slot i-1 and slot i (from the top), in bytes.
func (fv *FrameView) gap(i int) int {
	if i == 0 {
		return 0
	}
	return fv.Slots[i-1].Off - (fv.Slots[i].Off + fv.Slots[i].Size)
}

// Text draws the frame as a stack, high addresses at the top, one box per slot with its
// offsets from the frame base and from sp, its size, and who writes and reads it.
func (fv *FrameView) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: frame base %s, %d bytes below it; sp = %s%s\n", fv.Arch, fv.Kernel, fv.Base, fv.Size, fv.Base, hexOff(-fv.SPBase))
	w := len("saved frame pointer")
	for _, s := range fv.Slots {
		w = max(w, len(s.Name))
	}
	rule := strings.Repeat("─", w+2)
	fmt.Fprintf(&b, "%8s %7s %5s  ┌%s┐\n", fv.Base+"+", "sp+", "size", rule)
	for i, s := range fv.Slots {
		if g := fv.gap(i); g > 0 {
			fmt.Fprintf(&b, "%8s %7s %5d  │ %-*s │\n", "", "", g, w, "(unused)")
		} else if g < 0 {
			fmt.Fprintf(&b, "%8s %7s %5s  │ %-*s │\n", "", "", "", w, fmt.Sprintf("(overlaps by %d)", -g))
		}
		var who []string
		if len(s.Writers) > 0 {
			who = append(who, "written by "+touches(s.Writers))
		}
		if len(s.Readers) > 0 {
			who = append(who, "read by "+touches(s.Readers))
		}
		fmt.Fprintf(&b, "%8s %7s %5d  │ %-*s │  %s\n", hexOff(s.Off), hexOff(s.SPOff), s.Size, w, s.Name, strings.Join(who, "; "))
		if s.Note != "" {
			fmt.Fprintf(&b, "%8s %7s %5s  │ %-*s │  (%s)\n", "", "", "", w, "", s.Note)
		}
	}
	fmt.Fprintf(&b, "%8s %7s %5s  └%s┘ <- sp\n", hexOff(-fv.SPBase), "0", "", rule)
	lines := strings.Split(b.String(), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.Join(lines, "\n")
}

// regOff is a register plus an offset: "rbp-0x8", "sp" for 0.
func regOff(reg string, off int) string {
	if off == 0 {
		return reg
	}
	return reg + hexOff(off)
}

// slotClass is the colour family of a slot, by what it holds.
func slotClass(name string) string {
	switch {
	case strings.HasPrefix(name, "ctx["):
		return "arg"
	case name == jit.SlotRetval:
		return "ret"
	case strings.HasPrefix(name, "run_ctx"):
		return "runctx"
	case strings.HasPrefix(name, "saved ") && name != jit.SlotSavedFP:
		return "saved"
	case strings.HasPrefix(name, "cookie"):
		return "cookie"
	case strings.HasPrefix(name, "stack arg"):
		return "stackarg"
	case name == jit.SlotNrArgs || name == jit.SlotIP || name == "func_meta":
		return "meta"
	}
	return "link"
}

var slotFill = map[string]string{"arg": "#cfe3ff", "ret": "#ffd8b0", "runctx": "#c9f0c9", "saved": "#e6d4f5",
	"cookie": "#fff2a8", "stackarg": "#c8eeea", "meta": "#d4f1fb", "link": "#e4e4e4"}

// SlotKey is the anchor of slot i of the image with anchor prefix id.
func SlotKey(id string, i int) string { return fmt.Sprintf("%s-s%d", id, i) }

// LineKey is the anchor of the instruction at off of the image with anchor prefix id.
func LineKey(id string, off int) string { return fmt.Sprintf("%s-L%x", id, off) }

// SVG draws the frame as an SVG image: one box per slot, high addresses at the top, its
// offsets on the left, its writers and readers on the right. Within a page (standalone
// false) each instruction offset links to the listing's anchors of image id.
func (fv *FrameView) SVG(id string, standalone bool) string {
	return fv.svg(id, !standalone, standalone)
}

// svg draws the frame; links: the offsets link to the listing, header: a standalone
// document (XML declaration and namespace).
func (fv *FrameView) svg(id string, links, header bool) string {
	const (
		left, boxW, rowH, gapH = 150, 260, 26, 14
		textX                  = left + boxW + 12
	)
	e := html.EscapeString
	var body strings.Builder
	y := 40
	maxRight := 0
	for i, s := range fv.Slots {
		if g := fv.gap(i); g > 0 {
			fmt.Fprintf(&body, `<rect x="%d" y="%d" width="%d" height="%d" fill="#fafafa" stroke="#999" stroke-dasharray="4 3"/>`+
				`<text x="%d" y="%d" class="gap">%d bytes unused</text>`+"\n", left, y, boxW, gapH, left+8, y+11, g)
			y += gapH
		}
		h := rowH * max(1, s.Size/8)
		key := SlotKey(id, i)
		fmt.Fprintf(&body, `<g class="slot %s" id="%s" data-slot="%s"><title>%s</title>`, slotClass(s.Name), e(key), e(key), e(s.Name+": "+s.Note))
		fmt.Fprintf(&body, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#445"/>`, left, y, boxW, h, slotFill[slotClass(s.Name)])
		fmt.Fprintf(&body, `<text x="%d" y="%d" class="name">%s</text>`, left+8, y+17, e(s.Name))
		fmt.Fprintf(&body, `<text x="%d" y="%d" class="size">%d</text>`, left+boxW-8, y+17, s.Size)
		fmt.Fprintf(&body, `<text x="%d" y="%d" class="off">%s</text>`, 8, y+17, e(regOff(fv.Base, s.Off)))
		fmt.Fprintf(&body, `<text x="%d" y="%d" class="off">%s</text>`, 82, y+17, e(regOff("sp", s.SPOff)))
		x := textX
		for _, part := range []struct {
			label string
			ts    []Touch
		}{{"w", s.Writers}, {"r", s.Readers}} {
			if len(part.ts) == 0 {
				continue
			}
			fmt.Fprintf(&body, `<text x="%d" y="%d" class="who">%s</text>`, x, y+17, part.label)
			x += 14
			for _, t := range part.ts {
				label := fmt.Sprintf("%x", t.Offset)
				if !links {
					fmt.Fprintf(&body, `<text x="%d" y="%d" class="ref"><title>%s</title>%s</text>`, x, y+17, e(t.Section+": "+t.Asm), e(label))
				} else {
					fmt.Fprintf(&body, `<a href="#%s"><text x="%d" y="%d" class="ref"><title>%s</title>%s</text></a>`, e(LineKey(id, t.Offset)), x, y+17, e(t.Section+": "+t.Asm), e(label))
				}
				x += 8*len(label) + 8
			}
			x += 8
		}
		maxRight = max(maxRight, x)
		body.WriteString("</g>\n")
		y += h
	}
	fmt.Fprintf(&body, `<text x="%d" y="%d" class="off">sp →</text>`, left-40, y+4)
	title := fmt.Sprintf("%s %s: frame base %s, %d bytes below it, sp = %s%s (high addresses at the top)", fv.Arch, fv.Kernel, fv.Base, fv.Size, fv.Base, hexOff(-fv.SPBase))
	width := max(maxRight+10, textX+200, 16+8*len(title))
	height := y + 20
	var b strings.Builder
	ns := ""
	if header {
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
		ns = ` xmlns="http://www.w3.org/2000/svg"`
	}
	fmt.Fprintf(&b, `<svg%s class="frame" width="%d" height="%d" viewBox="0 0 %d %d" font-family="monospace" font-size="12">`+"\n", ns, width, height, width, height)
	b.WriteString(`<style>.name{font-weight:bold}.size{text-anchor:end;fill:#555}.off{fill:#333}.who{fill:#777}.ref{fill:#0645ad}.gap{fill:#888;font-size:10px}.slot.hl rect{stroke:#d00;stroke-width:3}</style>` + "\n")
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`, width, height)
	fmt.Fprintf(&b, `<text x="8" y="20" font-weight="bold">%s</text>`+"\n", e(title))
	b.WriteString(body.String())
	b.WriteString("</svg>\n")
	return b.String()
}
