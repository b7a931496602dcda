package amd64

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// Bytes x86asm cannot decode take one byte in a listing, and decoding resumes at the next
// one, as GNU objdump does with "(bad)".
func TestUndecodableBytesAsObjdump(t *testing.T) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("objdump not found (install binutils)")
	}
	code := []byte{0x06, 0x90, 0x07, 0x0e, 0x90, 0x16, 0x17, 0x1e, 0x1f, 0x27, 0x90, 0x2f, 0x37, 0x3f, 0x60, 0x61, 0xd4, 0xd5, 0x90, 0xc3}
	bin := filepath.Join(t.TempDir(), "code.bin")
	if err := os.WriteFile(bin, code, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(objdump, "-D", "-b", "binary", "-mi386:x86-64", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("objdump: %v\n%s", err, out)
	}
	var want []int
	for _, m := range regexp.MustCompile(`(?m)^\s+([0-9a-f]+):\t`).FindAllStringSubmatch(string(out), -1) {
		off, _ := strconv.ParseUint(m[1], 16, 32)
		want = append(want, int(off))
	}
	var got []int
	for off := 0; off < len(code); {
		got = append(got, off)
		inst, err := (Disassembler{}).Decode(code[off:], 0x1000+uint64(off))
		if err != nil {
			t.Fatalf("offset %d: %v", off, err)
		}
		off += inst.Len
	}
	if len(got) != len(want) {
		t.Fatalf("instruction offsets %v, objdump %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("instruction offsets %v, objdump %v", got, want)
		}
	}
}
