package emu_test

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/kernel"
)

// The oracle checks what the original receives: the kernel's own fexit image for
// bpf_fentry_test2 (6.12-amd64 corpus) with its restore of the second argument
// (`mov -0x10(%rbp),%rsi`, 48 8b 75 f0) pointed one slot lower must fail CheckOriginal
// on argument slot 1, and only with the patch.
func TestOracleChecksOriginalArgs(t *testing.T) {
	cases, err := kernel.ReadCorpus("../testdata/kernel/6.12-amd64")
	if err != nil {
		t.Fatal(err)
	}
	var c *kernel.CorpusCase
	for i := range cases {
		if cases[i].ID == "bpf_fentry_test2-fentry-fexit" {
			c = &cases[i]
		}
	}
	if c == nil {
		t.Fatal("bpf_fentry_test2-fentry-fexit not in the corpus")
	}
	code, _ := hex.DecodeString(c.Image)
	restore := []byte{0x48, 0x8b, 0x75, 0xf0}
	if bytes.Count(code, restore) != 1 {
		t.Fatalf("the image has %d `mov -0x10(%%rbp),%%rsi`, want 1", bytes.Count(code, restore))
	}
	for _, patch := range []bool{false, true} {
		img := append([]byte(nil), code...)
		if patch {
			img[bytes.Index(img, restore)+3] = 0xe8 // -0x18(%rbp): the slot below
		}
		rep, err := emu.RunImage(c.Request, img, emu.Options{Args: []uint64{0x1111, 0x2222}})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range rep.Failed() {
			found = found || f.Name == emu.CheckOriginal && strings.Contains(f.Detail, "original got argument slot 1")
		}
		if found != patch || rep.OK == patch {
			t.Errorf("patched %v: ok %v, CheckOriginal slot 1 reported %v:%s", patch, rep.OK, found, failures(rep))
		}
	}
}
