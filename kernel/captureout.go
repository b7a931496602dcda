package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
