package riscv64_test

import (
	"encoding/hex"
	"testing"

	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/riscv64"
)

// TestFrameCorpus decodes every image the riscv64 kernels produced (tracing and struct_ops,
// every profile) and checks that each of its frame accesses lands in a slot of the frame the
// model declares for the case, and that every slot is used (riscv64.CheckFrame).
func TestFrameCorpus(t *testing.T) {
	for k, dir := range corpora {
		cases, err := kernel.ReadCorpus(dir)
		if err != nil {
			t.Fatal(err)
		}
		var st riscv64.FrameStats
		for i := range cases {
			c := &cases[i]
			if c.Image == "" {
				continue
			}
			code, err := hex.DecodeString(c.Image)
			if err != nil {
				t.Fatal(err)
			}
			tr, img, err := jit.Generate(c.Request)
			if err != nil {
				t.Errorf("%s: %v", c.ID, err)
				continue
			}
			kimg := *img
			kimg.Code = code // the kernel's bytes; the sections only mark the kCFI word
			riscv64.CheckFrame(t, c.ID, tr, &kimg, &st)
		}
		images, slots, accesses := st.Counts()
		t.Logf("%s: %d kernel images, %d slots, %d accesses attributed", k, images, slots, accesses)
		if images < 150 {
			t.Errorf("%s: only %d images", k, images)
		}
	}
}
