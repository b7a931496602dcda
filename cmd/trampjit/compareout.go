package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// writeCompare prints the columns side by side, section by section, then the summary table.
func writeCompare(w io.Writer, res *compareJSON, p palette) error {
	var b strings.Builder
	if res.Function != "" {
		fmt.Fprintf(&b, "%s\n", p.dim("# "+res.Function))
	}
	for i, c := range res.Columns {
		line := fmt.Sprintf("[%d] %s: %s", i+1, c.Title, c.Source)
		switch {
		case c.Refusal != "":
			line += ": " + p.red("refused: "+c.Refusal)
		default:
			line += fmt.Sprintf(", %d bytes", c.Size)
		}
		if c.Against != nil {
			line += fmt.Sprintf("; '*' differs from [%d]", *c.Against+1)
		}
		if c.Note != "" {
			line += " (" + c.Note + ")"
		}
		fmt.Fprintln(&b, line)
	}
	// Cells: every column's width is its widest instruction or section count.
	cells := make([]map[string][]string, len(res.Columns))
	width := make([]int, len(res.Columns))
	for i, c := range res.Columns {
		cells[i] = map[string][]string{}
		width[i] = utf8.RuneCountInString(c.Title)
		for _, in := range c.Insns {
			mark := " "
			if in.Differs {
				mark = "*"
			}
			s := fmt.Sprintf("%s%4x  %s", mark, in.Offset, in.Asm)
			cells[i][in.Section] = append(cells[i][in.Section], s)
			width[i] = max(width[i], utf8.RuneCountInString(s))
		}
	}
	const sep = "  │ "
	row := func(vals []string, colour func(col int, s string) string) {
		var line strings.Builder
		for i, v := range vals {
			if i > 0 {
				line.WriteString(sep)
			}
			pad := width[i] - utf8.RuneCountInString(v)
			if i == len(vals)-1 {
				pad = 0
			}
			line.WriteString(colour(i, v) + strings.Repeat(" ", max(pad, 0)))
		}
		fmt.Fprintln(&b, strings.TrimRight(line.String(), " "))
	}
	plainCell := func(_ int, s string) string { return s }
	titles := make([]string, len(res.Columns))
	for i, c := range res.Columns {
		titles[i] = c.Title
	}
	fmt.Fprintln(&b)
	row(titles, func(_ int, s string) string { return p.bold(s) })
	for _, name := range res.Sections {
		counts := make([]string, len(res.Columns))
		n := 0
		for i, c := range res.Columns {
			counts[i] = sectionCount(c, name)
			n = max(n, len(cells[i][name]))
		}
		fmt.Fprintln(&b, p.cyan("── "+name))
		row(counts, func(_ int, s string) string { return p.dim(s) })
		for k := 0; k < n; k++ {
			vals := make([]string, len(res.Columns))
			for i := range res.Columns {
				if k < len(cells[i][name]) {
					vals[i] = cells[i][name][k]
				}
			}
			row(vals, func(_ int, s string) string {
				if strings.HasPrefix(s, "*") {
					return p.red(s)
				}
				return plainCell(0, s)
			})
		}
	}
	// The summary: section x column, instructions/bytes.
	fmt.Fprintf(&b, "\n%s\n", p.bold("summary (instructions/bytes)"))
	nameW := len("section")
	for _, n := range res.Sections {
		nameW = max(nameW, utf8.RuneCountInString(n))
	}
	colW := make([]int, len(res.Columns))
	for i, c := range res.Columns {
		colW[i] = max(utf8.RuneCountInString(c.Title), 9)
	}
	line := func(first string, vals []string) {
		var l strings.Builder
		fmt.Fprintf(&l, "%-*s", nameW, first)
		for i, v := range vals {
			fmt.Fprintf(&l, "  %*s", colW[i], v)
		}
		fmt.Fprintln(&b, strings.TrimRight(l.String(), " "))
	}
	line("section", titles)
	for _, name := range res.Sections {
		vals := make([]string, len(res.Columns))
		for i, c := range res.Columns {
			vals[i] = summaryCount(c, name)
		}
		line(name, vals)
	}
	totals := make([]string, len(res.Columns))
	for i, c := range res.Columns {
		totals[i] = "refused"
		if c.Refusal == "" {
			totals[i] = fmt.Sprintf("%d/%d", len(c.Insns), c.Size)
		}
	}
	line("total", totals)
	_, err := io.WriteString(w, b.String())
	return err
}

// sectionCount is a section's counts as its listing header shows them.
func sectionCount(c compareColumn, name string) string {
	if c.Refusal != "" {
		return "(refused)"
	}
	for _, s := range c.Sections {
		if s.Name == name {
			return fmt.Sprintf("%d insns, %d bytes", s.Insns, s.Bytes)
		}
	}
	return "(none)"
}

func summaryCount(c compareColumn, name string) string {
	if c.Refusal != "" {
		return "-"
	}
	for _, s := range c.Sections {
		if s.Name == name {
			return fmt.Sprintf("%d/%d", s.Insns, s.Bytes)
		}
	}
	return "-"
}
