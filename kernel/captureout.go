package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ulikunitz/xz"

	"github.com/trampjit/trampjit/kernel/wire"
)

// An interrupted capture never touches OutDir. The cases that completed before the
// interrupt are kept in OutDir + PartialSuffix (replaced whole, like OutDir), with a
// PartialNote file saying it is incomplete and naming the missing cases; when none
// completed, nothing is kept. Cases cut by the interrupt are missing, never refusals.
const (
	PartialSuffix = ".partial"
	PartialNote   = "INCOMPLETE"
)

// corpusFiles renders a report as a corpus directory's files.
func corpusFiles(rep *CaptureReport) ([]outFile, error) {
	var cases bytes.Buffer
	for _, c := range rep.Cases {
		b, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.ID, err)
		}
		cases.Write(append(b, '\n'))
	}
	files := []outFile{{"cases.jsonl", cases.Bytes()}}
	if rep.BTF != nil {
		b, err := xzBytes(rep.BTF)
		if err != nil {
			return nil, err
		}
		files = append(files, outFile{"vmlinux.btf.xz", b})
	}
	// The committed record says which package was booted, not where this machine cached it;
	// a kernel that is no package is named by its file (or as the host) and its config's source.
	var k any
	if rep.Kernel != nil {
		kk := *rep.Kernel
		kk.Path, kk.Config, kk.Deb = "", "", ""
		k = &kk
		if kk.Source != "" {
			r := rep.Kernel
			k = &localKernelRecord{Kernel: r.Kernel, Arch: r.Arch, Release: r.Release, Source: r.Source,
				Path: r.Path, SHA256: r.SHA256, Banner: r.Banner, Config: r.Config, Note: r.Note}
		}
	}
	for _, f := range []struct {
		name string
		v    any
	}{{"info.json", rep.Info}, {"kernel.json", k}, {"boots.json", rep.Boots}} {
		b, err := json.MarshalIndent(f.v, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		files = append(files, outFile{f.name, append(b, '\n')})
	}
	return files, nil
}

// mergeFiles turns a capture's files into a merge into dir (CaptureOptions.Merge): its
// cases.jsonl keeps every line whose id was not captured again, the captured cases replace
// theirs in place or are appended in capture order; info.json, kernel.json and boots.json
// are dropped where dir has them (commitDir keeps dir's own).
func mergeFiles(dir string, files []outFile) ([]outFile, error) {
	old, err := os.ReadFile(filepath.Join(dir, "cases.jsonl"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var out []outFile
	for _, f := range files {
		switch f.name {
		case "cases.jsonl":
			m, err := mergeCases(old, f.data)
			if err != nil {
				return nil, fmt.Errorf("%s/cases.jsonl: %w", dir, err)
			}
			f.data = m
		case "info.json", "kernel.json", "boots.json":
			if _, err := os.Stat(filepath.Join(dir, f.name)); err == nil {
				continue
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// mergeCases merges JSON-lines case files by id: old's lines stay as they are unless add
// has their id.
func mergeCases(old, add []byte) ([]byte, error) {
	id := func(l []byte) (string, error) {
		var c struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(l, &c); err != nil || c.ID == "" {
			return "", fmt.Errorf("a line without an id: %.80s", l)
		}
		return c.ID, nil
	}
	var order []string
	byID := map[string][]byte{}
	for _, part := range [][]byte{old, add} {
		for _, l := range bytes.Split(part, []byte("\n")) {
			if l = bytes.TrimSpace(l); len(l) == 0 {
				continue
			}
			k, err := id(l)
			if err != nil {
				return nil, err
			}
			if _, ok := byID[k]; !ok {
				order = append(order, k)
			}
			byID[k] = l
		}
	}
	var b bytes.Buffer
	for _, k := range order {
		b.Write(byID[k])
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// localKernelRecord is the kernel.json of a capture of a kernel file (--vmlinuz) or of the
// host: no suite, package nor version, so CorpusPin reads it as the zero pin, and a
// re-capture needs the file again (checkRecapture).
type localKernelRecord struct {
	Kernel  string `json:"kernel"` // the model profile its cases' requests name
	Arch    string `json:"arch"`
	Release string `json:"release"`
	Source  string `json:"source"` // "vmlinuz" or "host"
	Path    string `json:"path,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	Banner  string `json:"banner,omitempty"`
	Config  string `json:"config,omitempty"`
	Note    string `json:"note,omitempty"`
}

// interrupted keeps what an interrupted capture completed (see PartialSuffix), sets
// rep.Cases to those cases, and returns the error saying so, wrapping ctx.Err().
func interrupted(ctx context.Context, o CaptureOptions, rep *CaptureReport, results map[string]wire.CaptureResult) error {
	var done []CorpusCase
	var missing []string
	for _, c := range o.Cases {
		if r, ok := results[c.ID]; ok && rep.boot != nil {
			done = append(done, toCorpus(rep.boot, rep.Info, c, r, o.BTF))
		} else {
			missing = append(missing, c.ID)
		}
	}
	rep.Cases = done
	msg := fmt.Sprintf("capture interrupted: %d of %d cases completed", len(done), len(o.Cases))
	if o.OutDir == "" {
		return fmt.Errorf("%s: %w", msg, ctx.Err())
	}
	if len(done) == 0 {
		return fmt.Errorf("%s, nothing kept; %s untouched: %w", msg, o.OutDir, ctx.Err())
	}
	partial := filepath.Clean(o.OutDir) + PartialSuffix
	part := *rep
	files, err := corpusFiles(&part)
	if err == nil {
		note := fmt.Sprintf("INCOMPLETE: this capture of %s-%s was interrupted (%v) and is not a corpus to commit.\n"+
			"%d of %d cases completed (cases.jsonl). The %d missing cases were never captured; they are not refusals:\n%s\n",
			o.Kernel, o.Arch, ctx.Err(), len(done), len(o.Cases), len(missing), strings.Join(missing, "\n"))
		files = append(files, outFile{PartialNote, []byte(note)})
		// The interrupt has ended ctx; this short write is what it asked for.
		err = commitDir(context.Background(), partial, files, false)
	}
	if err != nil {
		return fmt.Errorf("%s; keeping them in %s failed (%v); %s untouched: %w", msg, partial, err, o.OutDir, ctx.Err())
	}
	return fmt.Errorf("%s, kept in %s (its %s names the %d missing); %s untouched: %w",
		msg, partial, PartialNote, len(missing), o.OutDir, ctx.Err())
}

func xzBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	w, err := xz.NewWriter(&buf)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
