package emu_test

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/kernel"
)

// structOpsCorpora are the corpus directories that may hold struct_ops cases: the committed
// corpora and new captures named by $TRAMPJIT_STRUCT_OPS_CAPTURES.
func structOpsCorpora(t *testing.T) []string {
	dirs, _ := filepath.Glob("../testdata/kernel/*/cases.jsonl")
	// $TRAMPJIT_STRUCT_OPS_CAPTURES: new captures (one <kernel>-<arch>/ each, corpus format)
	// to check before they are merged into testdata/kernel.
	var more []string
	if staged := os.Getenv("TRAMPJIT_STRUCT_OPS_CAPTURES"); staged != "" {
		more, _ = filepath.Glob(filepath.Join(staged, "*", "cases.jsonl"))
	}
	var out []string
	for _, d := range append(dirs, more...) {
		out = append(out, filepath.Dir(d))
	}
	return out
}

// TestStructOpsCorpus runs every captured struct_ops image, the kernel's bytes at the kernel's
// addresses, through the synthetic caller: plainly, with clobbering stubs over several
// calls, and with the program skipped by a recursion miss; checked in emulated code and
// traced by Go hooks, which must agree. trampjit's image for the same request is run too
// where it differs from the kernel's (a byte-identical one is the same run).
func TestStructOpsCorpus(t *testing.T) {
	total := 0
	merged := map[string]bool{} // profiles whose committed corpus has struct_ops images
	for _, dir := range structOpsCorpora(t) {
		cases, err := kernel.ReadCorpus(dir)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		name := filepath.Base(dir)
		if merged[name] {
			t.Logf("%s: its struct_ops cases are in testdata/kernel/%s already; not run again", dir, name)
			continue
		}
		// A staged capture names the profile's BTF like the committed corpus does; without
		// its own copy the committed one (the same kernel) is used.
		btfDir := dir
		if _, err := os.Stat(filepath.Join(dir, "vmlinux.btf.xz")); err != nil {
			btfDir = filepath.Join("../testdata/kernel", name)
		}
		var images, identical, ours int
		members := map[string]bool{}
		for _, c := range cases {
			if c.Request.StructOps == nil || c.Image == "" {
				continue
			}
			c.Request.SetDir(btfDir)
			code, err := hex.DecodeString(c.Image)
			if err != nil {
				t.Fatalf("%s/%s: %v", name, c.ID, err)
			}
			ok := true
			for _, o := range []emu.Options{{}, {Clobber: true, Count: 5, RetValues: []uint64{0x7fff_0000_0000_0101}}, {Miss: []int{0}, Clobber: true}} {
				rep, err := emu.RunImage(c.Request, code, o)
				if err != nil {
					t.Errorf("%s/%s: kernel image: %v", name, c.ID, err)
					ok = false
					break
				}
				o.Trace = true
				tr, err := emu.RunImage(c.Request, code, o)
				if err != nil {
					t.Fatalf("%s/%s: traced: %v", name, c.ID, err)
				}
				if !rep.OK || !tr.OK {
					t.Errorf("%s/%s: kernel image fails the oracle (%+v):%s%s", name, c.ID, o, failures(rep), failures(tr))
					ok = false
					break
				}
				a, b := *rep, *tr
				a.HitsPerSec, b.HitsPerSec = 0, 0
				if !reflect.DeepEqual(a, b) {
					t.Errorf("%s/%s: checked in emulated code and traced differ:\n%+v\n%+v", name, c.ID, a, b)
				}
			}
			if !ok {
				continue
			}
			images++
			members[c.Request.StructOps.String()] = true
			img, _, err := emu.Generate(c.Request)
			switch {
			case err != nil:
				t.Logf("%s/%s: trampjit: %v", name, c.ID, err)
			case hex.EncodeToString(img.Code) == c.Image:
				identical++
				ours++
			default:
				rep, err := emu.Run(c.Request, emu.Options{Clobber: true})
				switch {
				case err != nil:
					t.Logf("%s/%s: trampjit's image (not byte-identical): %v", name, c.ID, err)
				case !rep.OK:
					t.Logf("%s/%s: trampjit's image (not byte-identical) fails the oracle:%s", name, c.ID, failures(rep))
				default:
					ours++
				}
			}
		}
		if images == 0 && len(members) == 0 {
			continue
		}
		ms := make([]string, 0, len(members))
		for m := range members {
			ms = append(ms, m)
		}
		sort.Strings(ms)
		total += images
		merged[name] = true
		t.Logf("%s: %d struct_ops kernel images pass the oracle (%d members); trampjit: %d byte-identical, %d pass", name, images, len(ms), identical, ours)
	}
	t.Logf("%d struct_ops kernel images in all", total)
}
