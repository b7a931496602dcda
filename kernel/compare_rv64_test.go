package kernel

import (
	"encoding/hex"
	"strings"
	"testing"
)

// TestSameRISCV64Catches: what is not an address is compared: a kernel image against itself
// passes, with its frame size changed (the first instruction, addi sp or c.addi16sp) or a
// register of a store changed it fails, naming the place.
func TestSameRISCV64Catches(t *testing.T) {
	var img []byte
	for _, c := range readCommitted(t, "7.2-riscv64") {
		if c.ID == "bpf_fentry_test1-fentry-fexit" {
			img, _ = hex.DecodeString(c.Image)
		}
	}
	if len(img) == 0 {
		t.Fatal("no bpf_fentry_test1-fentry-fexit image in the 7.2-riscv64 corpus")
	}
	if err := SameModuloAddresses("riscv64", img, img); err != nil {
		t.Fatalf("an image against itself: %v", err)
	}
	spans, err := rvDecode(img)
	if err != nil {
		t.Fatal(err)
	}
	frame := append([]byte(nil), img...)
	frame[spans[0].off] ^= 0x40 // an immediate bit of the frame adjustment
	if err := SameModuloAddresses("riscv64", frame, img); err == nil || !strings.HasPrefix(err.Error(), "+0x0:") {
		t.Errorf("frame size changed: %v, want a difference at +0x0", err)
	}
	// The first sd (opcode 0x23, funct3 3) with its source register changed.
	for _, s := range spans {
		if s.n == 4 && s.word&0x707f == 0x3023 {
			st := append([]byte(nil), img...)
			st[s.off+2] ^= 0x10 // rs2 bit
			if err := SameModuloAddresses("riscv64", st, img); err == nil {
				t.Errorf("a store's register changed at +%#x: accepted", s.off)
			}
			return
		}
	}
	t.Error("no 32-bit sd in the image")
}

// FuzzSameModuloAddresses: image bytes from a corpus file are untrusted; comparing any two
// (odd lengths, branches out of the image, half instructions) gives an answer or an error,
// never a panic, and an image always equals itself when it decodes.
func FuzzSameModuloAddresses(f *testing.F) {
	for _, name := range []string{"7.2-riscv64", "6.12-riscv64"} {
		for i, c := range readCommitted(f, name) {
			if img, _ := hex.DecodeString(c.Image); len(img) > 0 && i%40 == 0 {
				f.Add("riscv64", img, img[:len(img)-2])
			}
		}
	}
	f.Add("amd64", []byte{0xe8, 0, 0, 0, 0}, []byte{0xe8, 1, 2, 3, 4})
	f.Add("arm64", []byte{0, 0, 0, 0x94}, []byte{1, 0, 0, 0x94})
	f.Fuzz(func(t *testing.T, arch string, a, b []byte) {
		if len(a) > 1<<16 || len(b) > 1<<16 {
			return
		}
		_ = SameModuloAddresses(arch, a, b)
		if arch == "riscv64" {
			if _, err := rvDecode(a); err == nil {
				if err := SameModuloAddresses(arch, a, a); err != nil {
					t.Fatalf("an image differs from itself: %v", err)
				}
			}
		}
	})
}
