package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/internal/suggest"
)

// Any Debian kernel, not only a profile's: `trampjit kernel fetch --debian PACKAGE` picks the
// newest build of a package name or glob in a suite (by default the machine's own suite's
// backports, where Debian ships newer kernels built for a stable release) and caches its
// vmlinuz and config under kernels/debian/<package>_<version>/, ready for
// `kernel capture --vmlinuz FILE --config FILE`.

// DebianIndexMaxAge is how long a suite's package index is used before apt-get update runs again.
const DebianIndexMaxAge = 6 * time.Hour

// validSuite is what a Debian suite name looks like ("bookworm-backports", "sid"); anything
// else would end up inside the private sources.list.
var validSuite = regexp.MustCompile(`^[a-z][a-z0-9.+-]{0,63}$`)

// validPackage is a Debian package name with glob metacharacters (deb-control(5): lower-case
// letters, digits, + - .).
var validPackage = regexp.MustCompile(`^[a-z0-9*?\[\]][a-z0-9+.*?\[\]^!-]{0,127}$`)

// DefaultDebianSuite is the backports suite of the machine's own release.
func DefaultDebianSuite() (string, error) {
	c := Codename("/")
	if c == "" {
		return "", errors.New("no VERSION_CODENAME in /etc/os-release to derive the backports suite from: name one with --suite")
	}
	return c + "-backports", nil
}

// isGlob reports whether a package pattern has glob metacharacters.
func isGlob(pattern string) bool { return strings.ContainsAny(pattern, "*?[") }

// MatchDebian reports whether package name matches pattern: the name itself, or a glob
// (path.Match syntax). A glob never matches -dbg (no vmlinuz) nor -unsigned packages (the
// fallback of a signed package without one).
func MatchDebian(pattern, name string) bool {
	if !isGlob(pattern) {
		return pattern == name
	}
	if strings.HasSuffix(name, "-dbg") || strings.HasSuffix(name, "-unsigned") {
		return false
	}
	ok, _ := path.Match(pattern, name)
	return ok
}

// ChooseDebian picks the newest build (dpkg order; the package name breaks ties) among the
// stanzas of packages matching pattern for arch. With none it names the nearest names.
func ChooseDebian(suite, pattern, arch string, names []string, stanzas []map[string]string) (Candidate, error) {
	var best *Candidate
	for _, s := range stanzas {
		if s["Architecture"] != arch || !MatchDebian(pattern, s["Package"]) {
			continue
		}
		c := Candidate{Package: s["Package"], Version: s["Version"], stanza: s}
		if best == nil {
			best = &c
			continue
		}
		if v := CompareVersions(c.Version, best.Version); v > 0 || (v == 0 && c.Package > best.Package) {
			best = &c
		}
	}
	if best == nil {
		return Candidate{}, fmt.Errorf("no package in %s matches %q for %s%s", suite, pattern, arch, nearestHint(pattern, names))
	}
	return *best, nil
}

// nearestHint names the packages closest to pattern: for a name, the spelling nearest; for a
// glob, those sharing the longest literal prefix and its literal suffix, newest first.
func nearestHint(pattern string, names []string) string {
	var keep []string
	for _, n := range names {
		if !strings.HasSuffix(n, "-dbg") && !strings.HasSuffix(n, "-unsigned") {
			keep = append(keep, n)
		}
	}
	var near []string
	if !isGlob(pattern) {
		near = suggest.Closest(pattern, keep, 3)
	}
	if len(near) == 0 {
		lit := pattern
		if i := strings.IndexAny(pattern, "*?["); i >= 0 {
			lit = pattern[:i]
		}
		suffix := pattern[strings.LastIndexAny(pattern, "*?]")+1:]
		score := func(n string) int {
			p := 0
			for p < len(n) && p < len(lit) && n[p] == lit[p] {
				p++
			}
			if strings.HasSuffix(n, suffix) {
				p += 1000
			}
			return p
		}
		sorted := append([]string(nil), keep...)
		sort.SliceStable(sorted, func(i, j int) bool {
			if a, b := score(sorted[i]), score(sorted[j]); a != b {
				return a > b
			}
			return CompareVersions(nameVersion(sorted[i]), nameVersion(sorted[j])) > 0
		})
		for _, n := range sorted {
			if len(near) == 3 || score(n) < len("linux-")+1000 {
				break
			}
			near = append(near, n)
		}
	}
	if len(near) == 0 {
		return ""
	}
	return "; nearest: " + strings.Join(near, ", ")
}

// nameVersion is the version inside a kernel package name (linux-image-7.3.4+deb13-cloud-amd64
// -> 7.3.4+deb13), for ordering names; names without one sort first.
var nameVersionRe = regexp.MustCompile(`\d+\.\d+[0-9.+a-z~]*`)

func nameVersion(name string) string { return nameVersionRe.FindString(name) }

// debianDir is the cache directory of one fetched build.
func debianDir(cache, pkg, version string) string {
	return filepath.Join(cache, "kernels", "debian", pkg+"_"+strings.ReplaceAll(version, ":", "%3a"))
}

// CachedDebian returns the newest cached build matching pattern for arch (suite "" for any).
func CachedDebian(cache, suite, pattern, arch string) (*KernelImage, error) {
	metas, _ := filepath.Glob(filepath.Join(cache, "kernels", "debian", "*", "kernel.json"))
	var best *KernelImage
	for _, m := range metas {
		k, err := readMeta(m)
		if err != nil || k.Arch != arch || (suite != "" && k.Suite != suite) {
			continue
		}
		// The directory is named after the package matched (a meta package resolves to
		// another, and a signed one may have fallen back to -unsigned).
		matched, _, _ := strings.Cut(filepath.Base(filepath.Dir(m)), "_")
		if !MatchDebian(pattern, matched) {
			continue
		}
		if best == nil || CompareVersions(k.Version, best.Version) > 0 {
			best = k
		}
	}
	if best == nil {
		return nil, os.ErrNotExist
	}
	return best, nil
}

// FetchDebian returns the newest build of the Debian package pattern (a name or a glob such
// as linux-image-7.3.*-cloud-amd64) in suite ("" for the machine's backports) for arch,
// fetched through a private apt configuration of its own (cache/apt-debian/<suite>) and
// cached; when the newest is cached it does no network I/O (the index is refreshed at most
// every DebianIndexMaxAge), and when the archive cannot be reached it uses the newest cached
// match, saying so in progress and KernelImage.Note.
func FetchDebian(ctx context.Context, suite, pattern, arch string, progress io.Writer) (*KernelImage, error) {
	if suite == "" {
		var err error
		if suite, err = DefaultDebianSuite(); err != nil {
			return nil, err
		}
	}
	if err := checkDebian(suite, pattern, arch); err != nil {
		return nil, err
	}
	cache, err := CacheDir()
	if err != nil {
		return nil, err
	}
	// One fetcher at a time per cache: apt runs without the system lock on private state,
	// and NewApt rewrites the sources.list.
	unlock, err := lockFile(filepath.Join(cache, "fetch.lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	a, err := NewApt(filepath.Join(cache, "apt-debian", suite))
	if err != nil {
		return nil, err
	}
	return fetchDebian(ctx, a, cache, suite, pattern, arch, progress)
}

// fetchDebian is FetchDebian on a, under the cache's fetch lock.

func fetchDebian(ctx context.Context, a *Apt, cache, suite, pattern, arch string, progress io.Writer) (*KernelImage, error) {
	if err := checkDebian(suite, pattern, arch); err != nil {
		return nil, err
	}
	if progress == nil {
		progress = io.Discard
	}
	// NewApt wrote the profiles' suites; this configuration has the one asked for, with
	// every architecture's index (one update serves amd64 and arm64 fetches alike).
	a.Suites = []string{suite}
	if !slices.Contains(a.Arches, arch) {
		a.Arches = append(a.Arches, arch)
	}
	if err := a.setup(); err != nil {
		return nil, err
	}
	a.Log = prefixWriter{progress, "apt: "}
	offline := func(why string) (*KernelImage, error) {
		k, cerr := CachedDebian(cache, suite, pattern, arch)
		if cerr != nil {
			return nil, fmt.Errorf("%s, and no build matching %q for %s is cached", why, pattern, arch)
		}
		k.Note = fmt.Sprintf("%s; using the cached %s %s", why, k.Package, k.Version)
		fmt.Fprintf(progress, "debian %s: note: %s\n", suite, k.Note)
		return k, nil
	}
	t0 := time.Now()
	note := ""
	if !a.Fresh(DebianIndexMaxAge) || !hasPackages(a, suite, arch) {
		fmt.Fprintf(progress, "debian %s: apt-get update (private sources under %s)\n", suite, a.Dir)
		if err := updateDebian(ctx, a, suite); err != nil {
			if ctx.Err() != nil || errors.Is(err, errNoSuite) {
				return nil, err
			}
			if _, ierr := os.Stat(indexOf(a, suite)); ierr != nil {
				return offline(err.Error())
			}
			note = err.Error() + "; using the package index of " + indexAge(a, suite)
			fmt.Fprintf(progress, "debian %s: note: %s\n", suite, note)
		}
	}
	lit := pattern
	if i := strings.IndexAny(pattern, "*?["); i >= 0 {
		lit = pattern[:i]
	}
	names, err := a.PkgNames(ctx, lit)
	if err != nil {
		return nil, err
	}
	var match []string
	for _, n := range names {
		if MatchDebian(pattern, n) {
			match = append(match, n)
		}
	}
	stanzas, err := a.showAll(ctx, match, arch)
	if err != nil {
		return nil, err
	}
	if len(match) == 0 && lit != "linux-image-" {
		// The nearest names may lie outside the literal prefix (a misspelt version).
		if more, err := a.PkgNames(ctx, "linux-image-"); err == nil {
			names = append(names, more...)
		}
	}
	c, err := ChooseDebian(suite, pattern, arch, names, stanzas)
	if err != nil {
		return nil, err
	}
	c, err = a.resolveMeta(ctx, c, arch)
	if err != nil {
		return nil, err
	}
	dir := debianDir(cache, c.Package, c.Version)
	meta := filepath.Join(dir, "kernel.json")
	if k, err := readMeta(meta); err == nil {
		k.Note = note
		return k, nil
	}
	fmt.Fprintf(progress, "debian %s: fetching %s %s\n", suite, c.Package, c.Version)
	var k *KernelImage
	if bin := dependency(c.stanza["Depends"], "linux-binary-", c.Version); bin != "" {
		k, err = downloadModulesLayout(ctx, a, bin, arch, c.Version, dir)
	} else {
		k, err = downloadKernel(ctx, a, c.Package, arch, c.Version, c.stanza, dir, progress)
	}
	if err != nil {
		os.RemoveAll(dir) // nothing half-written: no kernel.json means not cached
		if ctx.Err() == nil && isDownloadFailure(err) {
			return offline(fmt.Sprintf("%s %s could not be downloaded (%v)", c.Package, c.Version, err))
		}
		return nil, err
	}
	k.Arch, k.Suite, k.Note = arch, suite, note
	if v, err := btfmodel.ParseVersion(strings.SplitN(c.Version, "-", 2)[0]); err == nil {
		k.Kernel = v.Series().String() // the upstream series; no profile need exist for it
	}
	b, _ := json.MarshalIndent(k, "", "  ")
	if _, err := writeCached(dir, "kernel.json", append(b, '\n')); err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "debian %s: %s (%s %s) cached in %s after %.1fs\n",
		suite, k.Release, k.Package, k.Version, dir, time.Since(t0).Seconds())
	return k, nil
}

// checkDebian refuses a suite, package or arch that cannot be right before apt runs.
func checkDebian(suite, pattern, arch string) error {
	if !validSuite.MatchString(suite) {
		return fmt.Errorf("suite %q is not a Debian suite name", suite)
	}
	if !validPackage.MatchString(pattern) {
		return fmt.Errorf("package %q is neither a Debian package name nor a glob of one", pattern)
	}
	if _, err := path.Match(pattern, ""); err != nil {
		return fmt.Errorf("package glob %q: %w", pattern, err)
	}
	_, err := btfmodel.ParseArch(arch)
	return err
}

// errNoSuite says the archive has no such suite.
var errNoSuite = errors.New("not in the Debian archive")

// updateDebian runs apt-get update for the suite. apt exits 0 when the archive cannot be
// reached (it keeps the old lists); the suite's index then is not fresh, which is the test.
func updateDebian(ctx context.Context, a *Apt, suite string) error {
	cmd := exec.CommandContext(ctx, "apt-get", append(a.options(), "-o", "Acquire::Retries=0", "update", "-q")...)
	cmd.Dir = a.Dir
	var outb, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outb, &errb
	err := cmd.Run()
	if a.Log != nil {
		for _, l := range strings.Split(strings.TrimSpace(outb.String()), "\n") {
			fmt.Fprintln(a.Log, l) // whole lines: apt ends without a newline
		}
	}
	msg := strings.TrimSpace(errb.String())
	if strings.Contains(msg, "does not have a Release file") {
		return fmt.Errorf("suite %s is %w %s (it has no dists/%s/Release)", suite, errNoSuite, a.URI, suite)
	}
	if strings.Contains(msg, "NO_PUBKEY") || strings.Contains(msg, "GPG error") {
		return fmt.Errorf("apt-get update: %s's signature is not verifiable with %s: %s", suite, a.Keyring, msg)
	}
	failed := strings.Contains(msg, "W: Failed to fetch") || strings.Contains(msg, "W: Some index files failed")
	if err == nil && !failed {
		// apt may date the file by the archive's Last-Modified: date it now, so that Fresh
		// measures the time since this check.
		now := time.Now()
		os.Chtimes(indexOf(a, suite), now, now)
		return nil
	}
	first := msg
	for _, l := range strings.Split(msg, "\n") {
		if strings.HasPrefix(l, "W: Failed to fetch") || strings.HasPrefix(l, "E: ") {
			first = strings.TrimSpace(l)
			break
		}
	}
	if first == "" && err != nil {
		first = err.Error()
	}
	return fmt.Errorf("apt-get update could not reach the archive (%s)", first)
}

// hasPackages reports whether the private lists hold the suite's package index for arch (an
// architecture added since the last update has none yet). Only arch is asked for: a suite
// need not have every architecture of the sources.list (bookworm has no riscv64 port), and
// an update would not bring what the archive does not have.
func hasPackages(a *Apt, suite, arch string) bool {
	m, _ := filepath.Glob(filepath.Join(a.Dir, "state", "lists", "*_dists_"+suite+"_main_binary-"+arch+"_Packages*"))
	return len(m) > 0
}

// indexOf is the suite's InRelease in the private lists ("" when there is none).
func indexOf(a *Apt, suite string) string {
	m, _ := filepath.Glob(filepath.Join(a.Dir, "state", "lists", "*_dists_"+suite+"_InRelease"))
	if len(m) == 0 {
		return filepath.Join(a.Dir, "state", "lists", "none")
	}
	return m[0]
}

func indexAge(a *Apt, suite string) string {
	st, err := os.Stat(indexOf(a, suite))
	if err != nil {
		return "unknown age"
	}
	return st.ModTime().UTC().Format("2006-01-02 15:04 UTC")
}

// isDownloadFailure tells apt-get download's network errors from a package that is wrong.
func isDownloadFailure(err error) bool {
	s := err.Error()
	return strings.Contains(s, "apt-get download") && !strings.Contains(s, "ships no") &&
		(strings.Contains(s, "Failed to fetch") || strings.Contains(s, "connect") || strings.Contains(s, "resolve"))
}

// showAll returns the stanzas of names for arch in one apt-cache call.
func (a *Apt) showAll(ctx context.Context, names []string, arch string) ([]map[string]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	args := []string{"show"}
	for _, n := range names {
		args = append(args, n+":"+arch)
	}
	out, err := a.run(ctx, a.Dir, "apt-cache", args...)
	if err != nil && !strings.Contains(err.Error(), "No packages found") {
		return nil, err
	}
	return parseStanzas(out), nil
}

// resolveMeta follows a meta package (linux-image-cloud-amd64) to the image package it
// depends on at the same version, so the cache is named after the real build.
func (a *Apt) resolveMeta(ctx context.Context, c Candidate, arch string) (Candidate, error) {
	if dependency(c.stanza["Depends"], "linux-binary-", c.Version) != "" || nameVersion(c.Package) != "" {
		return c, nil
	}
	img := dependency(c.stanza["Depends"], "linux-image-", c.Version)
	if img == "" {
		return c, nil
	}
	st, err := a.showAll(ctx, []string{img}, arch)
	if err != nil {
		return c, err
	}
	for _, s := range st {
		if s["Version"] == c.Version && s["Architecture"] == arch {
			return Candidate{Package: img, Version: c.Version, stanza: s}, nil
		}
	}
	return c, nil
}

// dependency is the package starting with prefix that depends lists at exactly version ("").
func dependency(depends, prefix, version string) string {
	for _, d := range strings.Split(depends, ",") {
		m := exactDep.FindStringSubmatch(d)
		if m != nil && strings.HasPrefix(m[1], prefix) && m[2] == version &&
			!strings.HasSuffix(m[1], "-dbg") && !strings.HasSuffix(m[1], "-unsigned") {
			return m[1]
		}
	}
	return ""
}

// exactDep is one "name (= version)" of a Depends field.
var exactDep = regexp.MustCompile(`^\s*([a-z0-9][a-z0-9+.-]*)\s*\(=\s*([^)\s]+)\s*\)`)
