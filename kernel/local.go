package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/kernel/vm"
)

// A local kernel is a kernel image file given by path (capture --vmlinuz): a bzImage, an
// arm64 Image, Image.gz or EFI zboot, built by the user or taken from anywhere. Nothing is
// fetched; the file's own release decides the model profile, and its config (given, embedded,
// or found beside it) is checked before anything boots.

// LocalKernel is an identified kernel file with the config found for it.
type LocalKernel struct {
	File *vm.KernelFile
	// Config is nil when none was found: the requirements cannot be checked before boot.
	Config *vm.KernelConfig
	// ConfigHow says how Config was found: "--config", "CONFIG_IKCONFIG" (embedded),
	// "beside the kernel", "the build tree's .config".
	ConfigHow string
	// Skipped are configs looked at and not taken, with the reason (another architecture).
	Skipped []string
}

// IdentifyKernel reads and identifies a kernel file (vm.OpenKernelFile) and refuses what
// trampjit cannot boot or model: an architecture without a guest, a file with no release.
func IdentifyKernel(path string) (*vm.KernelFile, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	f, err := vm.OpenKernelFile(abs)
	if err != nil {
		return nil, err
	}
	switch f.Arch {
	case "amd64", "arm64", "riscv64":
	default:
		return nil, fmt.Errorf("%s: %s kernel (%s): trampjit boots amd64, arm64 and riscv64 guests only", path, an(f.Arch), f.Format)
	}
	if f.Release == "" {
		return nil, fmt.Errorf("%s: %s with no release string (no \"Linux version\" banner found): trampjit cannot tell which kernel it is", path, f.Format)
	}
	return f, nil
}

// OpenLocal identifies the kernel file at path and finds its config: configPath when given,
// else the one embedded in the kernel (CONFIG_IKCONFIG), else config-<release> beside the
// file (as /boot and Debian's packages keep it), else the .config of the build tree the file
// is in (arch/x86/boot/bzImage: three directories up). A config found, not given, for
// another architecture is skipped; a given one is an error.
func OpenLocal(path, configPath string) (*LocalKernel, error) {
	f, err := IdentifyKernel(path)
	if err != nil {
		return nil, err
	}
	l := &LocalKernel{File: f}
	if configPath != "" {
		c, err := vm.ReadKernelConfig(configPath)
		if err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		if a := c.Arch(); a != "" && a != f.Arch {
			return nil, fmt.Errorf("--config %s is %s config; %s is %s kernel", configPath, an(a), path, an(f.Arch))
		}
		if abs, err := filepath.Abs(configPath); err == nil {
			c.Source = abs
		}
		l.Config, l.ConfigHow = c, "--config"
		return l, nil
	}
	c, err := f.KernelConfig()
	if err != nil {
		return nil, err
	}
	if c != nil {
		l.Config, l.ConfigHow = c, "CONFIG_IKCONFIG"
		return l, nil
	}
	dir := filepath.Dir(f.Path)
	cands := []struct{ path, how string }{{filepath.Join(dir, "config-"+f.Release), "beside the kernel"}}
	for i, d := 0, dir; i < 4; i, d = i+1, filepath.Dir(d) {
		cands = append(cands, struct{ path, how string }{filepath.Join(d, ".config"), "the build tree's .config"})
		if d == filepath.Dir(d) {
			break
		}
	}
	for _, cand := range cands {
		if !fileExists(cand.path) {
			continue
		}
		c, err := vm.ReadKernelConfig(cand.path)
		if err != nil {
			l.Skipped = append(l.Skipped, fmt.Sprintf("%s: %v", cand.path, err))
			continue
		}
		if a := c.Arch(); a != "" && a != f.Arch {
			l.Skipped = append(l.Skipped, fmt.Sprintf("%s: %s config, the kernel is %s", cand.path, an(a), f.Arch))
			continue
		}
		l.Config, l.ConfigHow = c, cand.how
		return l, nil
	}
	return l, nil
}

// ConfigNote says which config was used, or that none was, for the line a capture prints
// before it boots.
func (l *LocalKernel) ConfigNote() string {
	if l.Config == nil {
		s := fmt.Sprintf("no kernel config (no --config, no CONFIG_IKCONFIG in the image, no config-%s beside it, no .config in its build tree): "+
			"the requirements cannot be checked before boot, and x86 IBT / arm64 BTI are taken as off", l.File.Release)
		for _, sk := range l.Skipped {
			s += "; skipped " + sk
		}
		return s
	}
	src := l.Config.Source + " (" + l.ConfigHow + ")"
	note := "config: " + src
	if rel := l.Config.Release(); rel != "" {
		if cv, err := btfmodel.ParseVersion(rel); err == nil {
			if kv, err := btfmodel.ReleaseVersion(l.File.Release); err == nil && cv != kv {
				note += fmt.Sprintf("; warning: the config is for %s, the kernel is %s", rel, l.File.Release)
			}
		}
	}
	return note
}

// ConfigError is a kernel config that lacks what a capture cannot do without: nothing booted.
type ConfigError struct {
	Kernel  string // the file
	Source  string // the config's
	Missing []vm.MissingOption
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s cannot be captured: its config (%s) lacks what every case needs; nothing booted:", e.Kernel, e.Source)
	for _, m := range e.Missing {
		fmt.Fprintf(&b, "\n  %s %s: %s", m.Option, optionState(m.Value), m.Cost)
	}
	return b.String()
}

func optionState(v string) string {
	switch v {
	case "":
		return "is not set"
	case "m":
		return "is a module (=m; the guest loads none)"
	}
	return fmt.Sprintf("is %q", v)
}

// checkLocalConfig runs vm.CheckConfig for the cases about to be captured: a fatal miss is a
// *ConfigError; the others are a warning each on progress, with how many cases they stop.
func checkLocalConfig(l *LocalKernel, arch string, cases []Case, progress io.Writer) error {
	if l.Config == nil {
		return nil
	}
	miss := vm.CheckConfig(l.Config, arch, cases)
	if fatal := vm.Fatal(miss); len(fatal) > 0 {
		return &ConfigError{Kernel: l.File.Path, Source: l.Config.Source, Missing: fatal}
	}
	for _, m := range miss {
		if len(m.Cases) == 0 {
			fmt.Fprintf(progress, "note: %s %s: %s; none of the %d cases selected needs it\n", m.Option, optionState(m.Value), m.Cost, len(cases))
			continue
		}
		fmt.Fprintf(progress, "warning: %s %s: %s; it stops %d of the %d cases selected\n", m.Option, optionState(m.Value), m.Cost, len(m.Cases), len(cases))
	}
	return nil
}

// localImages are what a capture of l boots (the boot image qemu can load, and a config
// file features() can read, both in work) and what it records (the file, its hash, banner
// and the config's source).
func localImages(l *LocalKernel, profile, arch, work string) (boot, record *vm.KernelImage, err error) {
	f := l.File
	record = &vm.KernelImage{Kernel: profile, Arch: arch, Release: f.Release, Source: "vmlinuz",
		Path: f.Path, SHA256: f.SHA256, Banner: f.Banner}
	boot = &vm.KernelImage{Kernel: profile, Arch: arch, Release: f.Release}
	if boot.Path, err = f.BootImage(work); err != nil {
		return nil, nil, err
	}
	if l.Config != nil {
		record.Config = l.Config.Source
		if fileExists(l.Config.Source) {
			boot.Config = l.Config.Source
		} else if data, cerr := f.Config(); cerr == nil && data != nil {
			boot.Config = filepath.Join(work, "config-"+f.Release)
			if err := os.WriteFile(boot.Config, data, 0o644); err != nil {
				return nil, nil, err
			}
		}
	}
	return boot, record, nil
}

// checkRecapture refuses to replace a corpus captured from a kernel file with a capture of
// something else: its kernel.json names no package to fetch, only the file.
func checkRecapture(dir string, local bool) error {
	if local || dir == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "kernel.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	var k struct{ Source, Path string }
	if json.Unmarshal(b, &k) != nil || k.Source != "vmlinuz" {
		return nil
	}
	return fmt.Errorf("output directory %s holds a capture of the kernel file %s (kernel.json: source vmlinuz): re-capture it with --vmlinuz %s, or choose another -o", dir, k.Path, k.Path)
}

// localSetup is guestSetup for a kernel file: nothing is fetched; the boot image (and the
// embedded config, for features) go into the work directory with the agent.
func localSetup(ctx context.Context, l *LocalKernel, profile, arch, workDir string) (boot, record *vm.KernelImage, agent, work string, cleanup func(), err error) {
	cleanup = func() {}
	work = workDir
	if work == "" {
		if work, cleanup, err = makeWorkDir("trampjit-guest-"); err != nil {
			return nil, nil, "", "", func() {}, err
		}
	}
	fail := func(err error) (*vm.KernelImage, *vm.KernelImage, string, string, func(), error) {
		cleanup()
		return nil, nil, "", "", func() {}, err
	}
	if err := os.MkdirAll(filepath.Join(work, "kernel"), 0o755); err != nil {
		return fail(err)
	}
	if boot, record, err = localImages(l, profile, arch, filepath.Join(work, "kernel")); err != nil {
		return fail(err)
	}
	if agent, err = vm.BuildAgent(ctx, arch, filepath.Join(work, "agent")); err != nil {
		return fail(err)
	}
	return boot, record, agent, work, cleanup, nil
}

// an is "an amd64", "a riscv64".
func an(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}
