package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// A campaign's files in its --out directory. results.jsonl grows by one captured batch at a
// time (appended and synced as the batch finishes), so a campaign killed part way keeps
// every batch it finished, and RediffFuzz or a resumed campaign reads them; the other files
// are replaced whole, a temporary file renamed over the old, so none is ever half written.
const (
	fuzzResults       = "results.jsonl"
	fuzzSummary       = "summary.json"
	fuzzMinimised     = "minimised.jsonl"
	fuzzMinimisedCase = "minimised-cases.json"
)

// encodeResults is fcs as results.jsonl lines.
func encodeResults(fcs []FuzzCase) ([]byte, error) {
	var b bytes.Buffer
	for _, fc := range fcs {
		line, err := json.Marshal(fc)
		if err != nil {
			return nil, err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// appendResults adds one batch's results to dir/results.jsonl in one write, synced.
func appendResults(dir string, fcs []FuzzCase) error {
	b, err := encodeResults(fcs)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, fuzzResults), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// rewriteResults replaces dir/results.jsonl with fcs, atomically.
func rewriteResults(dir string, fcs []FuzzCase) error {
	b, err := encodeResults(fcs)
	if err != nil {
		return err
	}
	return writeFileAtomic(dir, fuzzResults, b)
}

// readResults reads dir/results.jsonl. A last line without its newline is a write the
// campaign did not finish (killed in it): it is left out, and whole is the length of the
// lines before it.
func readResults(dir string) (fcs []FuzzCase, whole int64, err error) {
	path := filepath.Join(dir, fuzzResults)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		data = data[:i+1]
	}
	for n, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var fc FuzzCase
		if err := json.Unmarshal(l, &fc); err != nil || fc.Corpus == nil || fc.Corpus.Request == nil {
			return nil, 0, fmt.Errorf("%s:%d: not a fuzz result (%v)", path, n+1, err)
		}
		fcs = append(fcs, fc)
	}
	return fcs, int64(len(data)), nil
}

// writeFileAtomic replaces dir/name with data: a temporary file in dir, synced, renamed over.
func writeFileAtomic(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, "."+name+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// writeSummary replaces dir/summary.json with the report's figures so far.
func (rep *FuzzReport) writeSummary(dir string) error {
	sum, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(dir, fuzzSummary, append(sum, '\n'))
}

// writeFinal writes the files a finished campaign adds to its results: the minimised
// disagreements as corpus lines and as a cases file for `kernel capture --merge`, and the
// summary.
func (rep *FuzzReport) writeFinal(dir string) error {
	var minl bytes.Buffer
	var mc []Case
	for _, d := range rep.Found {
		if d.Corpus != nil {
			b, err := json.Marshal(d.Corpus)
			if err != nil {
				return err
			}
			minl.Write(b)
			minl.WriteByte('\n')
		}
		mc = append(mc, d.Minimised)
	}
	cj, err := json.MarshalIndent(mc, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(dir, fuzzMinimised, minl.Bytes()); err != nil {
		return err
	}
	if err := writeFileAtomic(dir, fuzzMinimisedCase, append(cj, '\n')); err != nil {
		return err
	}
	return rep.writeSummary(dir)
}

// startResults prepares o.OutDir for a campaign of cases: a new campaign starts an empty
// results.jsonl; a resumed one (o.Resume) reads the results there, which must be the first
// of the same draws (the same kernel, arch and seed; no more than o.Count), cuts off a
// write the killed run did not finish, and returns them with the figures its summary kept
// (none when it was killed before its first).
func startResults(o FuzzOptions, cases []Case) ([]FuzzCase, *FuzzReport, error) {
	path := filepath.Join(o.OutDir, fuzzResults)
	if !o.Resume {
		// An earlier campaign's files go: none may stand beside results they do not describe.
		for _, name := range []string{fuzzSummary, fuzzMinimised, fuzzMinimisedCase} {
			if err := os.Remove(filepath.Join(o.OutDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, nil, err
			}
		}
		return nil, nil, os.WriteFile(path, nil, 0o644)
	}
	done, whole, err := readResults(o.OutDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("image fuzz: resume %s: no %s: nothing to resume", o.OutDir, fuzzResults)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("image fuzz: resume: %w", err)
	}
	if len(done) > len(cases) {
		return nil, nil, fmt.Errorf("image fuzz: resume %s: it has %d results, more than --count %d", o.OutDir, len(done), len(cases))
	}
	for i, fc := range done {
		req := fc.Corpus.Request
		a, _ := json.Marshal(fc.Case)
		b, _ := json.Marshal(cases[i])
		if string(req.Kernel) != o.Kernel || string(req.Arch) != o.Arch || !bytes.Equal(a, b) {
			return nil, nil, fmt.Errorf("image fuzz: resume %s: result %d (%s, %s-%s) is not request %d of seed %d on %s-%s: another campaign's directory",
				o.OutDir, i+1, fc.Case.ID, req.Kernel, req.Arch, i, o.Seed, o.Kernel, o.Arch)
		}
		done[i].Corpus.Request.SetDir(o.Corpus)
	}
	if err := os.Truncate(path, whole); err != nil {
		return nil, nil, err
	}
	var old FuzzReport
	if b, err := os.ReadFile(filepath.Join(o.OutDir, fuzzSummary)); err == nil {
		json.Unmarshal(b, &old)
	}
	return done, &old, nil
}
