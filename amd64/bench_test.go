package amd64

import (
	"fmt"
	"testing"

	"github.com/trampjit/trampjit/jit"
)

// BenchmarkGenerate times one image on 6.12 for bpf_fentry_test2 with n programs, alternating
// fentry and fexit (1: fentry only; 2: the captured shape).
func BenchmarkGenerate(b *testing.B) {
	for _, n := range []int{1, 2, 4, 16, 38} {
		progs := make([]jit.Prog, n)
		for i := range progs {
			progs[i] = []jit.Prog{fentry, fexit}[i%2]
		}
		tr := tramp(k612, fentryTest2(), progs...)
		b.Run(fmt.Sprintf("progs=%d", n), func(b *testing.B) {
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
	img, err := (Backend{}).Generate(tramp(k612, fentryTest2(), fentry, fexit))
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
