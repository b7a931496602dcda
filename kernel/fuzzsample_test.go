package kernel

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trampjit/trampjit/btfmodel"
)

var qemuOf = map[string]string{"amd64": "qemu-system-x86_64", "arm64": "qemu-system-aarch64", "riscv64": "qemu-system-riscv64"}

// fuzzedProfiles are the profile/arches the image-fuzz campaign has run on and whose
// disagreements are fixed. TRAMPJIT_FUZZ_ALL=1 runs the sample on every corpus, one not
// listed here too (a new profile's, before its disagreements are fixed).
var fuzzedProfiles = map[string]bool{"6.12-amd64": true, "7.2-amd64": true, "6.12-arm64": true, "7.2-arm64": true,
	"6.12-riscv64": true, "7.2-riscv64": true, "6.1-amd64": true, "6.1-arm64": true}

// TestImageFuzzSample is make test's share of `make image-fuzz`: 50 random requests (seed 1)
// per fuzzed profile/arch, captured in one guest each and compared with the model. Every
// one must agree with the kernel (docs/image-fuzz.md explains the refusals that count as
// agreeing without the model predicting them).
func TestImageFuzzSample(t *testing.T) {
	if testing.Short() {
		t.Skip("boots qemu guests; skipped with -short")
	}
	dirs, _ := filepath.Glob(filepath.Join("..", "testdata", "kernel", "*-*"))
	for _, dir := range dirs {
		name := filepath.Base(dir)
		kernel, arch, _ := strings.Cut(name, "-")
		if _, err := btfmodel.ParseKernel(kernel); err != nil {
			continue
		}
		if !fuzzedProfiles[name] && os.Getenv("TRAMPJIT_FUZZ_ALL") == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "vmlinux.btf.xz")); err != nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			if _, err := exec.LookPath(qemuOf[arch]); err != nil {
				t.Skipf("%s is not installed", qemuOf[arch])
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
			defer cancel()
			rep, err := ImageFuzz(ctx, FuzzOptions{Kernel: kernel, Arch: arch, Count: 50, Seed: 1, Corpus: dir, Batch: 50})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d requests: %d attached, %d refused, %d agree (%d unmodelled), %d boots, %v per case",
				rep.Requests, rep.Attached, rep.Refused, rep.Agreeing, rep.Unmodelled, rep.Boots, rep.PerCase)
			if rep.Requests != 50 || rep.NotCaptured != 0 {
				t.Errorf("%d requests, %d not captured: want 50, all captured", rep.Requests, rep.NotCaptured)
			}
			for _, d := range rep.Found {
				t.Errorf("%s (%s %v): %s: %s %s", d.Original.ID, d.Case.Func, d.Case.Progs, d.Kind, d.Original.Note, d.Original.Kernel)
			}
		})
	}
}
