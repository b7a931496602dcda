package amd64_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/trampjit/trampjit/amd64"
	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel"
)

// soCaptures is a directory of new struct_ops captures (one <kernel>-<arch>/ each, corpus
// format) to check before they are merged into testdata/kernel: $TRAMPJIT_STRUCT_OPS_CAPTURES,
// or none.
var soCaptures = os.Getenv("TRAMPJIT_STRUCT_OPS_CAPTURES")

// structOpsCorpora are the amd64 corpus directories that may hold struct_ops cases.
func structOpsCorpora(t *testing.T) []string {
	var dirs []string
	for _, pat := range soPatterns("*-amd64") {
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
//
// Every image must match. A refusal the model does not make (the kernel's verdicts on
// members are btfmodel's StructOpsModel, checked with the whole corpus by kernel's
// TestCorpusByteIdentical once the captures are merged) is logged here, not failed.
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
		match, imageMatch, images := 0, 0, 0
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
			switch {
			case d.Verdict == kernel.Match:
				match++
				if c.Image != "" {
					imageMatch++
				}
			case d.Verdict == kernel.NotCaptured || c.Image == "":
				t.Logf("%s: %s: %s (%s)", dir, c.ID, d.Verdict, d.Note)
			default:
				t.Errorf("%s: %s: %s at %#x: model %s, kernel %s %s", dir, c.ID, d.Verdict, d.Offset, d.Model, d.Kernel, d.Note)
			}
		}
		placed := checkPacking(t, dir, so)
		passed := oracleCaptured(t, dir, so)
		t.Logf("%s: struct_ops images regenerated %d/%d, refusals agreeing %d/%d (verdicts %v); %d images placed by the model's sizes; %d captured images pass the oracle",
			dir, imageMatch, images, match-imageMatch, len(so)-images, count, placed, passed)
	}
	if total == 0 {
		t.Fatal("no amd64 corpus has struct_ops cases")
	}
}

// soPlacement is what a capture records of one map's images (the case's "struct_ops" field):
// the map, and every implemented member's image, ops pointer, code size and page.
type soPlacement struct {
	Map    string `json:"map"`
	Layout []struct {
		Member string   `json:"member"`
		Image  jit.Addr `json:"image"`
		Ptr    jit.Addr `json:"ptr"`
		Size   int      `json:"size"`
		Page   int      `json:"page"`
	} `json:"layout"`
}

// readPlacements reads the "struct_ops" field of every case of dir's cases.jsonl, by case id.
func readPlacements(t *testing.T, dir string) map[string]*soPlacement {
	b, err := os.ReadFile(filepath.Join(dir, "cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*soPlacement{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var c struct {
			ID        string       `json:"id"`
			StructOps *soPlacement `json:"struct_ops"`
		}
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &c) != nil || c.StructOps == nil {
			continue
		}
		out[c.ID] = c.StructOps
	}
	return out
}

// checkPacking lays each captured map out the way bpf_struct_ops_map_update_elem does, from
// the model's sizes alone: members in index order, each at its page's start plus the sizes
// (Backend.ImageSize) of the members before it on the page, a new page when the next size
// does not fit in what is left of PAGE_SIZE (bpf_struct_ops_prepare_trampoline), and the ops
// pointer at the image plus Backend.EntryOffset. It returns the images placed.
func checkPacking(t *testing.T, dir string, cases []*kernel.CorpusCase) int {
	placements := readPlacements(t, dir)
	type member struct {
		size, entry, code int
	}
	byMap := map[string]map[string]member{}
	layouts := map[string]*soPlacement{}
	for _, c := range cases {
		pl := placements[c.ID]
		if c.Image == "" || pl == nil || pl.Map == "" {
			continue
		}
		m, err := c.Request.Model()
		if err != nil {
			t.Errorf("%s: %s: %v", dir, c.ID, err)
			continue
		}
		tr, err := jit.Resolve(c.Request, m)
		if err != nil {
			t.Errorf("%s: %s: %v", dir, c.ID, err)
			continue
		}
		img, err := amd64.Backend{}.Generate(tr)
		if err != nil {
			continue // TestStructOpsCorpus reports it
		}
		size, _ := amd64.Backend{}.ImageSize(tr, img)
		entry, _ := amd64.Backend{}.EntryOffset(tr)
		// Map names are truncated to BPF_OBJ_NAME_LEN: two tables' maps may share one.
		key := pl.Map + " (" + c.Request.StructOps.Ops + ")"
		if byMap[key] == nil {
			byMap[key] = map[string]member{}
		}
		byMap[key][c.Request.StructOps.Member] = member{size, entry, len(img.Code)}
		layouts[key] = pl
	}
	maps := make([]string, 0, len(layouts))
	for name := range layouts {
		maps = append(maps, name)
	}
	sort.Strings(maps)
	placed := 0
	for _, name := range maps {
		pl, members := layouts[name], byMap[name]
		var base jit.Addr
		off, page := 0, -1
		for i, e := range pl.Layout {
			mem, ok := members[e.Member]
			if !ok {
				t.Errorf("%s: map %s: no captured image of %s to size", dir, name, e.Member)
				break
			}
			if mem.code != e.Size {
				t.Errorf("%s: map %s: %s: model code %d bytes, capture %d", dir, name, e.Member, mem.code, e.Size)
			}
			switch {
			case i == 0:
				base, page = e.Image, e.Page
			case off+mem.size > pageSize:
				if e.Page != page+1 {
					t.Errorf("%s: map %s: %s (%d bytes at offset %d) does not fit its page, but the capture has it on page %d after %d", dir, name, e.Member, mem.size, off, e.Page, page)
				}
				base, page, off = e.Image, e.Page, 0
			default:
				if e.Page != page || e.Image != base+jit.Addr(off) {
					t.Errorf("%s: map %s: %s at %#x (page %d), the layout puts it at %#x (page %d)", dir, name, e.Member, uint64(e.Image), e.Page, uint64(base)+uint64(off), page)
				}
			}
			if e.Ptr != 0 && e.Ptr != e.Image+jit.Addr(mem.entry) {
				t.Errorf("%s: map %s: %s: ops pointer %#x, image %#x + entry offset %d", dir, name, e.Member, uint64(e.Ptr), uint64(e.Image), mem.entry)
			}
			off += mem.size
			placed++
		}
	}
	return placed
}

// pageSize is PAGE_SIZE, what one struct_ops image page holds.
const pageSize = 4096

// TestStructOpsOracle runs every struct_ops image of TestStructOpsEveryMember under Unicorn,
// called indirectly at the ops pointer (emu's struct_ops caller: FineIBT's hash in the
// register the profile's preamble checks, kCFI's read before the entry), with every stub
// clobbering the caller-saved registers: the program sees the arguments, the caller gets the
// program's value as the member's width, nothing else is called, rbx, rbp and rsp survive.
func TestStructOpsOracle(t *testing.T) {
	n, checks := 0, 0
	defer func() { t.Logf("%d struct_ops images, %d oracle checks", n, checks) }()
	for _, req := range amd64.StructOpsRequests(t) {
		m, err := req.Model()
		if err != nil {
			t.Fatal(err)
		}
		args := make([]uint64, m.NrRegs())
		for i := range args {
			args[i] = 0x0101010101010101 * uint64(i+1)
		}
		name := string(req.Kernel) + " " + req.StructOps.String() + " " + req.Features.CFI
		rep, err := emu.Run(req, emu.Options{Clobber: true, Args: args})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, f := range rep.Failed() {
			t.Errorf("%s: %s: %s", name, f.Name, f.Detail)
		}
		if len(rep.Checks) < 4 {
			t.Errorf("%s: only %d checks ran", name, len(rep.Checks))
		}
		n, checks = n+1, checks+len(rep.Checks)
	}
}

// oracleCaptured runs each captured image, the kernel's bytes at the kernel's addresses, under
// Unicorn with emu's struct_ops caller and checks; it returns how many pass.
func oracleCaptured(t *testing.T, dir string, cases []*kernel.CorpusCase) int {
	passed := 0
	for _, c := range cases {
		if c.Image == "" {
			continue
		}
		code, err := hex.DecodeString(c.Image)
		if err != nil {
			t.Errorf("%s: %s: %v", dir, c.ID, err)
			continue
		}
		rep, err := emu.RunImage(c.Request, code, emu.Options{Clobber: true})
		if err != nil {
			t.Errorf("%s: %s: %v", dir, c.ID, err)
			continue
		}
		ok := true
		for _, f := range rep.Failed() {
			t.Errorf("%s: %s: %s: %s", dir, c.ID, f.Name, f.Detail)
			ok = false
		}
		if ok {
			passed++
		}
	}
	return passed
}

// soPatterns are the corpus directory globs that hold struct_ops cases.
func soPatterns(glob string) []string {
	p := []string{filepath.Join("..", "testdata", "kernel", glob)}
	if soCaptures != "" {
		p = append(p, filepath.Join(soCaptures, glob))
	}
	return p
}
