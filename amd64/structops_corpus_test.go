package amd64_test

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/trampjit/trampjit/amd64"
	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel"
)

// soCaptures is where the struct_ops captures are written before they are merged into
// testdata/kernel; the test reads both, so it keeps working after the merge.
const soCaptures = "/work/so-captures"

// structOpsCorpora are the amd64 corpus directories that may hold struct_ops cases.
func structOpsCorpora(t *testing.T) []string {
	var dirs []string
	for _, pat := range []string{filepath.Join("..", "testdata", "kernel", "*-amd64"), filepath.Join(soCaptures, "*-amd64")} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range m {
			if _, err := os.Stat(filepath.Join(d, "cases.jsonl")); err == nil {
				dirs = append(dirs, d)
			}
		}
	}
	return dirs
}

// TestStructOpsCorpus regenerates every captured struct_ops case of the amd64 corpora byte
// for byte at the kernel's addresses (kernel.Diff, as trampjit diff does), and checks the
// packing: images of one map sit back to back, each at the previous one's start plus what
// arch_prepare_bpf_trampoline returned for it (Backend.ImageSize).
func TestStructOpsCorpus(t *testing.T) {
	total := 0
	for _, dir := range structOpsCorpora(t) {
		cases, err := kernel.ReadCorpus(dir)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		var so []*kernel.CorpusCase
		for i := range cases {
			if cases[i].Request.StructOps != nil {
				so = append(so, &cases[i])
			}
		}
		if len(so) == 0 {
			continue
		}
		total += len(so)
		match, images := 0, 0
		count := map[string]int{}
		for _, c := range so {
			if c.Request.Arch != btfmodel.AMD64 {
				t.Fatalf("%s: %s: a %s case in an amd64 corpus", dir, c.ID, c.Request.Arch)
			}
			d := kernel.Diff(c)
			count[d.Verdict]++
			if c.Image != "" {
				images++
			}
			switch d.Verdict {
			case kernel.Match:
				match++
			case kernel.NotCaptured:
				t.Logf("%s: %s: %s (%s)", dir, c.ID, d.Verdict, d.Note)
			default:
				t.Errorf("%s: %s: %s at %#x: model %s, kernel %s %s", dir, c.ID, d.Verdict, d.Offset, d.Model, d.Kernel, d.Note)
			}
		}
		packed := checkPacking(t, dir, so)
		t.Logf("%s: struct_ops regenerated %d/%d (%d images, verdicts %v); %d neighbours packed at the previous image + its size",
			dir, match, len(so), images, count, packed)
	}
	if total == 0 {
		t.Skip("no amd64 corpus has struct_ops cases yet (" + soCaptures + " not captured)")
	}
}

// checkPacking: two captured images in one page (bpf_struct_ops_image_alloc gives a map its
// own pages, members in index order) are one member's image and the next implemented one's.
func checkPacking(t *testing.T, dir string, cases []*kernel.CorpusCase) int {
	type placed struct {
		id   string
		at   uint64
		size int
	}
	var all []placed
	for _, c := range cases {
		if c.Image == "" || c.Request.Addrs == nil {
			continue
		}
		m, err := c.Request.Model()
		if err != nil {
			continue
		}
		tr, err := jit.Resolve(c.Request, m)
		if err != nil {
			continue
		}
		size, err := amd64.Backend{}.Size(tr)
		if err != nil {
			t.Errorf("%s: %s: size: %v", dir, c.ID, err)
			continue
		}
		all = append(all, placed{c.ID, uint64(c.Request.Addrs.Image), size})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].at < all[j].at })
	n := 0
	for i := 1; i < len(all); i++ {
		prev, cur := all[i-1], all[i]
		if prev.at>>12 != cur.at>>12 || cur.at == prev.at {
			continue
		}
		// A gap is another map's image or an unimplemented member; only adjacent pairs
		// with no room for a member between them are checked.
		if gap := cur.at - prev.at; gap != uint64(prev.size) && gap < uint64(prev.size) {
			t.Errorf("%s: %s at %#x follows %s at %#x: %d bytes apart, its size is %d", dir, cur.id, cur.at, prev.id, prev.at, gap, prev.size)
			continue
		} else if gap != uint64(prev.size) {
			continue
		}
		n++
	}
	return n
}
