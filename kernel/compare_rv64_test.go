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
