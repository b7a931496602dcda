package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/trampjit/trampjit/kernel/vm"
)

// Suite is where Debian's newest libunicorn is: sid's binary package depends on
// libc6 alone (>= 2.34), so it runs on bookworm and trixie as they are.
const Suite = "sid"

// DevPackage is the package with the headers and the pkg-config file; it
// depends on the library package by exact version, whatever its name
// (libunicorn2, libunicorn2t64 after the 64-bit time_t transition).
const DevPackage = "libunicorn-dev"

// Lib is one extracted libunicorn under the cache.
type Lib struct {
	Dir     string // <cache>/unicorn/<version>-<arch>
	Version string // Debian version of libunicorn-dev, e.g. "2.1.4-4"
}

// PkgConfigDir is what PKG_CONFIG_PATH must name to build against it.
func (l Lib) PkgConfigDir() string { return filepath.Join(l.Dir, "pkgconfig") }

// exactDep finds the package libunicorn-dev depends on at exactly ver.
var exactDep = regexp.MustCompile(`^\s*([a-z0-9][a-z0-9+.-]*)\s*\(=\s*([^)\s]+)\s*\)`)

// LibPackage returns the library package named in a Depends field with "(= ver)".
func LibPackage(depends, ver string) (string, error) {
	for _, d := range strings.Split(depends, ",") {
		alt, _, _ := strings.Cut(d, "|")
		if m := exactDep.FindStringSubmatch(alt); m != nil && m[2] == ver && strings.HasPrefix(m[1], "libunicorn") {
			return m[1], nil
		}
	}
	return "", fmt.Errorf("%s %s: no libunicorn package at = %s in Depends %q", DevPackage, ver, ver, depends)
}

// PCFile renders the pkg-config file for headers under include and the
// library under lib (absolute), keeping the fields of the packaged one that
// do not name paths.
func PCFile(packaged, include, lib string) (string, error) {
	var b strings.Builder
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimRight(packaged, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "libdir="):
			l, seen["libdir"] = "libdir="+lib, true
		case strings.HasPrefix(l, "includedir="):
			l, seen["includedir"] = "includedir="+include, true
		case strings.HasPrefix(l, "prefix="), strings.HasPrefix(l, "exec_prefix="):
			continue // libdir and includedir are absolute now
		}
		b.WriteString(l + "\n")
	}
	if !seen["libdir"] || !seen["includedir"] {
		return "", errors.New("unicorn.pc has no libdir= or includedir= line")
	}
	return b.String(), nil
}

// Fetch returns the newest libunicorn Debian ships for arch, extracted under
// cache/unicorn; within maxAge of the last check it uses the cached one
// without network I/O, and past it a failed check falls back to the cached
// one with a note on progress.
func Fetch(ctx context.Context, cache, arch string, maxAge time.Duration, progress io.Writer) (Lib, error) {
	root := filepath.Join(cache, "unicorn")
	cur := filepath.Join(root, "current")
	cached, cerr := readLib(cur)
	if cerr == nil {
		if st, err := os.Lstat(cur); err == nil && time.Since(st.ModTime()) < maxAge {
			return cached, nil
		}
	}
	lib, err := download(ctx, cache, root, arch, progress)
	if err != nil {
		if cerr == nil {
			fmt.Fprintf(progress, "libunicorn: %v\nlibunicorn: keeping the cached %s\n", err, cached.Version)
			return cached, nil
		}
		return Lib{}, err
	}
	return lib, link(cur, filepath.Base(lib.Dir))
}

func download(ctx context.Context, cache, root, arch string, progress io.Writer) (Lib, error) {
	a, err := vm.NewApt(filepath.Join(cache, "apt-unicorn"))
	if err != nil {
		return Lib{}, err
	}
	// NewApt wrote the kernels' suites; this configuration needs sid only.
	a.Suites, a.Arches = []string{Suite}, []string{arch}
	if err := os.WriteFile(filepath.Join(a.Dir, "sources.list"), []byte(a.SourcesList()), 0o644); err != nil {
		return Lib{}, err
	}
	a.Log = io.Discard
	fmt.Fprintf(progress, "libunicorn: apt-get update (%s, private sources under %s)\n", Suite, a.Dir)
	if err := a.Update(ctx); err != nil {
		return Lib{}, err
	}
	st, err := a.Show(ctx, DevPackage+":"+arch)
	if err != nil {
		return Lib{}, err
	}
	var dev map[string]string
	for _, s := range st {
		if s["Architecture"] == arch && (dev == nil || vm.CompareVersions(s["Version"], dev["Version"]) > 0) {
			dev = s
		}
	}
	if dev == nil {
		return Lib{}, fmt.Errorf("%s has no %s package for %s", Suite, DevPackage, arch)
	}
	ver := dev["Version"]
	libPkg, err := LibPackage(dev["Depends"], ver)
	if err != nil {
		return Lib{}, err
	}
	dir := filepath.Join(root, ver+"-"+arch)
	if l, err := readLib(dir); err == nil {
		return l, nil
	}
	fmt.Fprintf(progress, "libunicorn: downloading %s and %s %s (%s)\n", libPkg, DevPackage, ver, arch)
	var debs []string
	for _, p := range []string{libPkg, DevPackage} {
		d, err := a.Download(ctx, p, arch, ver)
		if err != nil {
			return Lib{}, err
		}
		debs = append(debs, d)
	}
	return extract(ctx, debs, dir, ver)
}

// extract unpacks debs into a staging directory next to dir, writes the
// pkg-config file and renames it into place, so dir is whole or absent.
func extract(ctx context.Context, debs []string, dir, ver string) (Lib, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return Lib{}, err
	}
	stage, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return Lib{}, err
	}
	defer os.RemoveAll(stage)
	if err := os.Chmod(stage, 0o755); err != nil {
		return Lib{}, err
	}
	for _, d := range debs {
		// dpkg-deb -x only unpacks files: nothing is installed or configured.
		if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", d, filepath.Join(stage, "root")).CombinedOutput(); err != nil {
			return Lib{}, fmt.Errorf("dpkg-deb -x %s: %w: %s", d, err, strings.TrimSpace(string(out)))
		}
	}
	pcs, _ := filepath.Glob(filepath.Join(stage, "root/usr/lib/*/pkgconfig/unicorn.pc"))
	if len(pcs) != 1 {
		return Lib{}, fmt.Errorf("%s %s: want one usr/lib/*/pkgconfig/unicorn.pc, found %d", DevPackage, ver, len(pcs))
	}
	triplet := filepath.Base(filepath.Dir(filepath.Dir(pcs[0])))
	if _, err := os.Stat(filepath.Join(stage, "root/usr/lib", triplet, "libunicorn.so")); err != nil {
		return Lib{}, fmt.Errorf("%s %s: no libunicorn.so: %w", DevPackage, ver, err)
	}
	packaged, err := os.ReadFile(pcs[0])
	if err != nil {
		return Lib{}, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Lib{}, err
	}
	pc, err := PCFile(string(packaged), filepath.Join(abs, "root/usr/include"), filepath.Join(abs, "root/usr/lib", triplet))
	if err != nil {
		return Lib{}, err
	}
	if err := os.MkdirAll(filepath.Join(stage, "pkgconfig"), 0o755); err != nil {
		return Lib{}, err
	}
	if err := os.WriteFile(filepath.Join(stage, "pkgconfig/unicorn.pc"), []byte(pc), 0o644); err != nil {
		return Lib{}, err
	}
	if err := os.WriteFile(filepath.Join(stage, "version"), []byte(ver+"\n"), 0o644); err != nil {
		return Lib{}, err
	}
	if err := os.Rename(stage, dir); err != nil {
		return Lib{}, err
	}
	return readLib(dir)
}

// readLib reads an extracted libunicorn (dir or a link to it).
func readLib(dir string) (Lib, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return Lib{}, err
	}
	v, err := os.ReadFile(filepath.Join(real, "version"))
	if err != nil {
		return Lib{}, err
	}
	if _, err := os.Stat(filepath.Join(real, "pkgconfig/unicorn.pc")); err != nil {
		return Lib{}, err
	}
	return Lib{Dir: real, Version: strings.TrimSpace(string(v))}, nil
}

// link points cur at target (relative) atomically; its mtime is the last check.
func link(cur, target string) error {
	tmp := cur + ".tmp"
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, cur)
}
