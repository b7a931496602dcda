package jit

import (
	"bytes"
	"strings"
	"testing"
)

// byteDis decodes every instruction as one byte and prints a fixed text per opcode.
type byteDis map[byte]string

func (d byteDis) Decode(code []byte, pc uint64) (Inst, error) {
	return Inst{Len: 1, Text: d[code[0]]}, nil
}

func TestSymbolize(t *testing.T) {
	syms := map[uint64]string{0xffffffff81100100: "__bpf_prog_enter_recur", 0xffffc90000010000: "prog#1"}
	for _, c := range []struct{ in, want string }{
		{"call 0xffffffff81100100", "call __bpf_prog_enter_recur"},
		{"mov $0xffffc90000010000,%rdi", "mov $prog#1,%rdi"},
		{"mov $-0x36ffffff0000,%rdi", "mov $prog#1,%rdi"}, // x86asm prints negative immediates
		{"je 0xffffffffc0000053", "je image+0x53"},
		{"mov -0x18(%rbp),%rdi", "mov -0x18(%rbp),%rdi"},
		{"add x0, sp, #0x18", "add x0, sp, #0x18"},
	} {
		if got := symbolize(c.in, 0xffffffffc0000000, syms); got != c.want {
			t.Errorf("symbolize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestBuildListing(t *testing.T) {
	img := &Image{Base: 0x1000, Code: []byte{1, 2, 3},
		Sections: []Section{{Name: SecPrologue, Start: 0, End: 1}, {Name: SecFentry(1), Start: 1, End: 3}},
		Relocs:   []Reloc{{Offset: 2, Kind: RelocImm64, Symbol: "im"}}}
	lines, err := BuildListing(img, byteDis{1: "push", 2: "call 0x2000", 3: "movk x0, #0x1"}, map[uint64]string{0x2000: "bpf_func#1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 || lines[0].Section != "prologue" || lines[1].Asm != "call bpf_func#1" || lines[2].Comment != "= im" || lines[2].Section != "fentry 1" {
		t.Fatalf("lines = %+v", lines)
	}
	var buf bytes.Buffer
	if err := WriteListing(&buf, lines, Palette{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Count(out, "<fentry 1>") != 1 || !strings.Contains(out, "; = im") || strings.Contains(out, "\x1b") {
		t.Errorf("listing:\n%s", out)
	}
}
