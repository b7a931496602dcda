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
			for b.Loop() {
				if _, err := (Backend{}).Generate(tr); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
