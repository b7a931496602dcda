package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/internal/view"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel"
)

// compareHTML is `trampjit compare --format html`: the columns side by side, section by
// section as the text form aligns them, the summary table, and the frame of each model
// column (reqs are the model columns' requests, the first columns in order).
func compareHTML(w io.Writer, res *compareJSON, reqs []*jit.Request) error {
	side := compareSide(res, "cmp", "side by side")
	tab := view.Table{Caption: "summary (instructions/bytes)", Head: []string{"section"}}
	for _, c := range res.Columns {
		tab.Head = append(tab.Head, c.Title)
	}
	for _, name := range res.Sections {
		r := view.TableRow{Cells: []string{name}}
		for _, c := range res.Columns {
			r.Cells = append(r.Cells, summaryCount(c, name))
		}
		tab.Rows = append(tab.Rows, r)
	}
	total := view.TableRow{Cells: []string{"total"}}
	for _, c := range res.Columns {
		if c.Refusal != "" {
			total.Cells = append(total.Cells, "refused")
		} else {
			total.Cells = append(total.Cells, fmt.Sprintf("%d/%d", len(c.Insns), c.Size))
		}
	}
	tab.Rows = append(tab.Rows, total)
	var titles []string
	for _, c := range res.Columns {
		titles = append(titles, c.Title)
	}
	p := view.Page{Title: "trampjit compare: " + strings.Join(titles, " | "), Sides: []view.SideBySide{side}, Tables: []view.Table{tab}}
	for i, r := range reqs {
		if i >= len(res.Columns) || res.Columns[i].Refusal != "" {
			continue
		}
		im, err := imageView(r, fmt.Sprintf("col%d", i+1))
		if err != nil {
			return err
		}
		im.Heading = fmt.Sprintf("[%d] %s: frame", i+1, res.Columns[i].Title)
		im.NoListing = true
		p.Frames = append(p.Frames, *im)
	}
	if res.Function != "" {
		p.Notes = []string{res.Function}
	}
	return p.Write(w)
}

// compareSide is compare's grid as a side-by-side view.
func compareSide(res *compareJSON, id, heading string) view.SideBySide {
	side := view.SideBySide{ID: id, Heading: heading}
	for _, c := range res.Columns {
		col := view.Column{Title: c.Title, Detail: c.Source, Refusal: c.Refusal}
		if c.Refusal == "" {
			col.Detail += fmt.Sprintf(", %d bytes", c.Size)
		}
		if c.Against != nil {
			col.Detail += fmt.Sprintf("; marked where it differs from [%d] %s", *c.Against+1, res.Columns[*c.Against].Title)
		}
		if c.Note != "" {
			col.Detail += " (" + c.Note + ")"
		}
		side.Columns = append(side.Columns, col)
	}
	for _, g := range res.Grid {
		sec := view.SideSection{Name: g.Name, Changed: g.Differs}
		for i, c := range res.Columns {
			n := "(none)"
			switch {
			case c.Refusal != "":
				n = "(refused)"
			case i < len(g.Counts) && g.Counts[i] != nil:
				n = fmt.Sprintf("%d insns, %d bytes", g.Counts[i].Insns, g.Counts[i].Bytes)
			}
			sec.Counts = append(sec.Counts, n)
		}
		for _, r := range g.Rows {
			row := make([]*view.Cell, len(r.Cells))
			for i, c := range r.Cells {
				if c != nil {
					row[i] = &view.Cell{Offset: c.Offset, Asm: c.Asm, Slots: c.Slots, Differs: c.Differs}
				}
			}
			sec.Rows = append(sec.Rows, row)
		}
		side.Sections = append(side.Sections, sec)
	}
	// Sections without a difference stay open too when nothing is marked: there is
	// nothing else to look at.
	if !anyChanged(side.Sections) {
		for i := range side.Sections {
			side.Sections[i].Changed = true
		}
	}
	return side
}

func anyChanged(secs []view.SideSection) bool {
	for _, s := range secs {
		if s.Changed {
			return true
		}
	}
	return false
}

// insnCell is a diff row's instruction as a page cell.
func insnCell(in *kernel.Insn, differs bool) *view.Cell {
	if in == nil {
		return nil
	}
	return &view.Cell{Offset: in.Offset, Asm: in.Asm, Differs: differs}
}

// comparisonHTML is `trampjit diff DIR_A DIR_B --format html`: each case that does not agree
// (every case with all) as A | B, section by section, and the summary.
func comparisonHTML(w io.Writer, cmp *kernel.Comparison, all bool) error {
	p := view.Page{Title: fmt.Sprintf("trampjit diff: A %s | B %s", cmp.A.Dir, cmp.B.Dir)}
	for _, s := range []struct {
		name string
		side *kernel.CorpusSide
	}{{"A", &cmp.A}, {"B", &cmp.B}} {
		p.Notes = append(p.Notes, fmt.Sprintf("%s: %s  %s, %s, requests of profile %s, %d cases", s.name, s.side.Dir,
			firstNonEmpty(s.side.Release, "(release unknown)"), s.side.Arch, strings.Join(s.side.Profiles, ", "), s.side.Cases))
	}
	tab := view.Table{Caption: "cases", Head: []string{"case", "verdict", "first differing section", "A", "B"}}
	for i := range cmp.Cases {
		d := &cmp.Cases[i]
		row := view.TableRow{Cells: []string{d.ID, d.Verdict.Text(), d.First, sideText(d.A), sideText(d.B)}, Bad: !d.Verdict.Agrees()}
		tab.Rows = append(tab.Rows, row)
		if d.Verdict.Agrees() && !all || len(d.Sections) == 0 {
			continue
		}
		side := view.SideBySide{ID: fmt.Sprintf("case%d", i), Heading: d.ID + ": " + d.Verdict.Text(),
			Columns: []view.Column{{Title: "A", Detail: sideText(d.A)}, {Title: "B", Detail: sideText(d.B)}}}
		if d.FirstA != nil || d.FirstB != nil {
			side.Notes = append(side.Notes, fmt.Sprintf("first difference: A %s, B %s", d.FirstA, d.FirstB))
		}
		if d.Note != "" {
			side.Notes = append(side.Notes, d.Note)
		}
		for _, s := range d.Sections {
			sec := view.SideSection{Name: s.Name, Changed: s.Changed}
			na, nb := 0, 0
			for _, r := range s.Rows {
				sec.Rows = append(sec.Rows, []*view.Cell{insnCell(r.A, r.Differs), insnCell(r.B, r.Differs)})
				if r.A != nil {
					na++
				}
				if r.B != nil {
					nb++
				}
			}
			sec.Counts = []string{fmt.Sprintf("%d insns", na), fmt.Sprintf("%d insns", nb)}
			side.Sections = append(side.Sections, sec)
		}
		p.Sides = append(p.Sides, side)
	}
	p.Tables = append(p.Tables, tab)
	return p.Write(w)
}

func sideText(s *kernel.CaseSide) string {
	switch {
	case s == nil:
		return "(no such case)"
	case s.Refusal != "":
		return "refused: " + s.Refusal
	}
	t := fmt.Sprintf("%d bytes", s.Size)
	if s.Profile != "" {
		t += ", sections of the " + s.Profile + " model"
	}
	return t
}

// diffModelHTML is `trampjit diff --corpus DIR --format html`: every case, the model beside
// the kernel at the first difference, and each image that differs as compare --corpus DIR
// --case ID sets them side by side (the model of prof, or of the case's profile).
func diffModelHTML(w io.Writer, res *diffJSON, model, dir string, cases []kernel.CorpusCase, prof btfmodel.Kernel) error {
	p := view.Page{Title: "trampjit diff: the model against " + res.Corpus, Notes: []string{model,
		fmt.Sprintf("%d/%d byte-identical; %d/%d refusals with the kernel's reason", res.Same, res.Images, res.Agreed, res.Refused-res.Unmod)}}
	tab := view.Table{Caption: "cases", Head: []string{"case", "verdict", "at", "model", "kernel", "note"}}
	for _, d := range res.Cases {
		at := ""
		if d.Model != "" || d.Kernel != "" {
			at = fmt.Sprintf("%#x", d.Offset)
		}
		tab.Rows = append(tab.Rows, view.TableRow{Cells: []string{d.ID, d.Verdict, at, d.Model, d.Kernel, d.Note},
			Bad: d.Verdict != kernel.Match && d.Verdict != kernel.Unmodelled})
	}
	p.Tables = []view.Table{tab}
	for i, d := range res.Cases {
		if d.Verdict != kernel.Differ {
			continue
		}
		for k := range cases {
			if cases[k].ID != d.ID {
				continue
			}
			side, err := modelBesideKernel(dir, &cases[k], prof, fmt.Sprintf("case%d", i))
			if err != nil {
				return fmt.Errorf("case %s: %w", d.ID, err)
			}
			p.Sides = append(p.Sides, *side)
		}
	}
	return p.Write(w)
}

// modelBesideKernel is one case's model image beside the kernel's, aligned and marked as
// compare aligns a model column with a corpus column.
func modelBesideKernel(dir string, c *kernel.CorpusCase, prof btfmodel.Kernel, id string) (*view.SideBySide, error) {
	kcol, _, err := corpusColumn(dir, c.ID)
	if err != nil {
		return nil, err
	}
	req := *c.Request
	if prof != "" {
		req.Kernel = prof
	}
	cols, _, err := modelColumns([]*jit.Request{&req})
	if err != nil {
		return nil, err
	}
	cols = append(cols, *kcol)
	res := compareJSON{Columns: cols, Sections: markColumns(cols)}
	res.Grid = compareGrid(&res)
	side := compareSide(&res, id, c.ID+": differs")
	return &side, nil
}
