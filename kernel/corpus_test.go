package kernel

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel/vm"
)

const corpusRoot = "../testdata/kernel"

// corpora lists the committed corpus directories (testdata/kernel/<kernel>-<arch>) of the
// profiles the model knows (a corpus is committed before its profile is modelled).
func corpora(t *testing.T) []string {
	dirs, _ := filepath.Glob(filepath.Join(corpusRoot, "*-*"))
	var out []string
	for _, d := range dirs {
		k, a, _ := strings.Cut(filepath.Base(d), "-")
		if !modelled(k) {
			t.Logf("%s: profile %s is not modelled yet; its corpus is not checked", d, k)
			continue
		}
		// An arch is checked once its backend is linked in, before btfmodel.Arches lists it
		// (riscv64).
		if _, _, err := jit.Lookup(btfmodel.Arch(a)); err != nil && !slices.Contains(btfmodel.Arches, btfmodel.Arch(a)) {
			t.Logf("%s: no %s backend yet; its corpus is not checked", d, a)
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "cases.jsonl")); err == nil {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		t.Fatal("no kernel corpus under testdata/kernel")
	}
	return out
}

// TestCorpusByteIdentical regenerates every case of every committed corpus: each image the
// kernel built must come out byte-identical, and each refusal must be refused for the kernel's
// reason (refusals the model cannot predict from BTF are counted and must stay few).
func TestCorpusByteIdentical(t *testing.T) {
	for _, dir := range corpora(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			cases, err := ReadCorpus(dir)
			if err != nil {
				t.Fatal(err)
			}
			images, same, refused, agreed, unmodelled := 0, 0, 0, 0, 0
			for i := range cases {
				d := Diff(&cases[i])
				if cases[i].Error == "" {
					images++
				} else {
					refused++
				}
				switch d.Verdict {
				case Match:
					if cases[i].Error == "" {
						same++
					} else {
						agreed++
					}
				case Unmodelled:
					unmodelled++
				default:
					t.Errorf("%s: %s at %#x: model %s, kernel %s %s", d.ID, d.Verdict, d.Offset, d.Model, d.Kernel, d.Note)
				}
			}
			t.Logf("%d/%d byte-identical; %d/%d refusals agree, %d unmodelled", same, images, agreed, refused-unmodelled, unmodelled)
			if images < 100 && !strings.HasSuffix(dir, "6.1-arm64") {
				t.Errorf("only %d captured images", images)
			}
			if unmodelled > 5 {
				t.Errorf("%d refusals not modelled", unmodelled)
			}
		})
	}
}

// sampleIDs are the corpus cases the guest test captures again, one of each shape.
var sampleIDs = []string{
	"bpf_fentry_test2-fentry-fexit", "bpf_fentry_test6-fentry2-fexit2", "bpf_fentry_test2-cookies-negative",
	"bpf_modify_return_test-fmod_ret-fexit", "tcp_v4_send_ack-fentry-fexit-func-ip", "sock_setsockopt-fentry-fexit",
	"bpf_lsm_file_open-lsm-fentry-fexit", "bpf-tj_args2-fentry-fexit", "do_exit-fexit", "net_dim-fentry",
	"bpf_fentry_test2-fentry", "bpf-tj_args4-fentry3-fexit3",
}

// TestGuestSample boots each corpus's kernel, captures a sample of its cases again, and finds
// them identical to the committed corpus modulo addresses (and refused for the same reason).
func TestGuestSample(t *testing.T) {
	if testing.Short() {
		t.Skip("boots qemu guests; skipped with -short")
	}
	t0 := time.Now()
	for _, dir := range corpora(t) {
		name := filepath.Base(dir)
		kernel, arch, _ := strings.Cut(name, "-")
		t.Run(name, func(t *testing.T) {
			qemu := map[string]string{"amd64": "qemu-system-x86_64", "arm64": "qemu-system-aarch64", "riscv64": "qemu-system-riscv64"}[arch]
			if _, err := exec.LookPath(qemu); err != nil {
				t.Skipf("%s is not installed: cannot boot the %s guest", qemu, name)
			}
			all, err := ReadCorpus(dir)
			if err != nil {
				t.Fatal(err)
			}
			pin, err := CorpusPin(dir)
			if err != nil {
				t.Fatal(err)
			}
			byID := map[string]*CorpusCase{}
			for i := range all {
				byID[all[i].ID] = &all[i]
			}
			var sample []Case
			for _, cs := range Catalog(kernel, arch) {
				for _, id := range sampleIDs {
					if cs.ID == id && byID[id] != nil {
						sample = append(sample, cs)
					}
				}
			}
			if len(sample) < 2 {
				t.Fatalf("only %d sample cases in the %s corpus", len(sample), name)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			rep, err := Capture(ctx, CaptureOptions{Kernel: kernel, Arch: arch, Cases: sample, Timeout: 3 * time.Minute, Pin: pin})
			if errors.Is(err, vm.ErrSeriesGone) {
				t.Skipf("%v; the offline checks of the %s corpus still run", err, name)
			}
			if err != nil {
				t.Fatal(err)
			}
			// Another build of the series (the pinned one left the archive): the fresh
			// capture is checked against the model only, not against the corpus.
			other := pin.Version != "" && rep.Kernel.Version != pin.Version
			if other {
				t.Logf("%s: booted %s %s, the corpus has %s: comparing the model with the fresh capture", name, rep.Kernel.Package, rep.Kernel.Version, pin.Version)
			}
			for _, got := range rep.Cases {
				want := byID[got.ID]
				switch {
				case other && got.Error != "":
				case other:
					got.Request.SetDir(dir)
					if d := Diff(&got); d.Verdict != Match {
						t.Errorf("%s: fresh capture vs model: %s at %#x: %s / %s", got.ID, d.Verdict, d.Offset, d.Model, d.Kernel)
					}
				case want.Error != "" || got.Error != "":
					if got.KernelMessage() != want.KernelMessage() || got.Errno != want.Errno {
						t.Errorf("%s: refused %q %s, corpus says %q %s", got.ID, got.KernelMessage(), got.Errno, want.KernelMessage(), want.Errno)
					}
				default:
					g, _ := hex.DecodeString(got.Image)
					w, _ := hex.DecodeString(want.Image)
					// On arm64 the length of a mov-wide sequence depends on the address it
					// loads, so only x86 images compare modulo addresses; on both, the fresh
					// capture must be the same request and regenerate byte for byte.
					if err := SameModuloAddresses(arch, g, w); err != nil && arch == "amd64" {
						t.Errorf("%s: %v", got.ID, err)
					}
					if got.Request.Func != want.Request.Func || fmt.Sprint(got.Request.Progs) != fmt.Sprint(want.Request.Progs) ||
						got.Request.Features != want.Request.Features {
						t.Errorf("%s: captured as %+v, corpus has %+v", got.ID, got.Request, want.Request)
					}
					// The new capture is also regenerated byte for byte.
					got.Request.SetDir(dir)
					if d := Diff(&got); d.Verdict != Match {
						t.Errorf("%s: fresh capture vs model: %s at %#x: %s / %s", got.ID, d.Verdict, d.Offset, d.Model, d.Kernel)
					}
				}
			}
			t.Logf("%s: %d cases captured again in %v", name, len(rep.Cases), rep.Boots[0].Duration)
		})
	}
	t.Logf("all guests: %v", time.Since(t0))
}

// modelled reports whether the model knows a profile.
func modelled(kernel string) bool {
	_, err := btfmodel.ParseKernel(kernel)
	return err == nil
}
