package kernel

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/kernel/vm"
	"github.com/trampjit/trampjit/kernel/wire"
)

// snapshot reads every file under dir, by relative path.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// oldCorpus writes a corpus directory the way an earlier capture left it, plus a file no
// capture writes.
func oldCorpus(t *testing.T) (parent, dir string) {
	parent = t.TempDir()
	dir = filepath.Join(parent, "6.12-amd64")
	if err := os.MkdirAll(filepath.Join(dir, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"cases.jsonl": `{"id":"old-case"}` + "\n", "info.json": `{"release":"old"}`, "kernel.json": `{"version":"old"}`,
		"boots.json": "[]", "vmlinux.btf.xz": "old btf", "README": "kept", "notes/a.txt": "nested",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return parent, dir
}

func newReport() *CaptureReport {
	k := &vm.KernelImage{Kernel: "6.12", Arch: "amd64", Release: "new", Path: "/cache/vmlinuz"}
	rep := &CaptureReport{Kernel: k, Info: &wire.Info{Hello: wire.Hello{Release: "new"}}, Boots: []BootStat{{Cases: 1}}}
	rep.Cases = []CorpusCase{toCorpus(k, rep.Info, Case{ID: "new-case", Func: "f"}, wire.CaptureResult{ID: "new-case", Code: []byte{0xc3}}, "vmlinux.btf.xz")}
	return rep
}

// TestCommitCancelledKeepsOldCorpus: an interrupt between any two files of a commit leaves
// the existing corpus byte-identical and no staging directory behind.
func TestCommitCancelledKeepsOldCorpus(t *testing.T) {
	files, err := corpusFiles(newReport())
	if err != nil {
		t.Fatal(err)
	}
	for _, after := range []string{"cases.jsonl", "boots.json"} { // first and last file
		t.Run(after, func(t *testing.T) {
			parent, dir := oldCorpus(t)
			before := snapshot(t, dir)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stagedHook = func(name string) {
				if name == after {
					cancel()
				}
			}
			defer func() { stagedHook = nil }()
			err := commitDir(ctx, dir, files, true)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("commit = %v, want context.Canceled", err)
			}
			if got := snapshot(t, dir); !equalMaps(got, before) {
				t.Errorf("corpus changed:\n got %v\nwant %v", got, before)
			}
			if ents, _ := os.ReadDir(parent); len(ents) != 1 {
				t.Errorf("left behind: %v", ents)
			}
		})
	}
}

// TestCommitReplacesWhole: a finished commit replaces the corpus files, keeps the files no
// capture writes, and leaves nothing beside it.
func TestCommitReplacesWhole(t *testing.T) {
	parent, dir := oldCorpus(t)
	files, err := corpusFiles(newReport())
	if err != nil {
		t.Fatal(err)
	}
	if err := commitDir(context.Background(), dir, files, true); err != nil {
		t.Fatal(err)
	}
	got := snapshot(t, dir)
	if !strings.Contains(got["cases.jsonl"], `"new-case"`) || strings.Contains(got["cases.jsonl"], "old-case") ||
		!strings.Contains(got["info.json"], `"new"`) || strings.Contains(got["kernel.json"], "/cache/vmlinuz") {
		t.Errorf("not the new corpus: %v", got)
	}
	if got["README"] != "kept" || got["notes/a.txt"] != "nested" || got["vmlinux.btf.xz"] != "old btf" {
		t.Errorf("files the capture does not write were lost: %v", got)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
	// A new directory, below directories that do not exist yet.
	fresh := filepath.Join(parent, "a", "b", "corpus")
	if err := commitDir(context.Background(), fresh, files, true); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, fresh); len(got) != len(files) {
		t.Errorf("fresh corpus: %v", got)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestCheckOutDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{dir, filepath.Join(dir, "new"), filepath.Join(dir, "x", "y", "z")} {
		if err := CheckOutDir(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, c := range []struct{ dir, want string }{
		{file, "exists and is not a directory"},
		{filepath.Join(file, "sub"), "not a directory"},
		{"/sys/trampjit-out", "cannot write in /sys"}, // sysfs refuses new files, even to root
	} {
		err := CheckOutDir(c.dir)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.dir) {
			t.Errorf("%s: %v, want %q", c.dir, err, c.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the check left files: %v", ents)
	}
}
