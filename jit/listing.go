package jit

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Inst is one decoded instruction, as an architecture's disassembler gives it.
type Inst struct {
	Len  int
	Text string // assembly text, addresses as 0x... hex
}

// Disassembler decodes one instruction at pc; architecture packages implement it with
// golang.org/x/arch.
type Disassembler interface {
	Decode(code []byte, pc uint64) (Inst, error)
}

// Line is one listing row: offset, bytes, disassembly with symbols, and the section.
type Line struct {
	Offset  int    `json:"offset"`
	Bytes   string `json:"bytes"` // hex, in memory order
	Asm     string `json:"asm"`
	Section string `json:"section"`
	Comment string `json:"comment,omitempty"` // relocations: "= prog#1", "-> __bpf_prog_enter_recur"
	// Slots are the frame slots the instruction writes or reads ("ctx[0] sk", "run_ctx.cookie"),
	// from the backend's Frame (AnnotateSlots); the text listing prints them as a comment.
	Slots []string `json:"slots,omitempty"`
}

// Symbols names the addresses a trampoline refers to, for listings.
func (t *Tramp) Symbols() map[uint64]string {
	s := map[uint64]string{}
	add := func(a uint64, name string) {
		if a != 0 {
			if _, dup := s[a]; !dup {
				s[a] = name
			}
		}
	}
	add(t.Image, "image")
	add(t.Func, "func")
	add(t.IM, "im")
	for _, list := range [][]ProgRef{t.Fentry, t.ModRet, t.Fexit} {
		for _, p := range list {
			add(p.Addr, "prog#"+strconv.Itoa(p.Index))
			add(p.BPFFunc, "bpf_func#"+strconv.Itoa(p.Index))
		}
	}
	names := make([]string, 0, len(t.Helpers))
	for n := range t.Helpers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		add(t.Helpers[n], n)
	}
	return s
}

// BuildListing decodes img and annotates each instruction with its section, the symbols of
// the addresses it mentions, and the relocations that start inside it.
func BuildListing(img *Image, dis Disassembler, syms map[uint64]string) ([]Line, error) {
	var lines []Line
	for off := 0; off < len(img.Code); {
		var inst Inst
		var err error
		if end, ok := dataAt(img, off); ok {
			inst = dataWord(img.Code[off:end])
		} else {
			inst, err = dis.Decode(img.Code[off:], img.Base+uint64(off))
		}
		if err != nil || inst.Len <= 0 {
			return lines, fmt.Errorf("offset %#x: cannot decode % x: %v", off, img.Code[off:min(off+8, len(img.Code))], err)
		}
		end := min(off+inst.Len, len(img.Code))
		ln := Line{Offset: off, Bytes: fmt.Sprintf("%x", img.Code[off:end]), Asm: symbolize(inst.Text, img.Base, syms), Section: sectionAt(img, off)}
		var notes []string
		for _, r := range img.Relocs {
			if r.Offset >= off && r.Offset < end {
				notes = append(notes, r.Symbol)
			}
		}
		if len(notes) > 0 && !mentionsAll(ln.Asm, notes) {
			ln.Comment = "= " + strings.Join(notes, ", ")
		}
		lines = append(lines, ln)
		off = end
	}
	return lines, nil
}

func mentionsAll(asm string, names []string) bool {
	for _, n := range names {
		if !strings.Contains(asm, n) {
			return false
		}
	}
	return true
}

// dataAt reports whether off is in a Data section, and the end of the word there.
func dataAt(img *Image, off int) (int, bool) {
	for _, s := range img.Sections {
		if s.Data && off >= s.Start && off < s.End {
			return min(off+4, s.End, len(img.Code)), true
		}
	}
	return 0, false
}

// dataWord prints up to four bytes of data as the little-endian word they hold.
func dataWord(b []byte) Inst {
	var v uint32
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint32(b[i])
	}
	if len(b) == 4 {
		return Inst{Len: 4, Text: fmt.Sprintf(".word 0x%08x", v)}
	}
	return Inst{Len: len(b), Text: fmt.Sprintf(".byte %#x", b)}
}

func sectionAt(img *Image, off int) string {
	name := ""
	for _, s := range img.Sections {
		if off >= s.Start && off < s.End {
			name = s.Name // later (inner) sections win
		}
	}
	return name
}

// symbolize replaces hex numbers in asm that are known addresses (or offsets into the image)
// by their names: "call 0xffffffff81100100" becomes "call __bpf_prog_enter_recur".
func symbolize(asm string, base uint64, syms map[uint64]string) string {
	var b strings.Builder
	for i := 0; i < len(asm); {
		j := strings.Index(asm[i:], "0x")
		if j < 0 {
			b.WriteString(asm[i:])
			break
		}
		j += i
		k := j + 2
		for k < len(asm) && isHex(asm[k]) {
			k++
		}
		b.WriteString(asm[i:j])
		tok := asm[j:k]
		neg := j > 0 && asm[j-1] == '-'
		v, err := strconv.ParseUint(tok[2:], 16, 64)
		if err == nil && neg {
			v = -v
		}
		switch name, ok := syms[v]; {
		case err == nil && ok:
			if neg {
				s := b.String()
				b.Reset()
				b.WriteString(s[:len(s)-1])
			}
			b.WriteString(name)
		case err == nil && !neg && base != 0 && v > base && v < base+1<<16:
			fmt.Fprintf(&b, "image+%#x", v-base)
		case err == nil && !neg && near(syms, v) != "":
			b.WriteString(near(syms, v))
		default:
			b.WriteString(tok)
		}
		i = k
	}
	return b.String()
}

// near names an address just past the traced function's entry ("func+0x9": the original's
// body after the patched call).
func near(syms map[uint64]string, v uint64) string {
	for d := uint64(1); d < 32; d++ {
		if syms[v-d] == "func" {
			return fmt.Sprintf("func+%#x", d)
		}
	}
	return ""
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// Palette colors listing fields on a terminal; the zero value prints plain text.
type Palette struct{ On bool }

func (p Palette) c(code, s string) string {
	if !p.On || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// WriteListing prints lines as an annotated table: offset, bytes, disassembly, section. A
// section name is printed where it starts, so the trampoline's layout reads at a glance.
func WriteListing(w io.Writer, lines []Line, p Palette) error {
	width := 0
	for _, l := range lines {
		width = max(width, len(l.Bytes)+len(l.Bytes)/2)
	}
	prev := "\x00"
	for _, l := range lines {
		bytes := spaced(l.Bytes)
		asm := l.Asm
		if l.Comment != "" {
			asm += "  " + p.c("2", "; "+l.Comment)
		}
		sec := ""
		if l.Section != prev {
			sec = p.c("36", "<"+l.Section+">")
			prev = l.Section
		}
		pad := strings.Repeat(" ", max(0, 44-visibleLen(asm)))
		fill := strings.Repeat(" ", max(0, width-len(bytes)))
		line := fmt.Sprintf("%5x:  %s%s  %s%s %s", l.Offset, p.c("2", bytes), fill, asm, pad, sec)
		if _, err := fmt.Fprintln(w, strings.TrimRight(line, " ")); err != nil {
			return err
		}
	}
	return nil
}

// spaced writes hex bytes two digits at a time: "4889e5" -> "48 89 e5".
func spaced(h string) string {
	var b strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(h[i:min(i+2, len(h))])
	}
	return b.String()
}

func visibleLen(s string) int {
	n, esc := 0, false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == 0x1b:
			esc = true
		case esc && s[i] == 'm':
			esc = false
		case !esc:
			n++
		}
	}
	return n
}

// Describe is the one-line summary a listing starts with.
func Describe(t *Tramp, img *Image) string {
	var progs []string
	for _, l := range [][]ProgRef{t.Fentry, t.ModRet, t.Fexit} {
		for _, p := range l {
			s := string(p.Kind) + "#" + strconv.Itoa(p.Index)
			if p.Sleepable {
				s += " sleepable"
			}
			if p.Cookie != 0 {
				s += fmt.Sprintf(" cookie=%#x", uint64(p.Cookie))
			}
			if p.FuncIP {
				s += " func_ip"
			}
			progs = append(progs, s)
		}
	}
	feat := ""
	if t.Features.IBT {
		feat += " +ibt"
	}
	if t.Features.Rethunk {
		feat += " +rethunk"
	}
	if t.Features.CallDepth {
		feat += " +call_depth"
	}
	if t.Features.CFI != "" {
		feat += fmt.Sprintf(" +%s(%#x)", t.Features.CFI, t.Features.CFIHash)
	}
	what := t.Model.Prototype()
	if t.StructOps != nil {
		what = "struct_ops " + t.StructOps.String() + ", " + what
	}
	return fmt.Sprintf("%s %s%s: %s; progs in emission order: %s; flags %#x (%v); %d bytes at %#x",
		t.Arch, t.Kernel, feat, what, strings.Join(progs, ", "), uint32(img.Flags), img.Flags, len(img.Code), img.Base)
}

// AnnotateSlots names, on each line, the frame slots its instruction writes ("<-") or reads,
// and adds them to its comment.
func AnnotateSlots(lines []Line, f *Frame) {
	if f == nil {
		return
	}
	touch := map[int][]string{}
	for _, s := range f.Slots {
		for _, o := range s.Writers {
			touch[o] = append(touch[o], "<- "+s.Name)
		}
		for _, o := range s.Readers {
			touch[o] = append(touch[o], s.Name)
		}
	}
	for i := range lines {
		names := touch[lines[i].Offset]
		if len(names) == 0 {
			continue
		}
		lines[i].Slots = names
		c := strings.Join(names, ", ")
		if lines[i].Comment != "" {
			c = lines[i].Comment + "; " + c
		}
		lines[i].Comment = c
	}
}

// FrameOf returns img's frame when t's backend describes frames (Framer), else nil.
func FrameOf(t *Tramp, img *Image) (*Frame, error) {
	be, _, err := Lookup(t.Arch)
	if err != nil {
		return nil, err
	}
	f, ok := be.(Framer)
	if !ok {
		return nil, nil
	}
	return f.Frame(t, img)
}

// Listing decodes img and annotates it: sections, symbols, relocations and, where the
// backend describes the frame, the slots each instruction touches.
func Listing(t *Tramp, img *Image, dis Disassembler) ([]Line, error) {
	lines, err := BuildListing(img, dis, t.Symbols())
	if err != nil {
		return lines, err
	}
	f, err := FrameOf(t, img)
	if err != nil {
		return lines, fmt.Errorf("frame: %w", err)
	}
	AnnotateSlots(lines, f)
	if c, ok := backendOf(t).(Commenter); ok {
		AnnotateOperands(lines, c.Comments(t, img))
	}
	return lines, nil
}

// Commenter is implemented by backends that explain operands a listing cannot name from the
// symbols or the frame alone: the traced function's return address as the entry gives it,
// the IP (ip = func + N), the im pointer. Comments are keyed by instruction offset.
type Commenter interface {
	Comments(t *Tramp, img *Image) map[int]string
}

// AnnotateOperands appends each comment to its line's.
func AnnotateOperands(lines []Line, comments map[int]string) {
	for i := range lines {
		if c, ok := comments[lines[i].Offset]; ok && c != "" {
			if lines[i].Comment != "" {
				c = lines[i].Comment + "; " + c
			}
			lines[i].Comment = c
		}
	}
}

func backendOf(t *Tramp) Backend {
	be, _, err := Lookup(t.Arch)
	if err != nil {
		return nil
	}
	return be
}

// WriteImage prints the summary line and the annotated listing of img.
func WriteImage(w io.Writer, t *Tramp, img *Image, dis Disassembler, p Palette) error {
	lines, err := Listing(t, img, dis)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w, p.c("2", "# "+Describe(t, img))); err != nil {
		return err
	}
	return WriteListing(w, lines, p)
}
