package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/kernel"
)

// diffJSON is `trampjit diff --corpus DIR --format json`.
type diffJSON struct {
	Corpus  string              `json:"corpus"`
	Profile string              `json:"profile"` // the model's profile: --profile, else the requests'
	Cases   []kernel.DiffResult `json:"cases"`
	Images  int                 `json:"images"`    // cases where the kernel built an image
	Same    int                 `json:"identical"` // of those, byte-identical
	Refused int                 `json:"refused"`   // cases the kernel refused
	Agreed  int                 `json:"refused_same_reason"`
	Unmod   int                 `json:"unmodelled"`
	// Uncaptured cases have no result: the guest died on them (stage "guest").
	Uncaptured int `json:"not_captured"`
}

const diffUsage = `usage: trampjit diff --corpus DIR [--profile P] [--only IDS] [--all] [--format text|json|html]
       trampjit diff DIR_A DIR_B [--profile P] [--only IDS] [--all] [--format text|json|html]

The first form compares a kernel's capture with the model (each request generated with the
profile it names, or with --profile P); the second compares two kernels' captures case by
case: identical, same shape (other addresses), differs (side by side, section by section),
refused by one only.

`

func runDiff(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("diff", stderr)
	var dir, profile, only string
	var all bool
	var out output
	fs.StringVar(&dir, "corpus", "", "kernel corpus directory to compare with the model (testdata/kernel/<kernel>-<arch>)")
	fs.StringVar(&profile, "profile", "", "model profile to generate every request as ("+btfmodel.KernelNames()+"; default: the profile each request names)")
	fs.StringVar(&only, "only", "", "compare only these case ids (comma-separated exact ids and globs)")
	fs.BoolVar(&all, "all", false, "list every case, not only the ones that differ")
	out.register(fs, "text, json or html")
	fs.Usage = func() {
		fmt.Fprint(stderr, diffUsage)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := out.check("text", "json", "html"); err != nil {
		return err
	}
	switch {
	case dir != "" && len(pos) > 0:
		return usageErr("give --corpus DIR, or two corpus directories, not both (%q)", pos[0])
	case dir == "" && len(pos) != 2:
		return usageErr("give --corpus DIR, or two corpus directories (DIR_A DIR_B); got %d", len(pos))
	}
	var prof btfmodel.Kernel
	if profile != "" {
		if prof, err = btfmodel.ParseKernel(profile); err != nil {
			return usageErr("--profile: %v", err)
		}
	}
	sel, err := kernel.ParseOnly(only)
	if err != nil {
		return usageErr("%v", err)
	}
	if out.format == "json" {
		if err := refuseFlags(fs, "with --format json (JSON lists every case)", "all"); err != nil {
			return err
		}
	}
	if dir == "" {
		return diffKernels(pos[0], pos[1], prof, sel, all, &out, stdout)
	}
	return diffModel(dir, prof, sel, all, &out, stdout)
}

// diffModel is `trampjit diff --corpus DIR`: the model against one kernel's capture.
func diffModel(dir string, prof btfmodel.Kernel, sel *kernel.Only, all bool, out *output, stdout io.Writer) error {
	cases, err := kernel.ReadCorpus(dir)
	if err != nil {
		return err
	}
	ids := make([]string, len(cases))
	for i := range cases {
		ids[i] = cases[i].ID
	}
	if err := sel.Unmatched(ids); err != nil {
		return usageErr("%v", err)
	}
	res := diffJSON{Corpus: dir, Profile: string(prof)}
	model := fmt.Sprintf("model: %s (--profile)", prof)
	if prof == "" {
		res.Profile = strings.Join(requestProfiles(cases), ",")
		model = fmt.Sprintf("model: %s (as the corpus's requests say)", strings.Join(requestProfiles(cases), ", "))
	}
	p := palette(out.colorful(stdout))
	if out.format == "text" {
		fmt.Fprintln(stdout, p.dim(model))
	}
	for i := range cases {
		c := &cases[i]
		if !sel.Match(c.ID) {
			continue
		}
		d := kernel.DiffAs(c, prof)
		res.Cases = append(res.Cases, d)
		if d.Verdict == kernel.NotCaptured {
			res.Uncaptured++
		} else if c.Error == "" {
			res.Images++
			if d.Verdict == kernel.Match {
				res.Same++
			}
		} else {
			res.Refused++
			switch d.Verdict {
			case kernel.Match:
				res.Agreed++
			case kernel.Unmodelled:
				res.Unmod++
			}
		}
		if out.format != "text" || (d.Verdict == kernel.Match && !all) {
			continue
		}
		verdict := p.green(d.Verdict)
		if d.Verdict != kernel.Match && d.Verdict != kernel.Unmodelled {
			verdict = p.red(d.Verdict)
		}
		fmt.Fprintf(stdout, "%-55s %s", d.ID, verdict)
		if d.Verdict == kernel.Differ && d.Model != "" {
			fmt.Fprintf(stdout, " at %#x\n    model:  %s\n    kernel: %s", d.Offset, d.Model, d.Kernel)
		}
		if d.Note != "" {
			fmt.Fprintf(stdout, "\n    %s", p.dim(d.Note))
		}
		fmt.Fprintln(stdout)
	}
	switch out.format {
	case "json":
		if err := writeJSON(stdout, res); err != nil {
			return err
		}
	case "html":
		if err := diffModelHTML(stdout, &res, model, dir, cases, prof); err != nil {
			return err
		}
	default:
		fmt.Fprintf(stdout, "%d/%d byte-identical\n", res.Same, res.Images)
		fmt.Fprintf(stdout, "%d/%d refusals with the kernel's reason", res.Agreed, res.Refused-res.Unmod)
		if res.Unmod > 0 {
			fmt.Fprintf(stdout, " (and %d the model cannot predict: functions the kernel cannot patch)", res.Unmod)
		}
		fmt.Fprintln(stdout)
		if res.Uncaptured > 0 {
			fmt.Fprintf(stdout, "%d cases not captured (the guest failed on them): recapture them with --only\n", res.Uncaptured)
		}
	}
	if res.Same != res.Images || res.Agreed != res.Refused-res.Unmod {
		return &exitError{code: exitDisagree, err: errReported}
	}
	if res.Uncaptured > 0 {
		// Nothing disagrees, but not everything was compared: not a pass.
		return &exitError{code: exitFailed, err: errReported}
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// requestProfiles lists the profiles a corpus's requests name, in order of first use.
func requestProfiles(cases []kernel.CorpusCase) []string {
	var out []string
	seen := map[string]bool{}
	for i := range cases {
		if k := string(cases[i].Request.Kernel); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// corpusRelease is info.json's release (uname -r of the captured kernel), or "".
func corpusRelease(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "info.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var info struct {
		Release string `json:"release"`
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(dir, "info.json"), err)
	}
	return info.Release, nil
}

// diffKernels is `trampjit diff DIR_A DIR_B`: kernel against kernel.
func diffKernels(dirA, dirB string, prof btfmodel.Kernel, sel *kernel.Only, all bool, out *output, stdout io.Writer) error {
	var sides [2][]kernel.CorpusCase
	var rels [2]string
	for i, dir := range []string{dirA, dirB} {
		if fi, err := os.Stat(dir); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		} else if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory: give two corpus directories (testdata/kernel/<kernel>-<arch>)", dir)
		}
		cases, err := kernel.ReadCorpus(dir)
		if err != nil {
			return err
		}
		if rels[i], err = corpusRelease(dir); err != nil {
			return err
		}
		sides[i] = cases
	}
	cmp, err := kernel.CompareCorpora(sides[0], sides[1], &kernel.CompareOptions{Only: sel, Profile: prof})
	if err != nil {
		if strings.HasPrefix(err.Error(), "--only") {
			return usageErr("%v", err)
		}
		return fmt.Errorf("A %s, B %s: %v", dirA, dirB, err)
	}
	cmp.A.Dir, cmp.B.Dir = dirA, dirB
	for i, s := range []*kernel.CorpusSide{&cmp.A, &cmp.B} {
		if rels[i] != "" {
			s.Release = rels[i]
		}
	}
	switch out.format {
	case "json":
		if err := writeJSON(stdout, cmp); err != nil {
			return err
		}
	case "html":
		if err := comparisonHTML(stdout, cmp, all); err != nil {
			return err
		}
	default:
		writeComparison(stdout, cmp, all, palette(out.colorful(stdout)))
	}
	if !cmp.Agrees() {
		return &exitError{code: exitDisagree, err: errReported}
	}
	return nil
}

// writeComparison prints a kernel-against-kernel comparison: the two corpora, each case
// that does not agree (every case with all), and the summary.
func writeComparison(w io.Writer, cmp *kernel.Comparison, all bool, p palette) {
	for _, s := range []struct {
		name string
		side *kernel.CorpusSide
	}{{"A", &cmp.A}, {"B", &cmp.B}} {
		fmt.Fprintf(w, "%s: %s  %s, %s, requests of profile %s, %d cases\n", s.name, s.side.Dir,
			firstNonEmpty(s.side.Release, "(release unknown)"), s.side.Arch, strings.Join(s.side.Profiles, ", "), s.side.Cases)
	}
	if cmp.A.Model != "" {
		fmt.Fprintf(w, "sections: the %s model's (--profile)\n", cmp.A.Model)
	} else {
		fmt.Fprintln(w, "sections: each case's model, of the profile its request names")
	}
	for i := range cmp.Cases {
		d := &cmp.Cases[i]
		if d.Verdict.Agrees() && !all {
			continue
		}
		writeCaseDiff(w, d, p)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "A %s (profile %s), B %s (profile %s)\n", firstNonEmpty(cmp.A.Release, cmp.A.Dir), strings.Join(cmp.A.Profiles, ", "),
		firstNonEmpty(cmp.B.Release, cmp.B.Dir), strings.Join(cmp.B.Profiles, ", "))
	var counts []string
	for _, v := range kernel.CaseVerdicts {
		if n := cmp.Summary.Verdicts[v]; n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", v.Text(), n))
		}
	}
	noun := "cases"
	if len(cmp.Cases) == 1 {
		noun = "case"
	}
	fmt.Fprintf(w, "%d %s: %s\n", len(cmp.Cases), noun, strings.Join(counts, ", "))
	if len(cmp.Summary.Sections) > 0 {
		var secs []string
		for _, n := range cmp.ChangedSections() {
			secs = append(secs, fmt.Sprintf("%s %d", n, cmp.Summary.Sections[n]))
		}
		fmt.Fprintf(w, "sections changed (cases): %s\n", strings.Join(secs, ", "))
	}
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// writeCaseDiff prints one case: its verdict, and for images that differ the first
// differing instruction and both listings side by side, section by section.
func writeCaseDiff(w io.Writer, d *kernel.CaseDiff, p palette) {
	verdict := p.green(d.Verdict.Text())
	if !d.Verdict.Agrees() {
		verdict = p.red(d.Verdict.Text())
	}
	fmt.Fprintf(w, "%-55s %s", d.ID, verdict)
	if d.Verdict == kernel.Differs && d.First != "" {
		fmt.Fprintf(w, " in %s", p.cyan(d.First))
	}
	fmt.Fprintln(w)
	switch d.Verdict {
	case kernel.RefusedByA:
		fmt.Fprintf(w, "    A: %s\n", d.A.Refusal)
	case kernel.RefusedByBoth:
		fmt.Fprintf(w, "    A: %s\n", d.A.Refusal)
		if d.B.Refusal != d.A.Refusal {
			fmt.Fprintf(w, "    B: %s\n", d.B.Refusal)
		}
	case kernel.RefusedByB:
		fmt.Fprintf(w, "    B: %s\n", d.B.Refusal)
	case kernel.RefusedDifferently:
		fmt.Fprintf(w, "    A: %s\n    B: %s\n", d.A.Refusal, d.B.Refusal)
	case kernel.OnlyInA:
		if d.A.Refusal != "" {
			fmt.Fprintf(w, "    A: %s\n", d.A.Refusal)
		}
	case kernel.OnlyInB:
		if d.B.Refusal != "" {
			fmt.Fprintf(w, "    B: %s\n", d.B.Refusal)
		}
	case kernel.Differs:
		writeSections(w, d, p)
	}
	if d.Note != "" {
		fmt.Fprintf(w, "    %s\n", p.dim(d.Note))
	}
}

// writeSections prints a differing case's images as two columns (A | B), section by
// section; unchanged sections and unchanged runs inside a section are elided.
func writeSections(w io.Writer, d *kernel.CaseDiff, p palette) {
	fmt.Fprintf(w, "    first difference: A %s\n                      B %s\n", d.FirstA, d.FirstB)
	for _, s := range []*kernel.CaseSide{d.A, d.B} {
		if s.Note != "" {
			fmt.Fprintf(w, "    %s\n", p.dim(s.Note))
		}
	}
	col := func(in *kernel.Insn) string {
		if in == nil {
			return ""
		}
		return fmt.Sprintf("%4x  %s", in.Offset, in.Asm)
	}
	width := 20
	for _, s := range d.Sections {
		for _, r := range s.Rows {
			width = max(width, len(col(r.A)))
		}
	}
	width = min(width, 56)
	var same []string
	sameRows := 0
	flush := func() {
		if sameRows > 0 {
			fmt.Fprintf(w, "      %s\n", p.dim(fmt.Sprintf("... %d identical (%s)", sameRows, strings.Join(same, ", "))))
		}
		same, sameRows = nil, 0
	}
	for _, s := range d.Sections {
		if !s.Changed {
			same = append(same, s.Name)
			sameRows += len(s.Rows)
			continue
		}
		flush()
		fmt.Fprintf(w, "    %s\n", p.cyan("<"+s.Name+">"))
		for i := 0; i < len(s.Rows); {
			r := s.Rows[i]
			if !r.Differs && !nearDiff(s.Rows, i) {
				j := i
				for j < len(s.Rows) && !s.Rows[j].Differs && !nearDiff(s.Rows, j) {
					j++
				}
				fmt.Fprintf(w, "      %s\n", p.dim(fmt.Sprintf("... %d identical", j-i)))
				i = j
				continue
			}
			mark, a, b := " ", col(r.A), col(r.B)
			a += strings.Repeat(" ", max(0, width-len(a)))
			if r.Differs {
				mark, a, b = p.red("*"), p.red(a), p.red(b)
			}
			fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("    %s %s | %s", mark, a, b), " "))
			i++
		}
	}
	flush()
}

// nearDiff reports whether row i is next to a differing row: the context kept around a
// difference.
func nearDiff(rows []kernel.Row, i int) bool {
	return i > 0 && rows[i-1].Differs || i+1 < len(rows) && rows[i+1].Differs
}
