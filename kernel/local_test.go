package kernel

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/kernel/vm"
)

// cachedDebian is a cached Debian kernel of a profile (trampjit kernel fetch): its vmlinuz
// and config; the test skips when it is not cached (no network in tests that boot nothing).
func cachedDebian(t *testing.T, profile, arch string) *vm.KernelImage {
	t.Helper()
	cache, err := vm.CacheDir()
	if err != nil {
		t.Skip(err)
	}
	b, err := os.ReadFile(filepath.Join(cache, "kernels", profile+"-"+arch, "kernel.json"))
	if err != nil {
		t.Skipf("the %s-%s kernel is not cached (trampjit kernel fetch --kernel %s --arch %s): %v", profile, arch, profile, arch, err)
	}
	var k vm.KernelImage
	if err := json.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{k.Path, k.Config} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("cached %s-%s: %v", profile, arch, err)
		}
	}
	return &k
}

// linkAs makes name in dir (created) a symbolic link to target.
func linkAs(t *testing.T, target, dir, name string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOpenLocalConfig: the config is --config, else embedded (Debian's kernels embed none),
// else config-<release> beside the file, else a build tree's .config; one for another
// architecture is skipped when found and refused when given.
func TestOpenLocalConfig(t *testing.T) {
	k := cachedDebian(t, "6.12", "amd64")
	arm := cachedDebian(t, "6.12", "arm64")
	root := t.TempDir()

	// /boot layout: vmlinuz-<release> with config-<release> beside it.
	boot := filepath.Join(root, "boot")
	img := linkAs(t, k.Path, boot, "vmlinuz-"+k.Release)
	linkAs(t, k.Config, boot, "config-"+k.Release)
	l, err := OpenLocal(img, "")
	if err != nil {
		t.Fatal(err)
	}
	if l.File.Format != vm.FormatBzImage || l.File.Arch != "amd64" || l.File.Release != k.Release {
		t.Errorf("identified %s %s %s, want bzImage amd64 %s", l.File.Format, l.File.Arch, l.File.Release, k.Release)
	}
	if l.Config == nil || l.ConfigHow != "beside the kernel" || l.Config.Value("BPF_SYSCALL") != "y" {
		t.Errorf("config %v, %q; want config-%s beside the kernel", l.Config, l.ConfigHow, k.Release)
	}
	if n := l.ConfigNote(); !strings.Contains(n, "config-"+k.Release+" (beside the kernel)") {
		t.Errorf("note %q", n)
	}

	// A build tree: arch/x86/boot/bzImage, .config at the top.
	tree := filepath.Join(root, "linux")
	img = linkAs(t, k.Path, filepath.Join(tree, "arch", "x86", "boot"), "bzImage")
	linkAs(t, k.Config, tree, ".config")
	if l, err = OpenLocal(img, ""); err != nil {
		t.Fatal(err)
	}
	if l.Config == nil || l.ConfigHow != "the build tree's .config" || l.Config.Source != filepath.Join(tree, ".config") {
		t.Errorf("build tree: config %+v, %q", l.Config, l.ConfigHow)
	}

	// Another architecture's config beside it is skipped, and said so.
	odd := filepath.Join(root, "odd")
	img = linkAs(t, k.Path, odd, "vmlinuz-"+k.Release)
	linkAs(t, arm.Config, odd, "config-"+k.Release)
	if l, err = OpenLocal(img, ""); err != nil {
		t.Fatal(err)
	}
	if l.Config != nil || len(l.Skipped) != 1 || !strings.Contains(l.Skipped[0], "an arm64 config") {
		t.Errorf("arm64 config beside an amd64 kernel: config %v, skipped %q", l.Config, l.Skipped)
	}
	if n := l.ConfigNote(); !strings.Contains(n, "the requirements cannot be checked before boot") || !strings.Contains(n, "skipped") {
		t.Errorf("note %q", n)
	}
	// ... and refused when given.
	if _, err := OpenLocal(img, arm.Config); err == nil || !strings.Contains(err.Error(), "is an arm64 config") {
		t.Errorf("--config of arm64 for an amd64 kernel: %v", err)
	}
	// --config wins over what is beside the file.
	if l, err = OpenLocal(filepath.Join(boot, "vmlinuz-"+k.Release), k.Config); err != nil || l.ConfigHow != "--config" || l.Config.Source != k.Config {
		t.Errorf("--config: %+v, %v", l, err)
	}
	if _, err := OpenLocal(filepath.Join(boot, "vmlinuz-"+k.Release), filepath.Join(root, "nonexistent")); err == nil || !strings.Contains(err.Error(), "--config") {
		t.Errorf("missing --config file: %v", err)
	}
}

// riscvImage is a riscv64 Image as Documentation/arch/riscv/boot-image-header.rst lays its
// header out (magic "RISCV\0\0\0" at 48, "RSC\x05" at 56), with a banner after it.
func riscvImage(release string) []byte {
	h := make([]byte, 64)
	binary.LittleEndian.PutUint64(h[8:], 0x200000) // text_offset
	binary.LittleEndian.PutUint64(h[16:], 4096)    // image_size
	binary.LittleEndian.PutUint32(h[36:], 2)       // version 0.2
	copy(h[48:], "RISCV\x00\x00\x00")
	copy(h[56:], "RSC\x05")
	body := make([]byte, 4096-64)
	copy(body[128:], "Linux version "+release+" (builder@host) (riscv64-linux-gnu-gcc 14.2.0) #1 SMP PREEMPT Tue Dec  1 00:00:00 UTC 2026\n\x00")
	return append(h, body...)
}

// TestIdentifyKernelRefuses: what cannot be booted is refused naming the file and why; a
// riscv64 Image is not among them.
func TestIdentifyKernelRefuses(t *testing.T) {
	dir := t.TempDir()
	rv := filepath.Join(dir, "Image")
	if err := os.WriteFile(rv, riscvImage("6.12.0-rc1"), 0o644); err != nil {
		t.Fatal(err)
	}
	// riscv64 guests boot (qemu virt with OpenSBI): its Image is identified, not refused.
	if f, err := IdentifyKernel(rv); err != nil || f.Arch != "riscv64" || f.Release != "6.12.0-rc1" {
		t.Errorf("riscv64 Image: %+v, %v; want riscv64 6.12.0-rc1", f, err)
	}
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, bytes.Repeat([]byte("not a kernel\n"), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := IdentifyKernel(text); err == nil || !strings.Contains(err.Error(), "not a kernel image") || !strings.Contains(err.Error(), text) {
		t.Errorf("a text file: %v", err)
	}
}

// TestCheckLocalConfig: a config without CONFIG_BPF_SYSCALL is refused naming it and its
// cost; Debian's own config passes with warnings only, each with the cases it stops.
func TestCheckLocalConfig(t *testing.T) {
	k := cachedDebian(t, "6.12", "amd64")
	data, err := os.ReadFile(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte("\nCONFIG_BPF_SYSCALL=y\n")) || !bytes.Contains(data, []byte("\nCONFIG_DEBUG_INFO_BTF=y\n")) {
		t.Fatalf("%s: Debian's config no longer sets BPF_SYSCALL and DEBUG_INFO_BTF", k.Config)
	}
	edited := bytes.Replace(data, []byte("\nCONFIG_BPF_SYSCALL=y\n"), []byte("\n# CONFIG_BPF_SYSCALL is not set\n"), 1)
	edited = bytes.Replace(edited, []byte("\nCONFIG_DEBUG_INFO_BTF=y\n"), []byte("\n# CONFIG_DEBUG_INFO_BTF is not set\n"), 1)
	bad := filepath.Join(t.TempDir(), "config-nobpf")
	if err := os.WriteFile(bad, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := Catalog("6.12", "amd64")
	l, err := OpenLocal(k.Path, bad)
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	err = checkLocalConfig(l, "amd64", cases, &progress)
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("no BPF_SYSCALL: %v, want a *ConfigError", err)
	}
	for _, w := range []string{"CONFIG_BPF_SYSCALL is not set", "CONFIG_DEBUG_INFO_BTF is not set", "nothing booted", bad} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	for _, m := range ce.Missing {
		if m.Cost == "" || !m.Fatal {
			t.Errorf("%s: fatal %v, cost %q", m.Option, m.Fatal, m.Cost)
		}
	}

	l, err = OpenLocal(k.Path, k.Config)
	if err != nil {
		t.Fatal(err)
	}
	progress.Reset()
	if err := checkLocalConfig(l, "amd64", cases, &progress); err != nil {
		t.Fatalf("Debian's own config: %v", err)
	}
	// Debian's cloud kernels lack FUNCTION_ERROR_INJECTION (docs/kernel-facts.md), which the
	// corpus shows as fmod_ret refusals: the warning counts the catalogue's cases it stops.
	if !strings.Contains(progress.String(), "warning: CONFIG_FUNCTION_ERROR_INJECTION is not set") || !strings.Contains(progress.String(), "cases selected") {
		t.Errorf("warnings:\n%s", progress.String())
	}
	// A kernel without a config cannot be checked; nothing is refused.
	if err := checkLocalConfig(&LocalKernel{File: l.File}, "amd64", cases, &progress); err != nil {
		t.Errorf("no config: %v", err)
	}
}

// TestLocalKernelRecord: kernel.json of a --vmlinuz capture names the file, its hash, banner
// and config source, no package; CorpusPin reads it as the zero pin, and a capture of a
// profile's kernel into that directory is refused (it needs the file again).
func TestLocalKernelRecord(t *testing.T) {
	rec := &vm.KernelImage{Kernel: "6.12", Arch: "amd64", Release: "6.12.95+deb12-cloud-amd64", Source: "vmlinuz",
		Path: "/k/vmlinuz-6.12.95+deb12-cloud-amd64", SHA256: strings.Repeat("ab", 32), Banner: "Linux version 6.12.95+deb12-cloud-amd64 (x) #1 SMP",
		Config: "/k/config-6.12.95+deb12-cloud-amd64"}
	files, err := corpusFiles(&CaptureReport{Kernel: rec})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "kernel.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"kernel": "6.12", "arch": "amd64", "release": rec.Release, "source": "vmlinuz",
		"path": rec.Path, "sha256": rec.SHA256, "banner": rec.Banner, "config": rec.Config}
	if len(got) != len(want) {
		t.Errorf("kernel.json has %d fields, want %d:\n%s", len(got), len(want), b)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("kernel.json %s = %q, want %q", k, got[k], v)
		}
	}
	if p, err := CorpusPin(dir); err != nil || p != (vm.Pin{}) {
		t.Errorf("CorpusPin = %+v, %v; want the zero pin", p, err)
	}
	if err := checkRecapture(dir, false); err == nil || !strings.Contains(err.Error(), "--vmlinuz "+rec.Path) {
		t.Errorf("re-capture without --vmlinuz: %v", err)
	}
	if err := checkRecapture(dir, true); err != nil {
		t.Errorf("re-capture with --vmlinuz: %v", err)
	}
	// A profile corpus's kernel.json is no obstacle.
	if err := checkRecapture(filepath.Join(corpusRoot, "6.12-amd64"), false); err != nil {
		t.Errorf("profile corpus: %v", err)
	}
}
