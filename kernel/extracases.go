package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
)

// ExtraCasesFile, in a corpus directory, lists the cases the corpus holds that are not its
// profile's catalogue's (kernel fuzz's minimised disagreements, merged with --cases FILE
// --merge), one catalogue case per line, so that a capture into the directory without
// --merge, which replaces cases.jsonl, takes them again after the catalogue's. A capture
// into the directory adds to it (or replaces by id) every case it was given that is not the
// catalogue's; struct_ops cases are not listed: a capture takes each table whole, the members
// the catalogue does not list included.
const ExtraCasesFile = "extra-cases.jsonl"

// extraLine is one case of an ExtraCasesFile and the line it is on.
type extraLine struct {
	c    Case
	line int
}

// ReadExtraCases reads dir's ExtraCasesFile: JSON lines of catalogue cases (blank lines and
// lines starting with # or // are skipped). No file is no cases. A line that is not a valid
// case, an id used twice, a struct_ops case or one of the catalogue's ids (the catalogue of
// kernel and arch captures those) is an error naming the file and line.
func ReadExtraCases(dir, kernel, arch string) ([]Case, error) {
	ls, _, err := readExtra(dir, kernel, arch)
	var out []Case
	for _, l := range ls {
		out = append(out, l.c)
	}
	return out, err
}

func readExtra(dir, kernel, arch string) ([]extraLine, []byte, error) {
	path := filepath.Join(dir, ExtraCasesFile)
	data, err := ReadFileLimit(path, "extra cases file", MaxCasesFileSize)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil, nil // no corpus there (CheckOutDir says what is wrong with dir)
	}
	if err != nil {
		return nil, nil, err
	}
	catalogue := map[string]bool{}
	for _, c := range FullCatalog(kernel, arch) {
		catalogue[c.ID] = true
	}
	var out []extraLine
	seen := map[string]int{}
	for n, l := range bytes.Split(data, []byte("\n")) {
		n++
		l = bytes.TrimSpace(l)
		if len(l) == 0 || l[0] == '#' || bytes.HasPrefix(l, []byte("//")) {
			continue
		}
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%s:%d: %s", path, n, fmt.Sprintf(format, a...))
		}
		var c Case
		dec := json.NewDecoder(bytes.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return nil, nil, bad("%v (want one catalogue case per line: trampjit kernel cases)", err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, nil, bad("more than one JSON value on the line")
		}
		if err := validateCases([]Case{c}); err != nil {
			return nil, nil, bad("%s", strings.TrimPrefix(err.Error(), "case 1: "))
		}
		if m, ok := seen[c.ID]; ok {
			return nil, nil, bad("id %s is on line %d too", c.ID, m)
		}
		seen[c.ID] = n
		if c.StructOps != nil {
			return nil, nil, bad("%s is a struct_ops case: a capture takes each table whole, from the catalogue's recipes", c.ID)
		}
		if catalogue[c.ID] {
			return nil, nil, bad("%s is a case of the %s %s catalogue, which captures it: remove the line", c.ID, kernel, arch)
		}
		if len(out) == MaxCases {
			return nil, nil, bad("more than %d cases", MaxCases)
		}
		out = append(out, extraLine{c, n})
	}
	return out, data, nil
}

// CaptureCases is what a capture into dir takes: base (the catalogue, or a --cases file),
// then, unless merge, the cases of dir's ExtraCasesFile whose ids base has not. The file is
// read either way (ReadExtraCases), so a bad one stops the capture before anything boots.
// dir "" is base.
func CaptureCases(dir, kernel, arch string, base []Case, merge bool) ([]Case, error) {
	if dir == "" {
		return base, nil
	}
	extra, err := ReadExtraCases(dir, kernel, arch)
	if err != nil || merge || len(extra) == 0 {
		return base, err
	}
	have := map[string]bool{}
	for _, c := range base {
		have[c.ID] = true
	}
	out := append([]Case(nil), base...)
	for _, c := range extra {
		if !have[c.ID] {
			out = append(out, c)
		}
	}
	return out, nil
}

// extraFile is dir's ExtraCasesFile once cases were captured into it: its lines stay, and
// each case that is neither the catalogue's nor a struct_ops case replaces the line of its
// id or is appended. ok is false when there is nothing to write (no change).
func extraFile(dir, kernel, arch string, cases []Case) (f outFile, ok bool, err error) {
	ls, old, err := readExtra(dir, kernel, arch)
	if err != nil {
		return outFile{}, false, err
	}
	catalogue := map[string]bool{}
	for _, c := range FullCatalog(kernel, arch) {
		catalogue[c.ID] = true
	}
	lines := strings.Split(strings.TrimSuffix(string(old), "\n"), "\n")
	if len(old) == 0 {
		lines = nil
	}
	at := map[string]int{}
	for _, l := range ls {
		at[l.c.ID] = l.line - 1
	}
	for _, c := range cases {
		if catalogue[c.ID] || c.StructOps != nil {
			continue
		}
		b, err := json.Marshal(c)
		if err != nil {
			return outFile{}, false, fmt.Errorf("case %s: %w", c.ID, err)
		}
		if i, ok := at[c.ID]; ok {
			lines[i] = string(b)
			continue
		}
		at[c.ID] = len(lines)
		lines = append(lines, string(b))
	}
	if len(lines) == 0 {
		return outFile{}, false, nil
	}
	data := []byte(strings.Join(lines, "\n") + "\n")
	if bytes.Equal(data, old) {
		return outFile{}, false, nil
	}
	return outFile{ExtraCasesFile, data}, true, nil
}

// CaseOf is the catalogue case that captures a corpus case again, as kernel fuzz's
// minimised-cases.json holds it: id, function (a BPF-program target's tj_argsN) and
// programs; no run, since a fuzz case is not called.
func CaseOf(cc CorpusCase) Case {
	c := Case{ID: cc.ID}
	if r := cc.Request; r != nil {
		c.Func, c.Progs = r.Func, r.Progs
		if r.Target == "bpf" {
			c.Target = "bpf"
			// The prototype toCorpus wrote: "int tj_argsN(...)".
			if i := strings.IndexByte(r.Proto, '('); i > 0 {
				c.Func = strings.TrimPrefix(r.Proto[:i], "int ")
			}
		}
	}
	return c
}

// withExtraFile adds dir's updated ExtraCasesFile to a capture's files when it changed.
func withExtraFile(files []outFile, dir, kernel, arch string, cases []Case) ([]outFile, error) {
	f, ok, err := extraFile(dir, kernel, arch, cases)
	if err != nil || !ok {
		return files, err
	}
	return append(files, f), nil
}
