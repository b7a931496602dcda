package arm64

import (
	"fmt"
	"testing"

	"github.com/trampjit/trampjit/jit"
)

// BenchmarkGenerate times the captured shape (6.12, bpf_fentry_test2) with n programs,
// half fentry and half fexit.
func BenchmarkGenerate(b *testing.B) {
	for _, n := range []int{1, 2, 4, 16, 38} {
		b.Run(fmt.Sprintf("progs=%d", n), func(b *testing.B) {
			tr := captureTramp(capBase)
			tr.Fentry, tr.Fexit = progs(jit.Fentry, (n+1)/2, 1), progs(jit.Fexit, n/2, (n+1)/2+1)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := (Backend{}).Generate(tr); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCopyImage is the baseline for BenchmarkGenerate, measured in the same run: the
// least any generator does, allocating and writing the 2-program image's bytes.
func BenchmarkCopyImage(b *testing.B) {
	tr := captureTramp(capBase)
	img, err := (Backend{}).Generate(tr)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var sink []byte
	for b.Loop() {
		sink = append([]byte(nil), img.Code...)
	}
	_ = sink
}
