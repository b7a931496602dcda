package emu

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/kernel"
)

// A trampoline that writes into the caller's frame is caught, and the failure prints the
// changed slot as the little-endian u64 the bytes hold. The image stores 0x11223344
// (mov qword [rax], imm32, sign-extended) into the frame's last slot and returns; the
// expected text is that value, not what the checker computes.
func TestFrameChangePrintsSlot(t *testing.T) {
	cases, err := kernel.ReadCorpus("../testdata/kernel/6.12-amd64")
	if err != nil {
		t.Fatal(err)
	}
	var c *kernel.CorpusCase
	for i := range cases {
		if cases[i].ID == "bpf_fentry_test2-fexit" {
			c = &cases[i]
		}
	}
	if c == nil {
		t.Fatal("6.12-amd64 bpf_fentry_test2-fexit not in the corpus")
	}
	slot := uint64(sp0 + frameLen - 8)
	code := []byte{0x48, 0xb8} // movabs rax, slot
	code = binary.LittleEndian.AppendUint64(code, slot)
	code = append(code, 0x48, 0xc7, 0x00, 0x44, 0x33, 0x22, 0x11) // mov qword [rax], 0x11223344
	code = append(code, 0xc3)                                     // ret
	r, err := RunImage(c.Request, code, Options{Args: []uint64{0x1111, 0x2222}})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("the caller's frame at sp+%#x changed: 0x11223344, was ", frameLen-8)
	for _, ch := range r.Failed() {
		if ch.Name == CheckStackArgs {
			if !strings.HasPrefix(ch.Detail, want) {
				t.Errorf("detail %q, want it to start %q", ch.Detail, want)
			}
			return
		}
	}
	t.Errorf("no %s failure for a store into the caller's frame", CheckStackArgs)
}
