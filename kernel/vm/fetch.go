package vm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// KernelImage is a fetched Debian kernel: the vmlinuz and where it came from.
type KernelImage struct {
	Kernel  string `json:"kernel"`           // profile, "6.1" or "6.12"
	Arch    string `json:"arch"`             // "amd64" or "arm64"
	Suite   string `json:"suite"`            // Debian suite it was picked from
	Package string `json:"package"`          // binary package that shipped the vmlinuz
	Version string `json:"version"`          // its Debian version, e.g. "6.12.117-1"
	Release string `json:"release"`          // uname -r, from the vmlinuz file name
	Path    string `json:"path,omitempty"`   // absolute path of the cached vmlinuz
	Config  string `json:"config,omitempty"` // absolute path of the cached boot/config-*
	Deb     string `json:"deb,omitempty"`    // the cached package
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

// kernelSpecs maps a profile to its suite and the package names that qualify: the cloud
// flavour, not -dbg nor -unsigned (those are the fallback when the signed one has no vmlinuz).
var kernelSpecs = map[string]struct {
	suite string
	re    *regexp.Regexp
}{
	"6.1":  {SuiteBookworm, regexp.MustCompile(`^linux-image-6\.1\.0-[0-9]+-cloud-(amd64|arm64)$`)},
	"6.12": {SuiteTrixie, regexp.MustCompile(`^linux-image-6\.12\.[0-9]+\+deb[0-9]+-cloud-(amd64|arm64)$`)},
}

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

// Fetch returns the cached kernel for profile kernel and arch, downloading it on first use.
// A cached kernel is returned without any network I/O. Progress lines go to progress.
func Fetch(ctx context.Context, kernel, arch string, progress io.Writer) (*KernelImage, error) {
	spec, ok := kernelSpecs[kernel]
	if !ok {
		return nil, fmt.Errorf("no Debian kernel known for profile %q (want 6.1 or 6.12)", kernel)
	}
	if arch != "amd64" && arch != "arm64" {
		return nil, fmt.Errorf("no Debian kernel for architecture %q (want amd64 or arm64)", arch)
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
	if k, err := readMeta(meta); err == nil {
		return k, nil
	}

	// One fetcher at a time per cache: apt runs without the system lock on private state.
	unlock, err := lockFile(filepath.Join(cache, "fetch.lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if k, err := readMeta(meta); err == nil {
		return k, nil // another process fetched it while we waited
	}
	a, err := NewApt(filepath.Join(cache, "apt"))
	if err != nil {
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
	pkg, ver, stanza, err := newest(ctx, a, spec.re, arch)
	if err != nil {
		return nil, fmt.Errorf("kernel %s-%s from %s: %w", kernel, arch, spec.suite, err)
	}
	fmt.Fprintf(progress, "kernel %s-%s: newest is %s %s; downloading\n", kernel, arch, pkg, ver)
	k, err := downloadKernel(ctx, a, pkg, arch, ver, stanza, dir, progress)
	if err != nil {
		return nil, err
	}
	k.Kernel, k.Arch, k.Suite = kernel, arch, spec.suite
	b, _ := json.MarshalIndent(k, "", "  ")
	if err := os.WriteFile(meta, append(b, '\n'), 0o644); err != nil {
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

// newest picks the highest version of any package matching re for arch.
func newest(ctx context.Context, a *Apt, re *regexp.Regexp, arch string) (pkg, ver string, stanza map[string]string, err error) {
	names, err := a.PkgNames(ctx, "linux-image-")
	if err != nil {
		return "", "", nil, err
	}
	var cands []string
	for _, n := range names {
		if m := re.FindStringSubmatch(n); m != nil && m[1] == arch {
			cands = append(cands, n)
		}
	}
	if len(cands) == 0 {
		return "", "", nil, fmt.Errorf("no package matches %s in the archive indexes", re)
	}
	for _, n := range cands {
		st, err := a.Show(ctx, n+":"+arch)
		if err != nil {
			return "", "", nil, err
		}
		for _, s := range st {
			if s["Architecture"] != arch {
				continue
			}
			if pkg == "" || CompareVersions(s["Version"], ver) > 0 ||
				(s["Version"] == ver && n > pkg) {
				pkg, ver, stanza = n, s["Version"], s
			}
		}
	}
	if pkg == "" {
		return "", "", nil, fmt.Errorf("packages %v have no %s stanza", cands, arch)
	}
	return pkg, ver, stanza, nil
}

// downloadKernel fetches pkg and extracts its vmlinuz into dir; when the package ships none
// (a signed meta package), it follows its dependency on the -unsigned package.
func downloadKernel(ctx context.Context, a *Apt, pkg, arch, ver string, stanza map[string]string, dir string, progress io.Writer) (*KernelImage, error) {
	deb, err := a.Download(ctx, pkg, arch, ver)
	if err != nil {
		return nil, err
	}
	files, err := ExtractFromDeb(deb, "boot/vmlinuz-", "boot/config-")
	if errors.Is(err, ErrNotInDeb) {
		alt := unsignedDep(stanza["Depends"])
		if alt == "" {
			return nil, fmt.Errorf("%s %s ships no boot/vmlinuz-* and depends on no -unsigned image", pkg, ver)
		}
		fmt.Fprintf(progress, "%s has no vmlinuz; trying %s\n", pkg, alt)
		pkg = alt
		if deb, err = a.Download(ctx, pkg, arch, ver); err != nil {
			return nil, err
		}
		files, err = ExtractFromDeb(deb, "boot/vmlinuz-", "boot/config-")
	}
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	k := &KernelImage{Package: pkg, Version: ver, Deb: deb}
	for pre, dst := range map[string]*string{"boot/vmlinuz-": &k.Path, "boot/config-": &k.Config} {
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
	k.Release = strings.TrimPrefix(filepath.Base(k.Path), "vmlinuz-")
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
