package emu_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/emu"
)

// The oracle checks what the original receives: the kernel's own fexit image for
// bpf_fentry_test2 (6.12-amd64 corpus) with its restore of the second argument
// (`mov -0x10(%rbp),%rsi`, 48 8b 75 f0) pointed one slot lower must fail CheckOriginal
// on argument slot 1, and only with the patch.
func TestOracleChecksOriginalArgs(t *testing.T) {
	c, code := kernelCase(t, "6.12-amd64", "bpf_fentry_test2-fentry-fexit")
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

// Further patches of the same kernel image, each caught by the check that owns it: the
// save of the first argument moved off its ctx slot (CheckCtx on ctx[0]), the store of the
// return value for fexit moved off ctx[2] (CheckRetval), the call to the original turned
// into a 5-byte NOP (CheckOriginal: not called).
func TestOracleChecksPatchedImage(t *testing.T) {
	c, code := kernelCase(t, "6.12-amd64", "bpf_fentry_test2-fentry-fexit")
	orig := -1
	for i := 0; i+5 <= len(code); i++ {
		rel := int32(uint32(code[i+1]) | uint32(code[i+2])<<8 | uint32(code[i+3])<<16 | uint32(code[i+4])<<24)
		if code[i] == 0xe8 && uint64(c.Request.Addrs.Image)+uint64(i)+5+uint64(int64(rel)) == uint64(c.Request.Addrs.IP)+5 {
			orig = i
		}
	}
	if orig < 0 {
		t.Fatal("no call to ip+5 (the original's body) in the image")
	}
	for _, p := range []struct {
		name        string
		find, repl  []byte
		check, says string
	}{
		{"save rdi to -0x20", []byte{0x48, 0x89, 0x7d, 0xe8}, []byte{0x48, 0x89, 0x7d, 0xe0}, emu.CheckCtx, "ctx[0] ="},
		{"store rax to -0x20", []byte{0x48, 0x89, 0x45, 0xf8}, []byte{0x48, 0x89, 0x45, 0xe0}, emu.CheckRetval, "(return value)"},
		{"no call to the original", code[orig : orig+5], []byte{0x0f, 0x1f, 0x44, 0x00, 0x00}, emu.CheckOriginal, "original called: false"},
	} {
		if bytes.Count(code, p.find) != 1 {
			t.Fatalf("%s: %x occurs %d times", p.name, p.find, bytes.Count(code, p.find))
		}
		img := bytes.Replace(append([]byte(nil), code...), p.find, p.repl, 1)
		rep, err := emu.RunImage(c.Request, img, emu.Options{Args: []uint64{0x1111, 0x2222}})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range rep.Failed() {
			found = found || f.Name == p.check && strings.Contains(f.Detail, p.says)
		}
		if rep.OK || !found {
			t.Errorf("%s: want %s saying %q, got:%s", p.name, p.check, p.says, failures(rep))
		}
	}
}
