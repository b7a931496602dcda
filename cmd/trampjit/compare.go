package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel"
)

const compareUsage = `usage: trampjit compare (--btf FILE --func NAME | --proto '...' | --request FILE) --fentry N ...
                        [--arch amd64,arm64,riscv64] [--kernel P,Q] [--corpus DIR --case ID]
       trampjit compare --corpus DIR --case ID [--arch ...] [--kernel ...]
                        [--format text|json|html]

Generates one request for every listed architecture and profile (default: the three
architectures at the request's profile) and sets the listings side by side, section by
section, with each section's instruction and byte counts. Where two columns are one
architecture (two profiles, or the model and a corpus case's kernel image), the instructions
that differ (modulo embedded addresses, aligned as 'trampjit diff DIR_A DIR_B' aligns them)
are marked '*'. A request an architecture refuses gets the kernel's refusal instead. With
--corpus and --case alone, the request is the case's. Each instruction names the frame
slots it writes ('<- ctx[0] a') or reads, as gen's listing does; --format json holds the
columns and the aligned rows ("grid": per section, per row, each column's offset, bytes,
asm, slots and differs mark).

`

// compareInsn is one instruction of a column; Differs marks it as differing from the
// column it is compared with.
type compareInsn struct {
	kernel.Insn
	Slots   []string `json:"slots,omitempty"` // the frame slots it writes ("<- ctx[0] a") or reads
	Differs bool     `json:"differs,omitempty"`
}

// compareSection counts one section of a column.
type compareSection struct {
	Name  string `json:"name"`
	Insns int    `json:"instructions"`
	Bytes int    `json:"bytes"`
}

// compareColumn is one generated (or captured) image of the request.
type compareColumn struct {
	Title  string `json:"title"` // "arm64 6.12", "arm64 6.12 kernel"
	Arch   string `json:"arch"`
	Kernel string `json:"kernel"`
	Source string `json:"source"` // "model", or "corpus DIR case ID"
	// Refusal: the kernel's errno and words for a request this architecture refuses.
	Refusal  string           `json:"refusal,omitempty"`
	Size     int              `json:"size"`
	Against  *int             `json:"compared_with,omitempty"` // index of the column marked against
	Note     string           `json:"note,omitempty"`
	Sections []compareSection `json:"sections"`
	Insns    []compareInsn    `json:"instructions"`
	// Frame is the image's stack frame where the backend describes it (a corpus column's
	// when its image is the model's).
	Frame *jit.Frame `json:"frame,omitempty"`
	// aligned is, per section, the alignment with the Against column (A is that column).
	aligned map[string][]kernel.Row
}

// compareJSON is `trampjit compare --format json`.
type compareJSON struct {
	Function string          `json:"function,omitempty"`
	Columns  []compareColumn `json:"columns"`
	Sections []string        `json:"sections"` // every column's sections, in emission order
	// Grid is the listing side by side: per section, the rows the text output prints.
	Grid []compareGridSection `json:"grid"`
}

func runCompare(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("compare", stderr)
	var rf requestFlags
	var out output
	var corpusDir, caseID string
	rf.register(fs)
	fs.Lookup("arch").Usage = "architectures, comma-separated"
	fs.Lookup("arch").DefValue = "amd64,arm64,riscv64"
	fs.Lookup("kernel").Usage = "kernel profiles, comma-separated: " + btfmodel.KernelNames() + " (default: the request's)"
	fs.StringVar(&corpusDir, "corpus", "", "kernel corpus directory (testdata/kernel/<kernel>-<arch>) with --case: add its captured image")
	fs.StringVar(&caseID, "case", "", "the corpus case to set beside the model")
	out.register(fs, "text, json or html")
	fs.Usage = func() {
		fmt.Fprint(stderr, compareUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := out.check("text", "json", "html"); err != nil {
		return err
	}
	if (corpusDir == "") != (caseID == "") {
		return usageErr("--corpus DIR and --case ID go together")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	arches, err := parseList(rf.arch, set["arch"], btfmodel.ParseArch, "--arch")
	if err != nil {
		return err
	}
	if !set["arch"] {
		arches = []btfmodel.Arch{btfmodel.AMD64, btfmodel.ARM64, btfmodel.RISCV64}
	}
	kernels, err := parseList(rf.kernel, set["kernel"], btfmodel.ParseKernel, "--kernel")
	if err != nil {
		return err
	}
	var req *jit.Request
	if corpusDir != "" && !requestGiven(fs) {
		req, err = caseRequest(corpusDir, caseID)
	} else {
		req, err = compareRequest(&rf, fs, arches[0], kernels)
	}
	if err != nil {
		return err
	}
	if !set["kernel"] {
		kernels = []btfmodel.Kernel{req.Kernel}
	}
	var kcol *compareColumn
	var kaddrs *jit.Addrs
	if corpusDir != "" {
		if kcol, kaddrs, err = corpusColumn(corpusDir, caseID); err != nil {
			return err
		}
	}
	var reqs []*jit.Request
	for _, a := range arches {
		for _, k := range kernels {
			r := *req
			r.Arch, r.Kernel = a, k
			// The model of the captured architecture at the kernel's addresses: an address
			// load of another value can be another length (riscv64 emit_imm, arm64 mov runs).
			if kcol != nil && r.Addrs == nil && string(a) == kcol.Arch {
				r.Addrs = kaddrs
			}
			reqs = append(reqs, &r)
		}
	}
	cols, fn, err := modelColumns(reqs)
	if err != nil {
		return err
	}
	if kcol != nil {
		cols = append(cols, *kcol)
	}
	res := compareJSON{Function: fn, Columns: cols, Sections: markColumns(cols)}
	if kcol != nil {
		kernelSlots(res.Columns, len(res.Columns)-1)
	}
	res.Grid = compareGrid(&res)
	if out.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	if out.format == "html" {
		return compareHTML(stdout, &res, reqs)
	}
	return writeCompare(stdout, &res, palette(out.colorful(stdout)))
}

// parseList parses a comma-separated flag value; given says the flag was set.
func parseList[T any](v string, given bool, parse func(string) (T, error), name string) ([]T, error) {
	var out []T
	for _, s := range strings.Split(v, ",") {
		x, err := parse(strings.TrimSpace(s))
		if err != nil {
			return nil, usageErr("%s: %v", name, err)
		}
		out = append(out, x)
	}
	if given && len(out) == 0 {
		return nil, usageErr("%s: empty list", name)
	}
	return out, nil
}

// compareRequest builds the request as gen does; --arch and --kernel take lists here, so
// they do not conflict with --request (its own arch and profile are replaced by them).
func compareRequest(rf *requestFlags, fs *flag.FlagSet, arch btfmodel.Arch, kernels []btfmodel.Kernel) (*jit.Request, error) {
	if rf.request == "" {
		rf.arch, rf.kernel = string(arch), string(kernels[0])
		return rf.build(fs)
	}
	var conflict []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "request", "format", "color", "arch", "kernel", "corpus", "case":
		default:
			conflict = append(conflict, "--"+f.Name)
		}
	})
	if len(conflict) > 0 {
		return nil, usageErr("--request already says everything but --arch and --kernel; drop %s", strings.Join(conflict, ", "))
	}
	return jit.ReadRequest(rf.request)
}

// modelColumns generates every request. A refusal with the kernel's errno is the column's;
// any other failure (no such function, a bad BTF file) is the command's.
func modelColumns(reqs []*jit.Request) ([]compareColumn, string, error) {
	var cols []compareColumn
	fn := ""
	for _, r := range reqs {
		col := compareColumn{Title: fmt.Sprintf("%s %s", r.Arch, r.Kernel), Arch: string(r.Arch), Kernel: string(r.Kernel), Source: "model"}
		tr, img, err := jit.Generate(r)
		var errno jit.Errno
		switch {
		case errors.As(err, &errno):
			col.Refusal = err.Error()
		case err != nil:
			return nil, "", fmt.Errorf("%s %s: %w", r.Arch, r.Kernel, err)
		default:
			if fn == "" {
				fn = tr.Model.Prototype()
			}
			insns, err := kernel.ImageInsns(r.Arch, img, tr.Symbols())
			if err != nil {
				return nil, "", fmt.Errorf("%s %s: %w", r.Arch, r.Kernel, err)
			}
			col.setInsns(insns, len(img.Code))
			f, err := jit.FrameOf(tr, img)
			if err != nil {
				return nil, "", fmt.Errorf("%s %s: frame: %w", r.Arch, r.Kernel, err)
			}
			col.Frame = f
			col.setSlots(frameSlots(f))
		}
		cols = append(cols, col)
	}
	return cols, fn, nil
}

// corpusColumn is a corpus case's kernel image, its sections named by the model's image of
// the same request (kernel.LabelSections).
func corpusColumn(dir, id string) (*compareColumn, *jit.Addrs, error) {
	cases, err := kernel.ReadCorpus(dir)
	if err != nil {
		return nil, nil, err
	}
	var c *kernel.CorpusCase
	for i := range cases {
		if cases[i].ID == id {
			c = &cases[i]
		}
	}
	if c == nil {
		return nil, nil, usageErr("--case %s: no such case in %s", id, dir)
	}
	col := &compareColumn{Title: fmt.Sprintf("%s %s kernel", c.Request.Arch, c.Request.Kernel), Arch: string(c.Request.Arch),
		Kernel: string(c.Request.Kernel), Source: fmt.Sprintf("corpus %s case %s", dir, id)}
	if !c.Captured() {
		return nil, nil, fmt.Errorf("case %s of %s: the guest failed on it (stage guest): nothing captured", id, dir)
	}
	if col.Refusal = c.Refusal(); col.Refusal != "" {
		return col, c.Request.Addrs, nil
	}
	l, err := kernel.LabelSections(c, "")
	if err != nil {
		return nil, nil, err
	}
	col.Note = l.Note
	col.setInsns(l.Insns, len(c.Image)/2)
	return col, c.Request.Addrs, nil
}

func (c *compareColumn) setInsns(insns []kernel.Insn, size int) {
	c.Size = size
	at := map[string]int{} // a section that recurs (arm64's prologue around nr_args) is counted whole
	for _, in := range insns {
		c.Insns = append(c.Insns, compareInsn{Insn: in})
		k, ok := at[in.Section]
		if !ok {
			k = len(c.Sections)
			at[in.Section] = k
			c.Sections = append(c.Sections, compareSection{Name: in.Section})
		}
		c.Sections[k].Insns++
		c.Sections[k].Bytes += len(in.Bytes) / 2
	}
}

// markColumns compares each column with an earlier one of its architecture that has an
// image (of its profile if there is one, else the first), marking the instructions of both
// that the alignment pairs with nothing equal (the earlier column's only when it is itself
// compared with none, so that each column's marks answer one comparison). It returns the sections of all columns in
// emission order.
func markColumns(cols []compareColumn) []string {
	for j := range cols {
		if cols[j].Refusal != "" {
			continue
		}
		ref := -1
		for i := j - 1; i >= 0; i-- {
			if cols[i].Arch == cols[j].Arch && cols[i].Refusal == "" && (ref < 0 || cols[i].Kernel == cols[j].Kernel || cols[ref].Kernel != cols[j].Kernel) {
				ref = i
			}
		}
		if ref < 0 {
			continue
		}
		cols[j].Against = &ref
		cols[j].aligned = map[string][]kernel.Row{}
		for _, s := range kernel.AlignSections(plain(cols[ref].Insns), plain(cols[j].Insns)) {
			cols[j].aligned[s.Name] = s.Rows
			for _, r := range s.Rows {
				if !r.Differs {
					continue
				}
				// A column compared with another keeps the marks of that comparison.
				if r.A != nil && cols[ref].Against == nil {
					markAt(cols[ref].Insns, r.A.Offset)
				}
				if r.B != nil {
					markAt(cols[j].Insns, r.B.Offset)
				}
			}
		}
	}
	var names []string
	seen := map[string]bool{}
	for _, c := range cols {
		at := 0 // insert a column's new sections after the last known one before them
		for _, s := range c.Sections {
			if k := indexOf(names, s.Name); k >= 0 {
				at = k + 1
				continue
			}
			if !seen[s.Name] {
				seen[s.Name] = true
				names = append(names[:at], append([]string{s.Name}, names[at:]...)...)
				at++
			}
		}
	}
	return names
}

func indexOf(names []string, n string) int {
	for i, s := range names {
		if s == n {
			return i
		}
	}
	return -1
}

func plain(in []compareInsn) []kernel.Insn {
	out := make([]kernel.Insn, len(in))
	for i := range in {
		out[i] = in[i].Insn
	}
	return out
}

func markAt(insns []compareInsn, off int) {
	for i := range insns {
		if insns[i].Offset == off {
			insns[i].Differs = true
		}
	}
}

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
	width := make([]int, len(res.Columns))
	for i, c := range res.Columns {
		width[i] = utf8.RuneCountInString(c.Title)
		for _, in := range c.Insns {
			width[i] = max(width[i], utf8.RuneCountInString(cellText(&in)))
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
	titles := make([]string, len(res.Columns))
	for i, c := range res.Columns {
		titles[i] = c.Title
	}
	fmt.Fprintln(&b)
	row(titles, func(_ int, s string) string { return p.bold(s) })
	for _, g := range res.Grid {
		counts := make([]string, len(res.Columns))
		for i, c := range res.Columns {
			counts[i] = sectionCount(c, g.Name)
		}
		fmt.Fprintln(&b, p.cyan("── "+g.Name))
		row(counts, func(_ int, s string) string { return p.dim(s) })
		for _, r := range g.Rows {
			vals := make([]string, len(res.Columns))
			for i, cell := range r.Cells {
				if cell != nil {
					vals[i] = cellText(&res.Columns[i].Insns[cell.Insn])
				}
			}
			row(vals, func(_ int, s string) string {
				if strings.HasPrefix(s, "*") {
					return p.red(s)
				}
				return s
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

// cellText is an instruction as its column prints it: the mark, offset, asm and slots.
func cellText(in *compareInsn) string {
	mark := " "
	if in.Differs {
		mark = "*"
	}
	s := fmt.Sprintf("%s%4x  %s", mark, in.Offset, in.Asm)
	if len(in.Slots) > 0 {
		s += "  ; " + strings.Join(in.Slots, ", ")
	}
	return s
}

// sectionGrid is sectionRows with each column's cells of the section (cells[col][name], in
// the column's order) in place of instruction indices; "" where a column has none.
func sectionGrid(cols []compareColumn, cells []map[string][]string, name string, _ int) [][]string {
	var out [][]string
	for _, r := range sectionRows(cols, name) {
		vals := make([]string, len(cols))
		for c, i := range r {
			if i < 0 {
				continue
			}
			k := 0 // the instruction's place among its column's in this section
			for j := 0; j < i; j++ {
				if cols[c].Insns[j].Section == name {
					k++
				}
			}
			if k < len(cells[c][name]) {
				vals[c] = cells[c][name][k]
			}
		}
		out = append(out, vals)
	}
	return out
}
