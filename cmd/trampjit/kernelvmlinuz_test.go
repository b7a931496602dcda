package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ulikunitz/xz"

	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/kernel/vm"
)

// Tests of kernel capture --vmlinuz: a kernel file instead of a profile's Debian package.
// cached612 is the cached Debian 6.12 amd64 kernel (vmlinuz and config), or a skip.
func cached612(t *testing.T) *vm.KernelImage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	k, err := kernel.Fetch(ctx, "6.12", "amd64", nil)
	if err != nil {
		t.Skipf("cannot fetch the 6.12-amd64 kernel: %v", err)
	}
	return k
}

// noCapture checks that nothing of a failed capture into out is left: out, out.partial,
// a staging directory, a work directory in tmp, a qemu naming tmp.
func noCapture(t *testing.T, out, tmp string) {
	t.Helper()
	if left, _ := filepath.Glob(out + "*"); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if tmp == "" {
		return
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "trampjit-*")); len(left) > 0 {
		t.Errorf("work directories left in TMPDIR: %v", left)
	}
	if b, err := exec.Command("pgrep", "-a", "-f", tmp).Output(); err == nil && len(b) > 0 {
		t.Errorf("processes still naming %s:\n%s", tmp, b)
	}
}

// TestKernelCaptureVmlinuzRefused: what cannot be captured is refused before anything
// boots, naming the file and the reason: a file that is no kernel, a riscv64 kernel given
// with --arch amd64, a
// config without CONFIG_BPF_SYSCALL; and the flags that contradict --vmlinuz.
func TestKernelCaptureVmlinuzRefused(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(t.TempDir(), "corpus")
	notKernel := filepath.Join(dir, "vmlinuz-notes")
	if err := os.WriteFile(notKernel, []byte(strings.Repeat("these are notes, not a kernel\n", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	// A riscv64 Image header (Documentation/arch/riscv/boot-image-header.rst) and banner.
	rv := make([]byte, 4096)
	copy(rv[48:], "RISCV\x00\x00\x00")
	copy(rv[56:], "RSC\x05")
	copy(rv[512:], "Linux version 6.12.0 (builder@host) (riscv64-linux-gnu-gcc 14.2.0) #1 SMP PREEMPT Tue Dec  1 00:00:00 UTC 2026\n\x00")
	riscv := filepath.Join(dir, "Image")
	if err := os.WriteFile(riscv, rv, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--vmlinuz", notKernel}, 1, []string{notKernel, "not a kernel image"}},
		{[]string{"--vmlinuz", riscv, "--arch", "amd64"}, 2, []string{"--arch amd64, but " + riscv + " is a kernel for riscv64"}},
		{[]string{"--vmlinuz", filepath.Join(dir, "absent")}, 1, []string{"absent: no such file"}},
		{[]string{"--vmlinuz", notKernel, "--kernel", "6.12"}, 2, []string{"--kernel names the Debian kernel of a profile", "--profile"}},
		{[]string{"--vmlinuz", notKernel, "--host"}, 2, []string{"not both"}},
		{[]string{"--profile", "6.12"}, 2, []string{"--profile chooses the model profile of a --vmlinuz or --host kernel"}},
		{[]string{"--config", notKernel}, 2, []string{"--config is the config of a --vmlinuz kernel"}},
	} {
		args := append([]string{"kernel", "capture", "-o", out}, c.args...)
		t0 := time.Now()
		code, _, errOut := trampjit(args...)
		for _, w := range c.want {
			if code != c.code || !strings.Contains(errOut, w) {
				t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, errOut, c.code, w)
			}
		}
		if d := time.Since(t0); d > 5*time.Second || strings.Contains(errOut, "booted in") {
			t.Errorf("%v: refused after %v: %s", c.args, d, errOut)
		}
		noCapture(t, out, "")
	}

	k := cached612(t)
	// --arch defaults to the file's; another one is an error naming both.
	code, _, errOut := trampjit("kernel", "capture", "--vmlinuz", k.Path, "--arch", "arm64", "-o", out)
	if code != 2 || !strings.Contains(errOut, "--arch arm64, but "+k.Path+" is a kernel for amd64") {
		t.Errorf("--arch arm64 on an amd64 bzImage: exit %d, %q", code, errOut)
	}
	// Debian's config with CONFIG_BPF_SYSCALL unset: refused before boot, naming it.
	cfg, err := os.ReadFile(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(cfg), "\nCONFIG_BPF_SYSCALL=y\n", "\n# CONFIG_BPF_SYSCALL is not set\n", 1)
	if edited == string(cfg) {
		t.Fatalf("%s does not set CONFIG_BPF_SYSCALL=y", k.Config)
	}
	noBPF := filepath.Join(dir, "config-nobpf")
	if err := os.WriteFile(noBPF, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	code, _, errOut = trampjit("kernel", "capture", "--vmlinuz", k.Path, "--config", noBPF, "-o", out)
	t.Logf("exit %d after %v:\n%s", code, time.Since(t0), errOut)
	for _, w := range []string{"kernel: " + k.Release + " (bzImage, " + k.Path + "); model profile: 6.12",
		"config: " + noBPF + " (--config)", "CONFIG_BPF_SYSCALL is not set", "nothing booted"} {
		if code != 1 || !strings.Contains(errOut, w) {
			t.Errorf("no BPF_SYSCALL: exit %d; stderr lacks %q", code, w)
		}
	}
	if d := time.Since(t0); d > 10*time.Second || strings.Contains(errOut, "booted in") {
		t.Errorf("no BPF_SYSCALL: refused after %v", d)
	}
	noCapture(t, out, "")
}

// brokenBzImages are two copies of a real bzImage that boot and never reach the agent: the
// first half of the file with the header's sizes cut to match (Documentation/arch/x86/
// boot.rst: setup_sects 0x1f1, syssize 0x1f4, payload_offset 0x248, payload_length 0x24c),
// and the whole file with the second half of its compressed payload zeroed.
func brokenBzImages(t *testing.T, src, dir string) (truncated, zeroed string) {
	t.Helper()
	d, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) < 0x250 || string(d[0x202:0x206]) != "HdrS" {
		t.Fatalf("%s is not a bzImage", src)
	}
	setup := (int(d[0x1f1]) + 1) * 512
	off := int(binary.LittleEndian.Uint32(d[0x248:]))
	n := int(binary.LittleEndian.Uint32(d[0x24c:]))
	half := append([]byte(nil), d[:len(d)/2]...)
	binary.LittleEndian.PutUint32(half[0x24c:], uint32(len(half)-setup-off))
	binary.LittleEndian.PutUint32(half[0x1f4:], uint32((len(half)-setup+15)/16))
	truncated = filepath.Join(dir, "bzImage-truncated")
	zero := append([]byte(nil), d...)
	p := setup + off
	clear(zero[p+n/2 : p+n-4])
	zeroed = filepath.Join(dir, "bzImage-zeroed")
	for name, data := range map[string][]byte{truncated: half, zeroed: zero} {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return truncated, zeroed
}

// TestKernelCaptureVmlinuzNeverReachesAgent: a kernel that boots and never reaches the
// agent fails within its --timeout with the console's last lines, leaves no qemu, no work
// directory, and neither DIR nor DIR.partial.
func TestKernelCaptureVmlinuzNeverReachesAgent(t *testing.T) {
	needGuest(t)
	k := cached612(t)
	bin := buildCLI(t)
	truncated, zeroed := brokenBzImages(t, k.Path, t.TempDir())
	for _, c := range []struct {
		name, img string
		want      []string
	}{
		// The decompressor unpacks a stream cut short: the guest dies at once.
		{"truncated", truncated, []string{"kernel failed to boot", "--- console tail ---"}},
		// It finds the corruption and halts (arch/x86/boot/compressed/misc.c error()).
		{"zeroed", zeroed, []string{"guest hung: no agent output within 30s", "--- console tail ---", "-- System halted"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			out := filepath.Join(t.TempDir(), "corpus")
			cmd := exec.Command(bin, "kernel", "capture", "--vmlinuz", c.img, "--config", k.Config,
				"--only", "bpf_fentry_test2-fentry-fexit", "--timeout", "30s", "-o", out)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			t0 := time.Now()
			b, _ := cmd.CombinedOutput()
			d := time.Since(t0)
			t.Logf("exit %d after %v:\n%s", cmd.ProcessState.ExitCode(), d, b)
			if cmd.ProcessState.ExitCode() != 1 {
				t.Errorf("exit %d, want 1", cmd.ProcessState.ExitCode())
			}
			if d > 45*time.Second {
				t.Errorf("took %v: more than the 30s timeout + 15s", d)
			}
			for _, w := range append(c.want, c.img) {
				if !strings.Contains(string(b), w) {
					t.Errorf("output lacks %q", w)
				}
			}
			noCapture(t, out, tmp)
		})
	}
}

// TestKernelCaptureVmlinuz captures Debian's 6.12 amd64 bzImage as a file (--vmlinuz, its
// config found beside it): the images equal the profile corpus's modulo addresses, the
// refusals are the corpus's, kernel.json names the file, and the BTF is in the corpus.
func TestKernelCaptureVmlinuz(t *testing.T) {
	needGuest(t)
	k := cached612(t)
	const sample = "bpf_fentry_test2-fentry-fexit,bpf_fentry_test2-fexit3,tcp_v4_connect-fentry2-fexit2-func-ip,tcp_v4_connect-fmod_ret"
	out := filepath.Join(t.TempDir(), "corpus")
	t0 := time.Now()
	code, stdout, errOut := trampjit("kernel", "capture", "--vmlinuz", k.Path, "--only", sample, "-o", out, "--color", "never")
	t.Logf("exit %d after %v:\n%s\n%s", code, time.Since(t0), stdout, errOut)
	if code != 0 {
		t.Fatal("capture failed")
	}
	for _, w := range []string{"kernel: " + k.Release + " (bzImage, " + k.Path + "); model profile: 6.12 (the nearest lower; --profile to choose)",
		"config: " + k.Config + " (beside the kernel)"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q", w)
		}
	}
	got, err := kernel.ReadCorpus(out)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := kernel.ReadCorpus("../../testdata/kernel/6.12-amd64")
	if err != nil {
		t.Fatal(err)
	}
	refByID := map[string]kernel.CorpusCase{}
	for _, c := range ref {
		refByID[c.ID] = c
	}
	if len(got) != 4 {
		t.Fatalf("%d cases, want 4", len(got))
	}
	for _, c := range got {
		r := refByID[c.ID]
		if c.Request.Kernel != "6.12" || c.Request.BTF != "vmlinux.btf.xz" {
			t.Errorf("%s: request kernel %q btf %q", c.ID, c.Request.Kernel, c.Request.BTF)
		}
		if (c.Image == "") != (r.Image == "") || c.Errno != r.Errno {
			t.Errorf("%s: image %d bytes, errno %q; the corpus: %d bytes, %q", c.ID, len(c.Image)/2, c.Errno, len(r.Image)/2, r.Errno)
			continue
		}
		if c.Image == "" {
			continue
		}
		a, _ := hex.DecodeString(c.Image)
		b, _ := hex.DecodeString(r.Image)
		if err := kernel.SameModuloAddresses("amd64", a, b); err != nil {
			t.Errorf("%s: differs from the 6.12-amd64 corpus beyond addresses: %v", c.ID, err)
		}
	}
	// kernel.json: the file, its hash, banner and config; no package, so the zero pin.
	b, err := os.ReadFile(filepath.Join(out, "kernel.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]string
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(k.Path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if rec["source"] != "vmlinuz" || rec["path"] != k.Path || rec["sha256"] != hex.EncodeToString(sum[:]) ||
		!strings.HasPrefix(rec["banner"], "Linux version "+k.Release+" ") || rec["config"] != k.Config ||
		rec["kernel"] != "6.12" || rec["arch"] != "amd64" || rec["release"] != k.Release || rec["package"] != "" {
		t.Errorf("kernel.json:\n%s", b)
	}
	if p, err := kernel.CorpusPin(out); err != nil || p != (vm.Pin{}) {
		t.Errorf("CorpusPin = %+v, %v; want the zero pin", p, err)
	}
	var info struct{ Release string }
	if b, err := os.ReadFile(filepath.Join(out, "info.json")); err != nil || json.Unmarshal(b, &info) != nil || info.Release != k.Release {
		t.Errorf("info.json release %q, want %q (%v)", info.Release, k.Release, err)
	}
	// The BTF: xz of the guest's /sys/kernel/btf/vmlinux (magic 0xeb9f).
	if code, _, e := trampjit("diff", "--corpus", out); code != 0 {
		t.Errorf("diff --corpus: exit %d: %s", code, e)
	}
	xzb, err := os.ReadFile(filepath.Join(out, "vmlinux.btf.xz"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := xz.NewReader(bytes.NewReader(xzb))
	if err != nil {
		t.Fatal(err)
	}
	var magic [2]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil || binary.LittleEndian.Uint16(magic[:]) != 0xeb9f {
		t.Errorf("vmlinux.btf.xz: magic %x, %v", magic, err)
	}
	// A re-capture of this corpus needs the file: a profile's kernel is refused before boot.
	before := readTree(t, out)
	code, _, errOut = trampjit("kernel", "capture", "--kernel", "6.12", "--only", "bpf_fentry_test2-fentry-fexit", "-o", out)
	if code != 1 || !strings.Contains(errOut, "re-capture it with --vmlinuz "+k.Path) || strings.Contains(errOut, "booted in") {
		t.Errorf("re-capture with --kernel: exit %d, %q", code, errOut)
	}
	if after := readTree(t, out); len(after) != len(before) || after["cases.jsonl"] != before["cases.jsonl"] {
		t.Error("the refused re-capture changed the corpus")
	}
}

// TestKernelCaptureVmlinuzReleaseMismatch: a bzImage whose header names another release
// than the kernel inside (kernel_version, Documentation/arch/x86/boot.rst: the pointer at
// 0x20e, +0x200) is booted, and the capture says loudly that the guest ran something else;
// kernel.json keeps a note of it.
func TestKernelCaptureVmlinuzReleaseMismatch(t *testing.T) {
	needGuest(t)
	k := cached612(t)
	d, err := os.ReadFile(k.Path)
	if err != nil {
		t.Fatal(err)
	}
	kv := int(binary.LittleEndian.Uint16(d[0x20e:])) + 0x200
	end := kv + bytes.IndexByte(d[kv:], 0)
	i := kv + bytes.Index(d[kv:end], []byte(k.Release))
	if i < kv {
		t.Fatalf("%s: kernel_version %q does not start with %s", k.Path, d[kv:end], k.Release)
	}
	fake := strings.Replace(k.Release, "6.12.", "6.13.", 1)
	copy(d[i:], fake)
	img := filepath.Join(t.TempDir(), "bzImage")
	if err := os.WriteFile(img, d, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "corpus")
	code, _, errOut := trampjit("kernel", "capture", "--vmlinuz", img, "--config", k.Config, "--only", "bpf_fentry_test2-fentry", "-o", out)
	t.Logf("exit %d\n%s", code, errOut)
	want := "WARNING: RELEASE MISMATCH: the guest ran " + k.Release + ", but " + img + " says " + fake
	if code != 0 || !strings.Contains(errOut, "kernel: "+fake+" (bzImage") || !strings.Contains(errOut, want) ||
		!strings.Contains(errOut, "warning: the config is for 6.12.") {
		t.Errorf("exit %d; want the file's release stated, then %q", code, want)
	}
	var rec map[string]string
	if b, err := os.ReadFile(filepath.Join(out, "kernel.json")); err != nil || json.Unmarshal(b, &rec) != nil ||
		!strings.Contains(rec["note"], "the guest ran "+k.Release) || rec["release"] != fake {
		t.Errorf("kernel.json: %v, %v", rec, err)
	}
}
