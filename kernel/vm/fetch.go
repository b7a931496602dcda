package vm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trampjit/trampjit/btfmodel"
)

// KernelImage is a fetched Debian kernel: the vmlinuz and where it came from.
type KernelImage struct {
	Kernel  string `json:"kernel"`           // profile: "6.1", "6.12" or "7.2"
	Arch    string `json:"arch"`             // "amd64", "arm64" or "riscv64"
	Suite   string `json:"suite"`            // Debian suite it was picked from
	Package string `json:"package"`          // binary package that shipped the vmlinuz
	Version string `json:"version"`          // its Debian version, e.g. "6.12.117-1"
	Release string `json:"release"`          // uname -r, from the vmlinuz file name
	Path    string `json:"path,omitempty"`   // absolute path of the cached vmlinuz
	Config  string `json:"config,omitempty"` // absolute path of the cached boot/config-*
	Deb     string `json:"deb,omitempty"`    // the cached package
	// Note says why this is not the build asked for (the pinned one left the archive, or
	// the guest reported another release than the file's).
	Note string `json:"note,omitempty"`
	// Source is "" for a Debian package of a profile, "vmlinuz" for a kernel file given by
	// path (Path is then that file, Config where its config came from), "host" for the
	// running kernel. Neither of the last two has a package: CorpusPin reads them as the
	// zero pin.
	Source string `json:"source,omitempty"`
	SHA256 string `json:"sha256,omitempty"` // of the file given (Source "vmlinuz")
	Banner string `json:"banner,omitempty"` // the image's "Linux version ..." string, or /proc/version
}

// ConfigValue returns a CONFIG_ option's value from the kernel's config ("y", "m", a
// string), or "" when it is unset or the config is unavailable.
func (k *KernelImage) ConfigValue(option string) string {
	b, err := os.ReadFile(k.Config)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, option+"="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// FetchArches are the architectures Debian ships a profile's kernel for (riscv64 without
// the cloud flavour) and qemu boots.
var FetchArches = []string{"amd64", "arm64", "riscv64"}

// CacheDir is $XDG_CACHE_HOME/trampjit, or ~/.cache/trampjit.
func CacheDir() (string, error) {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "trampjit"), nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: set XDG_CACHE_HOME or HOME: %w", err)
	}
	return filepath.Join(h, ".cache", "trampjit"), nil
}

// Fetch returns the cached kernel for profile kernel and arch, downloading the newest build
// of the series on first use. A cached kernel is returned without any network I/O. Progress
// lines go to progress.
func Fetch(ctx context.Context, kernel, arch string, progress io.Writer) (*KernelImage, error) {
	return FetchPinned(ctx, kernel, arch, Pin{}, progress)
}

// FetchPinned is Fetch for a corpus captured from pin: the cached kernel is used when it is
// that build; otherwise the archive is asked for it, and when it no longer has it the newest
// build of the series is used, with a note (in progress and KernelImage.Note). When the
// series is gone from the archive it fails with ErrSeriesGone, unless a kernel of the
// series is cached.
func FetchPinned(ctx context.Context, kernel, arch string, pin Pin, progress io.Writer) (*KernelImage, error) {
	spec, ok := kernelSpecs[kernel]
	if !ok {
		return nil, fmt.Errorf("no Debian kernel known for profile %q (want one of %s)", kernel, strings.Join(Profiles, ", "))
	}
	if !slices.Contains(FetchArches, arch) {
		return nil, fmt.Errorf("no Debian kernel for architecture %q (want %s)", arch, strings.Join(FetchArches, ", "))
	}
	if p := btfmodel.ProfileFor(btfmodel.Kernel(kernel)); p != nil && !p.Debian.Ships(btfmodel.Arch(arch)) {
		return nil, fmt.Errorf("Debian's %s (%s) ships no %s kernel: profile %s is modelled on %s from the kernel sources only", kernel, spec.suite, arch, kernel, arch)
	}
	if progress == nil {
		progress = io.Discard
	}
	cache, err := CacheDir()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cache, "kernels", kernel+"-"+arch)
	meta := filepath.Join(dir, "kernel.json")
	pinned := func(k *KernelImage) bool { return pin.Version == "" || k.Version == pin.Version }
	if k, err := readMeta(meta); err == nil && pinned(k) {
		return k, nil
	}

	// One fetcher at a time per cache: apt runs without the system lock on private state.
	unlock, err := lockFile(filepath.Join(cache, "fetch.lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	cached, cerr := readMeta(meta)
	if cerr == nil && pinned(cached) {
		return cached, nil // another process fetched it while we waited
	}
	a, err := NewApt(filepath.Join(cache, "apt"))
	if err != nil {
		return nil, err
	}
	a.Suites = allSuites()
	if err := a.setup(); err != nil {
		return nil, err
	}
	a.Log = prefixWriter{progress, "apt: "}
	t0 := time.Now()
	if !a.Fresh(6 * time.Hour) {
		fmt.Fprintf(progress, "kernel %s-%s: apt-get update (private sources under %s)\n", kernel, arch, a.Dir)
		if err := a.Update(ctx); err != nil {
			return nil, err
		}
	}
	cands, err := candidates(ctx, a, spec, arch)
	if err != nil {
		return nil, fmt.Errorf("kernel %s-%s from %s: %w", kernel, arch, spec.suite, err)
	}
	c, note, err := Choose(kernel, arch, cands, pin)
	if errors.Is(err, ErrSeriesGone) && cerr == nil {
		cached.Note = fmt.Sprintf("%v; using the cached %s %s", err, cached.Package, cached.Version)
		fmt.Fprintf(progress, "kernel %s-%s: note: %s\n", kernel, arch, cached.Note)
		return cached, nil
	}
	if err != nil {
		return nil, err
	}
	if note != "" {
		fmt.Fprintf(progress, "kernel %s-%s: note: %s\n", kernel, arch, note)
	}
	if cerr == nil && cached.Version == c.Version {
		cached.Note = note
		return cached, nil
	}
	fmt.Fprintf(progress, "kernel %s-%s: fetching %s %s\n", kernel, arch, c.Package, c.Version)
	var k *KernelImage
	if spec.layout == layoutModules {
		k, err = downloadModulesLayout(ctx, a, c.Package, arch, c.Version, dir)
	} else {
		k, err = downloadKernel(ctx, a, c.Package, arch, c.Version, c.stanza, dir, progress)
	}
	if err != nil {
		return nil, err
	}
	k.Kernel, k.Arch, k.Suite, k.Note = kernel, arch, spec.suite, note
	b, _ := json.MarshalIndent(k, "", "  ")
	if err := os.WriteFile(meta+".tmp", append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(meta+".tmp", meta); err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "kernel %s-%s: %s (%s %s) cached in %s after %.1fs\n",
		kernel, arch, k.Release, k.Package, k.Version, dir, time.Since(t0).Seconds())
	return k, nil
}

// lockFile takes an exclusive flock on path, creating it.
func lockFile(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
}

func readMeta(path string) (*KernelImage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var k KernelImage
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, err
	}
	if _, err := os.Stat(k.Path); err != nil {
		return nil, err
	}
	return &k, nil
}

// candidates lists every build of the series for arch the archive offers.
func candidates(ctx context.Context, a *Apt, spec kernelSpec, arch string) ([]Candidate, error) {
	names, err := a.PkgNames(ctx, spec.prefix)
	if err != nil {
		return nil, err
	}
	var out []Candidate
	for _, n := range names {
		if spec.archOf(n) != arch {
			continue
		}
		st, err := a.Show(ctx, n+":"+arch)
		if err != nil {
			return nil, err
		}
		for _, s := range st {
			if s["Architecture"] == arch {
				out = append(out, Candidate{Package: n, Version: s["Version"], stanza: s})
			}
		}
	}
	return out, nil
}

// imagePrefix is where a Debian 12/13 image package keeps the kernel: boot/vmlinuz-<release>,
// except on riscv64, whose packages install the uncompressed Image as boot/vmlinux-<release>
// (an Image, not an ELF vmlinux: qemu's -kernel boots it as it is).
func imagePrefix(arch string) string {
	if arch == "riscv64" {
		return "boot/vmlinux-"
	}
	return "boot/vmlinuz-"
}

// downloadKernel fetches pkg and extracts its vmlinuz into dir; when the package ships none
// (a signed meta package), it follows its dependency on the -unsigned package.
func downloadKernel(ctx context.Context, a *Apt, pkg, arch, ver string, stanza map[string]string, dir string, progress io.Writer) (*KernelImage, error) {
	deb, err := a.Download(ctx, pkg, arch, ver)
	if err != nil {
		return nil, err
	}
	img := imagePrefix(arch)
	files, err := ExtractFromDeb(deb, img, "boot/config-")
	if errors.Is(err, ErrNotInDeb) {
		alt := unsignedDep(stanza["Depends"])
		if alt == "" {
			return nil, fmt.Errorf("%s %s ships no %s* and depends on no -unsigned image", pkg, ver, img)
		}
		fmt.Fprintf(progress, "%s has no vmlinuz; trying %s\n", pkg, alt)
		pkg = alt
		if deb, err = a.Download(ctx, pkg, arch, ver); err != nil {
			return nil, err
		}
		files, err = ExtractFromDeb(deb, img, "boot/config-")
	}
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	k := &KernelImage{Package: pkg, Version: ver, Deb: deb}
	for pre, dst := range map[string]*string{img: &k.Path, "boot/config-": &k.Config} {
		f, ok := files[pre]
		if !ok {
			continue
		}
		out := filepath.Join(dir, filepath.Base(f.Name))
		if err := os.WriteFile(out+".tmp", f.Data, 0o644); err != nil {
			return nil, err
		}
		if err := os.Rename(out+".tmp", out); err != nil {
			return nil, err
		}
		*dst = out
	}
	k.Release = strings.TrimPrefix(filepath.Base(k.Path), strings.TrimPrefix(img, "boot/"))
	return k, nil
}

func unsignedDep(depends string) string {
	for _, d := range strings.Split(depends, ",") {
		f := strings.Fields(d)
		if len(f) > 0 && strings.HasPrefix(f[0], "linux-image-") && strings.HasSuffix(f[0], "-unsigned") {
			return f[0]
		}
	}
	return ""
}

// prefixWriter prefixes each write (apt writes whole lines) for the progress stream.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			fmt.Fprint(p.w, p.prefix+l)
		}
	}
	return len(b), nil
}

// downloadModulesLayout fetches a Debian 14 kernel: the vmlinuz from linux-binary-<release>
// and the config from linux-base-<release>, both under usr/lib/modules/<release>/.
func downloadModulesLayout(ctx context.Context, a *Apt, pkg, arch, ver, dir string) (*KernelImage, error) {
	rel := strings.TrimPrefix(pkg, "linux-binary-")
	deb, err := a.Download(ctx, pkg, arch, ver)
	if err != nil {
		return nil, err
	}
	img := "usr/lib/modules/" + rel + "/vmlinuz"
	files, err := ExtractFromDeb(deb, img)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", pkg, ver, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	k := &KernelImage{Package: pkg, Version: ver, Deb: deb, Release: rel}
	if k.Path, err = writeCached(dir, "vmlinuz-"+rel, files[img].Data); err != nil {
		return nil, err
	}
	// The config only decides features (IBT, BTI); a kernel without it still boots.
	base := "linux-base-" + rel
	if bdeb, err := a.Download(ctx, base, arch, ver); err == nil {
		cfg := "usr/lib/modules/" + rel + "/config"
		if bf, err := ExtractFromDeb(bdeb, cfg); err == nil {
			if k.Config, err = writeCached(dir, "config-"+rel, bf[cfg].Data); err != nil {
				return nil, err
			}
		}
	}
	if k.Config == "" {
		return nil, fmt.Errorf("%s %s: no usr/lib/modules/%s/config (features like IBT are read from it)", base, ver, rel)
	}
	return k, nil
}

// writeCached writes data to dir/name through a temporary file.
func writeCached(dir, name string, data []byte) (string, error) {
	out := filepath.Join(dir, name)
	if err := os.WriteFile(out+".tmp", data, 0o644); err != nil {
		return "", err
	}
	return out, os.Rename(out+".tmp", out)
}
