package kernel

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/jit/jittest"
)

// shape is what decides a trampoline's bytes apart from addresses.
func shape(k btfmodel.Kernel, m *btfmodel.FuncModel, progs []jit.Prog, f jit.Features) string {
	s := fmt.Sprintf("%s ret=%d", k, m.RetSize)
	for _, a := range m.Args {
		s += fmt.Sprintf(" %d/%d", a.Size, a.Flags&btfmodel.StructArg)
	}
	return fmt.Sprintf("%s %+v %+v", s, progs, f)
}

// TestGoldenAgainstCorpus checks the golden cases (jittest.Cases, synthetic addresses) against
// the kernel: where the corpus holds an attachment of the same shape (same argument sizes,
// return size, programs and features), the golden image must equal the kernel's modulo
// addresses. The remaining golden cases are checked by the emulator oracle (package emu).
func TestGoldenAgainstCorpus(t *testing.T) {
	for _, arch := range btfmodel.Arches {
		byShape := map[string][]byte{}
		addrsOf := map[string]*jit.Addrs{}
		for _, dir := range corpora(t) {
			cases, err := ReadCorpus(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cases {
				if c.Error != "" || c.Request.Arch != arch {
					continue
				}
				m, err := c.Request.Model()
				if err != nil {
					continue
				}
				img, _ := hex.DecodeString(c.Image)
				byShape[shape(c.Request.Kernel, m, c.Request.Progs, c.Request.Features)] = img
				addrsOf[shape(c.Request.Kernel, m, c.Request.Progs, c.Request.Features)] = c.Request.Addrs
			}
		}
		matched := 0
		for _, g := range jittest.Cases(arch) {
			req := g.Req
			m, err := req.Model()
			if err != nil {
				t.Fatal(err)
			}
			key := shape(req.Kernel, m, req.Progs, req.Features)
			want, ok := byShape[key]
			if !ok {
				continue
			}
			img, _, err := generate(&req)
			if err != nil {
				t.Errorf("%s/%s: %v", arch, g.Name, err)
				continue
			}
			if err := SameModuloAddresses(string(arch), img.Code, want); err != nil {
				// An address can change the length of its own load (riscv64's emit_imm picks
				// c.addiw for a small low part, arm64 6.12 a shorter mov run): then the golden
				// request, at the kernel image's addresses, must give the kernel's bytes.
				at := req
				at.Addrs = addrsOf[key]
				if img2, _, err2 := generate(&at); err2 != nil || !bytes.Equal(img2.Code, want) {
					t.Errorf("golden %s/%s differs from the kernel's image of the same shape: %v (and at its addresses: %v)", arch, g.Name, err, err2)
				}
			}
			matched++
		}
		t.Logf("%s: %d golden cases have a kernel image of the same shape", arch, matched)
		if matched < 3 {
			t.Errorf("%s: only %d golden cases matched a corpus shape", arch, matched)
		}
	}
}
