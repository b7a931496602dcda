package main

import (
	"flag"

	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel"
)

// The aligned view of `trampjit compare`: the rows the text listing prints, as data (JSON's
// "grid", what an HTML page renders), and the frame slots each instruction touches.

// compareCell is one column's instruction on a row of the grid.
type compareCell struct {
	Offset  int      `json:"offset"`
	Bytes   string   `json:"bytes"`
	Asm     string   `json:"asm"`
	Slots   []string `json:"slots,omitempty"`
	Differs bool     `json:"differs,omitempty"`
	Insn    int      `json:"insn"` // index into the column's instructions
}

// compareRow is one line of a section: a cell per column, null where that column has no
// instruction there; Differs when any cell differs from the column it is compared with.
type compareRow struct {
	Cells   []*compareCell `json:"cells"`
	Differs bool           `json:"differs,omitempty"`
}

// compareGridSection is one section of every column: its counts per column (null where the
// column has no such section, or refused) and its rows.
type compareGridSection struct {
	Name    string            `json:"name"`
	Counts  []*compareSection `json:"counts"`
	Differs bool              `json:"differs,omitempty"`
	Rows    []compareRow      `json:"rows"`
}

// sectionRows lays one section out in rows of instruction indices (-1: nothing): a column
// compared with another takes the rows of the instructions it is aligned with, and an
// instruction only it has gets a row of its own after the previous one; any other column
// fills the rows in order.
func sectionRows(cols []compareColumn, name string) [][]int {
	var grid [][]int
	pos := make([][]int, len(cols)) // pos[col][k]: the row of the column's k-th instruction there
	mine := make([][]int, len(cols))
	for c := range cols {
		for i, in := range cols[c].Insns {
			if in.Section == name {
				mine[c] = append(mine[c], i)
			}
		}
	}
	insert := func(at int) {
		row := make([]int, len(cols))
		for i := range row {
			row[i] = -1
		}
		grid = append(grid, nil)
		copy(grid[at+1:], grid[at:])
		grid[at] = row
		for c := range pos {
			for k := range pos[c] {
				if pos[c][k] >= at {
					pos[c][k]++
				}
			}
		}
	}
	for c, col := range cols {
		if col.Against == nil || len(pos[*col.Against]) != len(mine[*col.Against]) {
			for k, i := range mine[c] {
				if k == len(grid) {
					insert(k)
				}
				grid[k][c] = i
				pos[c] = append(pos[c], k)
			}
			continue
		}
		ref := *col.Against
		ka, kb, last := 0, 0, -1
		for _, r := range col.aligned[name] {
			at := last + 1
			if r.A != nil {
				at = pos[ref][ka]
				ka++
			} else {
				insert(at)
			}
			if r.B != nil && kb < len(mine[c]) {
				grid[at][c] = mine[c][kb]
				pos[c] = append(pos[c], at)
				kb++
			}
			last = at
		}
	}
	return grid
}

// compareGrid is every section's rows, in res.Sections' order.
func compareGrid(res *compareJSON) []compareGridSection {
	var out []compareGridSection
	for _, name := range res.Sections {
		g := compareGridSection{Name: name, Counts: make([]*compareSection, len(res.Columns))}
		for c := range res.Columns {
			for i := range res.Columns[c].Sections {
				if s := &res.Columns[c].Sections[i]; s.Name == name {
					g.Counts[c] = s
				}
			}
		}
		for _, r := range sectionRows(res.Columns, name) {
			row := compareRow{Cells: make([]*compareCell, len(r))}
			for c, i := range r {
				if i < 0 {
					continue
				}
				in := &res.Columns[c].Insns[i]
				row.Cells[c] = &compareCell{Offset: in.Offset, Bytes: in.Bytes, Asm: in.Asm, Slots: in.Slots, Differs: in.Differs, Insn: i}
				row.Differs = row.Differs || in.Differs
			}
			g.Differs = g.Differs || row.Differs
			g.Rows = append(g.Rows, row)
		}
		out = append(out, g)
	}
	return out
}

// frameSlots names, by image offset, the frame slots an instruction writes ("<- ctx[0] a")
// or reads, as listings name them (jit.AnnotateSlots); nil for no frame.
func frameSlots(f *jit.Frame) map[int][]string {
	if f == nil {
		return nil
	}
	var lines []jit.Line
	at := map[int]bool{}
	for _, s := range f.Slots {
		for _, o := range append(append([]int{}, s.Writers...), s.Readers...) {
			if !at[o] {
				at[o] = true
				lines = append(lines, jit.Line{Offset: o})
			}
		}
	}
	jit.AnnotateSlots(lines, f)
	out := map[int][]string{}
	for _, l := range lines {
		out[l.Offset] = l.Slots
	}
	return out
}

// setSlots puts the slots on a column's instructions.
func (c *compareColumn) setSlots(slots map[int][]string) {
	for i := range c.Insns {
		c.Insns[i].Slots = slots[c.Insns[i].Offset]
	}
}

// kernelSlots gives a corpus column the slots of the model column of its architecture and
// profile when that image is the kernel's, instruction for instruction (nothing marked, the
// same offsets): the model's frame is then the kernel's.
func kernelSlots(cols []compareColumn, k int) {
	kc := &cols[k]
	if kc.Against == nil || kc.Refusal != "" {
		return
	}
	m := &cols[*kc.Against]
	if m.Kernel != kc.Kernel || len(m.Insns) != len(kc.Insns) {
		return
	}
	for i := range kc.Insns {
		if kc.Insns[i].Differs || kc.Insns[i].Offset != m.Insns[i].Offset || kc.Insns[i].Bytes != m.Insns[i].Bytes {
			return
		}
	}
	for i := range kc.Insns {
		kc.Insns[i].Slots = m.Insns[i].Slots
	}
	kc.Frame = m.Frame
}

// caseRequest is the request of corpus case id in dir, for `compare --corpus DIR --case ID`
// without request flags: the model columns are then that case's request.
func caseRequest(dir, id string) (*jit.Request, error) {
	cases, err := kernel.ReadCorpus(dir)
	if err != nil {
		return nil, err
	}
	for i := range cases {
		if cases[i].ID == id {
			r := *cases[i].Request
			r.SetDir(dir)
			r.Addrs = nil // each column's own: the captured arch's gets the kernel's
			return &r, nil
		}
	}
	return nil, usageErr("--case %s: no such case in %s", id, dir)
}

// requestGiven says whether fs sets the request itself (anything but the lists, the corpus
// case and the output).
func requestGiven(fs *flag.FlagSet) bool {
	given := false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "format", "color", "arch", "kernel", "corpus", "case":
		default:
			given = true
		}
	})
	return given
}
