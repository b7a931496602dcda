package view

import (
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/trampjit/trampjit/jit"
)

// Page is one self-contained HTML page: images (a listing with its frame), side-by-side
// views, tables and frames (images shown by their frame alone), in that order.
type Page struct {
	Title  string
	Notes  []string
	Images []Image
	Sides  []SideBySide
	Tables []Table
	Frames []Image
}

// Image is one generated image: its summary line, its listing and its frame.
type Image struct {
	ID      string // anchor prefix, unique on the page
	Heading string // "amd64 6.12"
	Summary string // jit.Describe
	Lines   []jit.Line
	// Frame is the image's frame; nil when the backend does not describe frames, and
	// FrameMissing then says so.
	Frame        *FrameView
	FrameMissing string
	FrameFirst   bool // the frame page: the diagram before the listing
	// NoListing shows the frame alone (compare's columns, whose listings are side by side):
	// its writers and readers are offsets without links.
	NoListing bool
}

// SideBySide is a set of columns aligned section by section (compare, diff DIR_A DIR_B).
type SideBySide struct {
	ID       string
	Heading  string
	Notes    []string
	Columns  []Column
	Sections []SideSection
}

// Column heads one column of a side-by-side view.
type Column struct {
	Title   string
	Detail  string // source, size, what it is marked against
	Refusal string
}

// SideSection is one section across the columns: its counts per column and the aligned
// rows (a nil cell: the column has no instruction on that row).
type SideSection struct {
	Name    string
	Counts  []string
	Changed bool
	Rows    [][]*Cell
}

// Cell is one instruction of a column; Differs marks it as differing from the column it is
// compared with.
type Cell struct {
	Offset  int
	Asm     string
	Slots   []string // the frame slots it writes ("<- ctx[0] a") or reads
	Differs bool
}

// Table is a captioned table; a row with Bad set is marked as a disagreement.
type Table struct {
	Caption string
	Head    []string
	Rows    []TableRow
}

// TableRow is one row of a Table.
type TableRow struct {
	Cells []string
	Bad   bool
}

// Write renders p as HTML.
func (p *Page) Write(w io.Writer) error {
	var b strings.Builder
	if err := pageTmpl.Execute(&b, p); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// listing views, built for the template.
type lineView struct {
	Key, Off, Bytes, Mnem, Operands, Comment string
	Slots                                    []slotRef
}

type slotRef struct {
	Name, Key string
	Write     bool
}

type sectionView struct {
	Name  string
	Insns int
	Bytes int
	Lines []lineView
}

func (im *Image) Sections() []sectionView {
	index := map[string]int{}
	if im.Frame != nil {
		for i, s := range im.Frame.Slots {
			index[s.Name] = i
		}
	}
	var out []sectionView
	for _, l := range im.Lines {
		if len(out) == 0 || out[len(out)-1].Name != l.Section {
			out = append(out, sectionView{Name: l.Section})
		}
		sv := &out[len(out)-1]
		sv.Insns++
		sv.Bytes += len(l.Bytes) / 2
		mnem, ops, _ := strings.Cut(l.Asm, " ")
		lv := lineView{Key: LineKey(im.ID, l.Offset), Off: fmt.Sprintf("%x", l.Offset), Bytes: spaced(l.Bytes),
			Mnem: mnem, Operands: strings.TrimSpace(ops), Comment: relocComment(l)}
		for _, n := range l.Slots {
			name, write := strings.CutPrefix(n, "<- ")
			ref := slotRef{Name: name, Write: write}
			if i, ok := index[name]; ok {
				ref.Key = SlotKey(im.ID, i)
			}
			lv.Slots = append(lv.Slots, ref)
		}
		sv.Lines = append(sv.Lines, lv)
	}
	return out
}

// BytesW is the width of the bytes column in characters: the longest instruction's.
func (im *Image) BytesW() int {
	w := 2
	for _, l := range im.Lines {
		w = max(w, len(l.Bytes)*3/2)
	}
	return w
}

// relocComment is a line's comment without the slot names AnnotateSlots appended to it.
func relocComment(l jit.Line) string {
	if len(l.Slots) == 0 {
		return l.Comment
	}
	// The comment is "relocation; slots; operand note", any part absent.
	c, j := l.Comment, strings.Join(l.Slots, ", ")
	switch {
	case c == j:
		return ""
	case strings.HasPrefix(c, j+"; "):
		return c[len(j)+2:]
	case strings.Contains(c, "; "+j+"; "):
		return strings.Replace(c, "; "+j+"; ", "; ", 1)
	}
	return strings.TrimSuffix(c, "; "+j)
}

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

// SVG is the frame diagram for the page (escaped as it is built).
func (im *Image) SVG() template.HTML {
	if im.Frame == nil {
		return ""
	}
	return template.HTML(im.Frame.svg(im.ID, !im.NoListing, false))
}

// SlotRows are the frame's slots with their anchors, for the slot table under the diagram.
func (im *Image) SlotRows() []slotRow {
	var out []slotRow
	for i, s := range im.Frame.Slots {
		r := slotRow{SlotView: s, Key: SlotKey(im.ID, i), Off: hexOff(s.Off), SPOff: hexOff(s.SPOff)}
		ref := func(t Touch) touchRef {
			tr := touchRef{Touch: t, Hex: fmt.Sprintf("%x", t.Offset)}
			if !im.NoListing {
				tr.Key = LineKey(im.ID, t.Offset)
			}
			return tr
		}
		for _, t := range s.Writers {
			r.W = append(r.W, ref(t))
		}
		for _, t := range s.Readers {
			r.R = append(r.R, ref(t))
		}
		out = append(out, r)
	}
	return out
}

type slotRow struct {
	SlotView
	Key, Off, SPOff string
	W, R            []touchRef
}

type touchRef struct {
	Touch
	Key, Hex string
}

// Hex prints a cell's offset.
func (c *Cell) Hex() string { return fmt.Sprintf("%x", c.Offset) }

var pageTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:1.5em;color:#111;background:#fff}
h1{font-size:1.3em} h2{font-size:1.1em;margin-top:1.6em;border-bottom:1px solid #ccc}
.summary,.note{font-family:monospace;color:#444;white-space:pre-wrap}
details{margin:.3em 0;border-left:3px solid #6aa9c9;padding-left:.5em}
summary{cursor:pointer;font-family:monospace;color:#06779c;font-weight:bold}
summary .counts{color:#777;font-weight:normal}
table{border-collapse:collapse;font-family:monospace;font-size:13px}
td,th{padding:1px 8px;vertical-align:top;text-align:left}
th{background:#eef3f6}
.listing{table-layout:fixed}
.listing td.asm{width:44ch;overflow-wrap:anywhere}
.listing td.cmt{width:60ch}
.listing td.off{color:#888;text-align:right;width:4ch}
.listing td.bytes{color:#999;overflow:hidden}
.mnem{color:#8b008b;font-weight:bold}
.ops{color:#111}
.cmt{color:#2a7a2a}
a.slot{color:#b35900;text-decoration:none;border-bottom:1px dotted #b35900;margin-right:.5em}
a.slot.w::before{content:"\2190 ";color:#c00}
.missing{color:#a00;font-weight:bold}
tr:target,tr.hl,td.hl{background:#fff3b0}
table.side{table-layout:fixed;width:100%}
.side td{border-left:1px solid #ddd;overflow-wrap:anywhere}
.side td.differs{background:#ffe0e0;color:#900}
.refused{color:#a00}
.cslot{color:#b35900;font-size:11px}
tr.bad td{color:#900}
svg .slot.hl rect{stroke:#d00;stroke-width:3}
</style></head>
<body>
<h1>{{.Title}}</h1>
{{range .Notes}}<p class="note">{{.}}</p>
{{end}}
{{range .Images}}{{template "image" .}}{{end}}
{{range .Sides}}{{template "side" .}}{{end}}
{{range .Tables}}{{template "table" .}}{{end}}
{{range .Frames}}{{template "image" .}}{{end}}
<script>
(function(){
  function clear(){document.querySelectorAll('.hl').forEach(function(x){x.classList.remove('hl')})}
  function mark(k){clear();document.querySelectorAll('[data-slot="'+k+'"]').forEach(function(x){x.classList.add('hl')})}
  document.addEventListener('mouseover',function(e){var t=e.target.closest&&e.target.closest('[data-slot]');if(t)mark(t.getAttribute('data-slot'))});
  function openTo(){var id=decodeURIComponent(location.hash.slice(1));var t=id&&document.getElementById(id);
    for(var p=t;p;p=p.parentElement){if(p.tagName==='DETAILS')p.open=true}
    if(t&&t.getAttribute('data-slot'))mark(t.getAttribute('data-slot'))}
  window.addEventListener('hashchange',openTo);openTo();
})();
</script>
</body></html>
{{define "image"}}<section class="image" id="{{.ID}}">
<h2>{{.Heading}}</h2>
<p class="summary">{{.Summary}}</p>
{{if .NoListing}}{{template "frame" .}}{{else if .FrameFirst}}{{template "frame" .}}{{template "listing" .}}{{else}}{{template "listing" .}}{{template "frame" .}}{{end}}
</section>
{{end}}
{{define "listing"}}<h3>listing</h3>
{{range .Sections}}<details open class="section" data-section="{{.Name}}"><summary>&lt;{{.Name}}&gt; <span class="counts">{{.Insns}} insns, {{.Bytes}} bytes</span></summary>
<table class="listing">
{{range .Lines}}<tr id="{{.Key}}"><td class="off">{{.Off}}</td><td class="bytes" style="width:{{$.BytesW}}ch">{{.Bytes}}</td><td class="asm"><span class="mnem">{{.Mnem}}</span> <span class="ops">{{.Operands}}</span></td><td class="cmt">{{if .Comment}}; {{.Comment}} {{end}}{{range .Slots}}{{if .Key}}<a class="slot{{if .Write}} w{{end}}" href="#{{.Key}}" data-slot="{{.Key}}">{{.Name}}</a>{{else}}<span class="slot">{{.Name}}</span>{{end}}{{end}}</td></tr>
{{end}}</table></details>
{{end}}{{end}}
{{define "frame"}}<h3>frame</h3>
{{if .Frame}}<div class="diagram">{{.SVG}}</div>
<table class="slots"><tr><th>slot</th><th>{{.Frame.Base}}+</th><th>sp+</th><th>size</th><th>written by</th><th>read by</th><th>note</th></tr>
{{range .SlotRows}}<tr id="{{.Key}}-row" data-slot="{{.Key}}" class="slotrow"><td>{{.Name}}</td><td>{{.Off}}</td><td>{{.SPOff}}</td><td>{{.Size}}</td>
<td>{{range .W}}{{template "touch" .}}{{end}}</td>
<td>{{range .R}}{{template "touch" .}}{{end}}</td><td>{{.Note}}</td></tr>
{{end}}</table>
{{else}}<p class="missing">{{.FrameMissing}}</p>{{end}}
{{end}}
{{define "touch"}}{{if .Key}}<a href="#{{.Key}}" title="{{.Asm}}">{{.Hex}}</a>{{else}}<span title="{{.Asm}}">{{.Hex}}</span>{{end}} &lt;{{.Section}}&gt; {{end}}
{{define "side"}}<section class="side" id="{{.ID}}">
<h2>{{.Heading}}</h2>
{{range .Notes}}<p class="note">{{.}}</p>{{end}}
<ol class="columns">{{range .Columns}}<li><b>{{.Title}}</b>: {{.Detail}}{{if .Refusal}} <span class="refused">refused: {{.Refusal}}</span>{{end}}</li>{{end}}</ol>
{{$cols := .Columns}}
{{range .Sections}}<details {{if .Changed}}open {{end}}class="section" data-section="{{.Name}}"><summary>&lt;{{.Name}}&gt;{{if .Changed}} <span class="counts">differs</span>{{end}}</summary>
<table class="side"><tr>{{range $cols}}<th>{{.Title}}</th>{{end}}</tr>
<tr>{{range .Counts}}<td class="counts">{{.}}</td>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}{{if .}}<td class="insn{{if .Differs}} differs{{end}}">{{if .Differs}}* {{end}}{{.Hex}}  {{.Asm}}{{range .Slots}} <span class="cslot">{{.}}</span>{{end}}</td>{{else}}<td></td>{{end}}{{end}}</tr>
{{end}}</table></details>
{{end}}</section>
{{end}}
{{define "table"}}<h2>{{.Caption}}</h2>
<table class="summary-table"><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr{{if .Bad}} class="bad"{{end}}>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{end}}`))
