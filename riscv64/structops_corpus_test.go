package riscv64_test

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/riscv64"
)

// soCaptures is a directory of new struct_ops captures (one <kernel>-<arch>/ each, corpus
// format) to check before they are merged into testdata/kernel: $TRAMPJIT_STRUCT_OPS_CAPTURES,
// or none.
var soCaptures = os.Getenv("TRAMPJIT_STRUCT_OPS_CAPTURES")

// structOpsCorpora are the riscv64 corpus directories that may hold struct_ops cases: the
// committed corpora and, when it exists, the capture directory outside the repository.
func structOpsCorpora(t *testing.T) []string {
	var dirs []string
	for _, pat := range soPatterns("*-riscv64") {
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

// TestStructOpsCaptures regenerates every struct_ops case the riscv64 guests captured, byte
// for byte at the captured addresses (kernel.Diff, as trampjit diff does), and checks the
// packing: images of one ops map sit back to back in its page, each at the previous one's
// start plus the size arch_prepare_bpf_trampoline returned for it (Backend.Size).
func TestStructOpsCaptures(t *testing.T) {
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
		match, images, imagesMatch := 0, 0, 0
		count := map[string]int{}
		for _, c := range so {
			if c.Request.Arch != btfmodel.RISCV64 {
				t.Fatalf("%s: %s: a %s case in a riscv64 corpus", dir, c.ID, c.Request.Arch)
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
					imagesMatch++
				}
			case d.Verdict == kernel.ModelAccept && c.Image == "" && c.Stage == "attach":
				// The JIT built the image; the map update then failed in the table's own
				// code (bpf_dummy_ops' bpf_dummy_init_member is -EOPNOTSUPP: the table is
				// only for BPF_PROG_TEST_RUN). Not the trampoline's decision.
				t.Logf("%s: %s: the kernel refuses the map update (%s %s), the image model builds it", dir, c.ID, c.Errno, firstLine(c.Error))
			case d.Verdict == kernel.NotCaptured:
				t.Logf("%s: %s: %s (%s)", dir, c.ID, d.Verdict, d.Note)
			default:
				t.Errorf("%s: %s: %s at %#x: model %s, kernel %s %s", dir, c.ID, d.Verdict, d.Offset, d.Model, d.Kernel, d.Note)
			}
		}
		packed, breaks := checkPacking(t, dir, so)
		golden := checkGoldenMembers(t, so)
		t.Logf("%s: struct_ops images regenerated %d/%d, cases %d/%d (verdicts %v); %d neighbours packed at the previous image + its size, %d new pages where the next image did not fit; %d curated golden members are the kernel's bytes at its addresses",
			dir, imagesMatch, images, match, len(so), count, packed, breaks, golden)
		if images > 0 && imagesMatch != images {
			t.Errorf("%s: %d of %d struct_ops images regenerated", dir, imagesMatch, images)
		}
	}
	if total == 0 {
		t.Fatal("no riscv64 corpus has struct_ops cases")
	}
}

// checkPacking: the images of one map's page (bpf_struct_ops_prepare_trampoline places each
// at the previous one's end, image_off += size, and starts a new page when the next does not
// fit; on riscv64 a page is a PAGE_SIZE chunk of the prog pack, not page-aligned) follow each
// other by what arch_prepare_bpf_trampoline returned for the previous one.
func checkPacking(t *testing.T, dir string, cases []*kernel.CorpusCase) (n, breaks int) {
	type placed struct {
		id   string
		at   uint64
		size int
	}
	type pageKey struct {
		ops, mapName string
		page         int
	}
	pages := map[pageKey][]placed{}
	for _, c := range cases {
		if c.Image == "" || c.Request.Addrs == nil || c.StructOps == nil {
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
		size, err := riscv64.Backend{}.ImageSize(tr, nil)
		if err != nil {
			t.Errorf("%s: %s: size: %v", dir, c.ID, err)
			continue
		}
		key := pageKey{c.Request.StructOps.Ops, c.StructOps.Map, c.StructOps.Page}
		pages[key] = append(pages[key], placed{c.ID, uint64(c.Request.Addrs.Image), size})
	}
	for key, all := range pages {
		sort.Slice(all, func(i, j int) bool { return all[i].at < all[j].at })
		used := all[len(all)-1].at + uint64(all[len(all)-1].size) - all[0].at
		if used > riscv64.PageSize {
			t.Errorf("%s: page %d of %s's map %s holds %d bytes of images, more than a page", dir, key.page, key.ops, key.mapName, used)
		}
		// A new page is started only when the next member's image does not fit.
		if next := pages[pageKey{key.ops, key.mapName, key.page + 1}]; len(next) > 0 {
			first := next[0]
			for _, x := range next {
				if x.at < first.at {
					first = x
				}
			}
			if used+uint64(first.size) <= riscv64.PageSize {
				t.Errorf("%s: %s starts page %d although its %d bytes fit after the %d of page %d", dir, first.id, key.page+1, first.size, used, key.page)
			}
			breaks++
		}
		for i := 1; i < len(all); i++ {
			prev, cur := all[i-1], all[i]
			if cur.at-prev.at != uint64(prev.size) {
				t.Errorf("%s: %s at %#x follows %s at %#x in its page: %d bytes apart, its size is %d", dir, cur.id, cur.at, prev.id, prev.at, cur.at-prev.at, prev.size)
				continue
			}
			n++
		}
	}
	return n, breaks
}

// checkGoldenMembers generates each curated struct_ops case (the golden listings) that has a
// captured case of the same kernel, table and member at that case's addresses and CPU
// features: it must be the kernel's image, so each golden listing is the kernel's code at
// synthetic addresses.
func checkGoldenMembers(t *testing.T, cases []*kernel.CorpusCase) int {
	n := 0
	for _, gc := range riscv64.StructOpsCases() {
		for _, c := range cases {
			r := c.Request
			if c.Image == "" || r.Addrs == nil || r.Kernel != gc.Req.Kernel || *r.StructOps != *gc.Req.StructOps ||
				r.Progs[0].Sleepable != gc.Req.Progs[0].Sleepable || r.Features.CFI != gc.Req.Features.CFI {
				continue
			}
			req := gc.Req
			req.Addrs, req.Features = r.Addrs, r.Features
			_, img, err := jit.Generate(&req)
			if err != nil {
				t.Errorf("%s at %s's addresses: %v", gc.Name, c.ID, err)
				break
			}
			if want, _ := hex.DecodeString(c.Image); !bytes.Equal(img.Code, want) {
				t.Errorf("%s at %s's addresses differs from the kernel's image", gc.Name, c.ID)
			}
			n++
			break
		}
	}
	return n
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// TestStructOpsOracle runs every curated struct_ops image under Unicorn, entered by an
// indirect call at the ops pointer: the program sees the member's arguments, the caller gets
// the program's return value as the member's type makes it, nothing else is called, and the
// callee-saved registers and the caller's stack survive (emu's struct_ops oracle).
func TestStructOpsOracle(t *testing.T) {
	n, checks := 0, 0
	defer func() { t.Logf("%d struct_ops images, %d oracle checks", n, checks) }()
	for _, c := range riscv64.StructOpsCases() {
		req := c.Req
		m, err := req.Model()
		if err != nil {
			t.Fatal(err)
		}
		args := make([]uint64, m.NrRegs())
		for i := range args {
			args[i] = 0x0101010101010101 * uint64(i+1)
		}
		rep, err := emu.Run(&req, emu.Options{Clobber: true, Args: args})
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		for _, f := range rep.Failed() {
			t.Errorf("%s: %s: %s", c.Name, f.Name, f.Detail)
		}
		if len(rep.Checks) < 4 {
			t.Errorf("%s: only %d checks ran", c.Name, len(rep.Checks))
		}
		n, checks = n+1, checks+len(rep.Checks)
	}
}

// soPatterns are the corpus directory globs that hold struct_ops cases.
func soPatterns(glob string) []string {
	p := []string{filepath.Join("..", "testdata", "kernel", glob)}
	if soCaptures != "" {
		p = append(p, filepath.Join(soCaptures, glob))
	}
	return p
}
