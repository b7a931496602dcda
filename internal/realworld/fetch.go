package realworld

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/trampjit/trampjit/kernel/vm"
)

// Packages are the Debian packages known to ship compiled BPF objects (found by scanning
// their files for EM_BPF headers), newest version first. Most carry fentry/fexit/tp_btf/LSM
// programs; the others (kprobes, XDP, iterators only) are kept so the skipped-by-type counts
// say what real tools use.
var Packages = []string{
	"libbpf-tools",            // bcc's libbpf-tools: one skeleton per tool
	"libsystemd-shared",       // systemd's restrict-fs / restrict-ifaces / socket-bind (LSM, cgroup)
	"systemd",                 // systemd-networkd's sysctl monitor (cgroup)
	"libbpftune0",             // bpftune's tuners, each in three variants
	"bpftune",                 // the bpftune daemon
	"libxdp1",                 // xdpdump's fentry/fexit, the XDP dispatcher
	"xdp-tools",               // xdp-monitor & co: tp_btf programs on the xdp tracepoints
	"pwru",                    // bpf2go objects in a Go binary (fentry/fexit, kprobe.multi)
	"bpftop",                  // pid iterator
	"opensnitch-ebpf-modules", // kprobes, tracepoints, uprobes
	"mimic",                   // tc and XDP
	"bpfilter",                // XDP/tc/cgroup generated at run time; a few objects
	"bpftool",                 // skeletons, when Debian builds them
	"linux-perf",              // bperf/off_cpu/lock_contention skeletons, when built
}

// HeldOut are older builds of the packages with tracing and LSM programs: the versions
// trixie and bookworm carry (name@N is the N-th newest version in Suites), built by older
// clang and libbpf releases from older sources. The model's authors looked at the newest
// versions' disagreements; these measure it on objects nobody tuned it for.
var HeldOut = []string{
	"libbpf-tools@2", "libbpf-tools@3",
	"libsystemd-shared@2", "libsystemd-shared@3",
	"libbpftune0@2",
	"libxdp1@2", "libxdp1@3",
	"xdp-tools@2", "xdp-tools@3",
	"pwru@2",
}

// Suites the private apt configuration reads: the newest version of each package wins.
var Suites = []string{vm.SuiteBookworm, vm.SuiteTrixie, "sid"}

// MaxFileSize bounds a file of a package that is scanned for objects.
const MaxFileSize = 512 << 20

// Object is one extracted BPF object.
type Object struct {
	Package string `json:"package"`
	Version string `json:"version"`
	Arch    string `json:"arch"`
	File    string `json:"file"`   // the file of the package that embeds it, e.g. usr/sbin/biolatency-libbpf
	Offset  int    `json:"offset"` // where in File
	Size    int    `json:"size"`
	SHA256  string `json:"sha256"`
	Path    string `json:"path"` // the object in the cache (absolute)
}

// Name is how reports name the object: the file, and the offset when the file is not the
// object itself.
func (o Object) Name() string {
	if o.Offset == 0 && strings.HasSuffix(o.File, ".o") {
		return o.File
	}
	return fmt.Sprintf("%s@%#x", o.File, o.Offset)
}

// Fetched is what happened to one package: its version and objects, or why it has none.
type Fetched struct {
	Package string `json:"package"`
	Version string `json:"version,omitempty"`
	Arch    string `json:"arch"`
	Files   int    `json:"files"`   // files with at least one object
	Objects int    `json:"objects"` // objects found (before deduplication)
	Error   string `json:"error,omitempty"`
}

// manifest is what a package's cache directory holds besides the objects.
type manifest struct {
	Fetched Fetched  `json:"fetched"`
	Objects []Object `json:"objects"` // Path relative to the directory
}

// Fetch returns the BPF objects of pkgs (Packages when nil) for arch: the newest version in
// Suites, downloaded with `apt-get download` through a private apt configuration under
// cache/realworld/apt (nothing is installed, the system's apt setup is left alone), unpacked
// with dpkg-deb -x and scanned with Extract. Each package version is extracted once: its
// objects stay in cache/realworld/<package>_<version>_<arch>, the unpacked package is
// removed. The apt indexes are refreshed when older than maxAge; if that fails, the cached
// versions are used. A package that cannot be fetched is reported in its Fetched, not as an
// error.
func Fetch(ctx context.Context, cache, arch string, pkgs []string, maxAge time.Duration, progress io.Writer) ([]Object, []Fetched, error) {
	if pkgs == nil {
		pkgs = Packages
	}
	root := filepath.Join(cache, "realworld")
	unlock, err := Lock(root)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	a, err := vm.NewApt(filepath.Join(root, "apt"))
	if err != nil {
		return nil, nil, err
	}
	a.Suites, a.Arches, a.Log = Suites, vm.FetchArches, io.Discard
	if err := os.WriteFile(filepath.Join(a.Dir, "sources.list"), []byte(a.SourcesList()), 0o644); err != nil {
		return nil, nil, err
	}
	online := true
	// Which version each package resolved to, and when: apt-cache show takes seconds per
	// package, so within maxAge of the last resolution the cache answers.
	resolvedPath := filepath.Join(root, "resolved-"+arch+".json")
	resolved := map[string]resolution{}
	if data, err := os.ReadFile(resolvedPath); err == nil {
		json.Unmarshal(data, &resolved)
	}
	// Indexes fetched before arch was listed (riscv64) have no Packages file for it.
	archLists, _ := filepath.Glob(filepath.Join(a.Dir, "state", "lists", "*_binary-"+arch+"_Packages*"))
	if !a.Fresh(maxAge) || len(archLists) == 0 {
		fmt.Fprintf(progress, "realworld: apt-get update (%s, private sources under %s)\n", strings.Join(Suites, ", "), a.Dir)
		resolved = map[string]resolution{} // the indexes may name newer versions now
		if err := a.Update(ctx); err != nil {
			fmt.Fprintf(progress, "realworld: %v\nrealworld: using the cached packages\n", err)
			online = false
		}
	}
	defer func() {
		if data, err := json.MarshalIndent(resolved, "", "  "); err == nil {
			os.WriteFile(resolvedPath, append(data, '\n'), 0o644)
		}
	}()
	var objs []Object
	var done []Fetched
	for _, p := range pkgs {
		var m manifest
		var err error
		r, known := resolved[p]
		if known && time.Since(r.At) < maxAge && !strings.ContainsAny(r.Dir, "/\\") && r.Dir != ".." {
			if m, err = readManifest(filepath.Join(root, r.Dir)); err == nil {
				done = append(done, m.Fetched)
				objs = append(objs, m.Objects...)
				continue
			}
		}
		if online {
			m, err = fetchPackage(ctx, a, root, p, arch, progress)
			if err == nil {
				resolved[p] = resolution{Dir: cacheName(m.Fetched.Package, m.Fetched.Version, arch), At: time.Now()}
			}
		} else if strings.Contains(p, "@") {
			err = errors.New("name@N needs the archive (unreachable)")
		} else if name, pin, ok := strings.Cut(p, "="); ok {
			m, err = readManifest(filepath.Join(root, cacheName(name, pin, arch)))
		} else {
			m, err = newestCached(root, p, arch)
		}
		if err != nil {
			fmt.Fprintf(progress, "realworld: %s (%s): %v\n", p, arch, err)
			done = append(done, Fetched{Package: p, Arch: arch, Error: err.Error()})
			continue
		}
		done = append(done, m.Fetched)
		objs = append(objs, m.Objects...)
	}
	return objs, done, nil
}

// resolution is the cache directory a package spec resolved to, and when.
type resolution struct {
	Dir string    `json:"dir"`
	At  time.Time `json:"at"`
}

// Lock serialises concurrent runs on dir (the private apt state and the cache are not safe
// for two writers); the returned function releases it.
func Lock(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// fetchPackage returns the objects of the newest version (or of the one pinned as
// "name=version", or of the N-th newest as "name@N"), from the cache or extracted now.
func fetchPackage(ctx context.Context, a *vm.Apt, root, spec, arch string, progress io.Writer) (manifest, error) {
	pkg, pin, _ := strings.Cut(spec, "=")
	rank := 1
	if name, n, ok := strings.Cut(pkg, "@"); ok {
		r, err := strconv.Atoi(n)
		if err != nil || r < 1 {
			return manifest{}, fmt.Errorf("%s: want name@N with N >= 1", spec)
		}
		pkg, rank = name, r
	}
	st, err := a.Show(ctx, pkg+":"+arch)
	if err != nil {
		return manifest{}, err
	}
	ver, parch, err := pickVersion(st, arch, pin, rank)
	if err != nil {
		return manifest{}, fmt.Errorf("%s: %w in %v", spec, err, Suites)
	}
	dir := filepath.Join(root, cacheName(pkg, ver, arch))
	if m, err := readManifest(dir); err == nil {
		return m, nil
	}
	fmt.Fprintf(progress, "realworld: downloading %s %s (%s)\n", pkg, ver, parch)
	deb, err := a.Download(ctx, pkg, parch, ver)
	if err != nil {
		return manifest{}, err
	}
	m, err := extractDeb(ctx, deb, dir, Fetched{Package: pkg, Version: ver, Arch: arch})
	os.Remove(deb) // the objects are what is kept
	if err != nil {
		return manifest{}, err
	}
	fmt.Fprintf(progress, "realworld: %s %s: %d objects in %d files\n", pkg, ver, m.Fetched.Objects, m.Fetched.Files)
	return m, nil
}

// pickVersion chooses among apt-cache show's stanzas: the version pinned, else the rank-th
// newest distinct version built for arch (or for all).
func pickVersion(st []map[string]string, arch, pin string, rank int) (ver, parch string, err error) {
	archOf := map[string]string{}
	var vers []string
	for _, s := range st {
		v, a := s["Version"], s["Architecture"]
		if (a != arch && a != "all") || (pin != "" && v != pin) {
			continue
		}
		if _, dup := archOf[v]; !dup {
			vers = append(vers, v)
		}
		archOf[v] = a
	}
	sort.Slice(vers, func(i, j int) bool { return vm.CompareVersions(vers[i], vers[j]) > 0 })
	if len(vers) < rank {
		return "", "", fmt.Errorf("%d %s versions, not %d", len(vers), arch, rank)
	}
	return vers[rank-1], archOf[vers[rank-1]], nil
}

func cacheName(pkg, ver, arch string) string {
	return strings.NewReplacer(":", "%3a", "/", "_").Replace(pkg + "_" + ver + "_" + arch)
}

// extractDeb unpacks deb in a staging directory next to dir, keeps the BPF objects of its
// files and renames the result into place, so dir is whole or absent.
func extractDeb(ctx context.Context, deb, dir string, f Fetched) (manifest, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return manifest{}, err
	}
	stage, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return manifest{}, err
	}
	defer os.RemoveAll(stage)
	unpacked := filepath.Join(stage, "root")
	// dpkg-deb -x only unpacks files: nothing is installed or configured.
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, unpacked).CombinedOutput(); err != nil {
		return manifest{}, fmt.Errorf("dpkg-deb -x %s: %w: %s", deb, err, strings.TrimSpace(string(out)))
	}
	if err := os.MkdirAll(filepath.Join(stage, "objects"), 0o755); err != nil {
		return manifest{}, err
	}
	m := manifest{Fetched: f}
	err = filepath.WalkDir(unpacked, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(unpacked, path)
		found, err := scanFile(path, rel, filepath.Join(stage, "objects"), f)
		if err != nil {
			return err
		}
		if len(found) > 0 {
			m.Fetched.Files++
			m.Fetched.Objects += len(found)
			m.Objects = append(m.Objects, found...)
		}
		return nil
	})
	if err != nil {
		return manifest{}, err
	}
	if err := os.RemoveAll(unpacked); err != nil {
		return manifest{}, err
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return manifest{}, err
	}
	if err := os.WriteFile(filepath.Join(stage, "manifest.json"), append(data, '\n'), 0o644); err != nil {
		return manifest{}, err
	}
	if err := os.Chmod(stage, 0o755); err != nil {
		return manifest{}, err
	}
	if err := os.Rename(stage, dir); err != nil {
		return manifest{}, err
	}
	return readManifest(dir)
}

// scanFile writes the objects embedded in path (rel in the package) to outDir.
func scanFile(path, rel, outDir string, f Fetched) ([]Object, error) {
	st, err := os.Stat(path)
	if err != nil || st.Size() > MaxFileSize || st.Size() < ehSize {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Object
	for _, e := range Extract(data, 0) {
		sum := sha256.Sum256(e.Data)
		name := fmt.Sprintf("%s@%x.o", strings.ReplaceAll(rel, "/", "_"), e.Offset)
		if err := os.WriteFile(filepath.Join(outDir, name), e.Data, 0o644); err != nil {
			return nil, err
		}
		out = append(out, Object{Package: f.Package, Version: f.Version, Arch: f.Arch, File: rel,
			Offset: e.Offset, Size: len(e.Data), SHA256: hex.EncodeToString(sum[:]), Path: filepath.Join("objects", name)})
	}
	return out, nil
}

// readManifest reads a package's cache directory; object paths become absolute.
func readManifest(dir string) (manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return manifest{}, err
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return manifest{}, fmt.Errorf("%s: %w", dir, err)
	}
	for i := range m.Objects {
		if filepath.IsAbs(m.Objects[i].Path) || strings.Contains(m.Objects[i].Path, "..") {
			return manifest{}, fmt.Errorf("%s: object path %q outside the directory", dir, m.Objects[i].Path)
		}
		m.Objects[i].Path = filepath.Join(dir, m.Objects[i].Path)
	}
	return m, nil
}

// newestCached is the newest version of pkg already extracted for arch.
func newestCached(root, pkg, arch string) (manifest, error) {
	dirs, _ := filepath.Glob(filepath.Join(root, cacheName(pkg, "*", arch)))
	var best manifest
	found := false
	for _, d := range dirs {
		m, err := readManifest(d)
		if err != nil || m.Fetched.Package != pkg || m.Fetched.Arch != arch {
			continue
		}
		if !found || vm.CompareVersions(m.Fetched.Version, best.Fetched.Version) > 0 {
			best, found = m, true
		}
	}
	if !found {
		return manifest{}, errors.New("not in the cache and the archive is unreachable")
	}
	return best, nil
}

// Dedup keeps the first of objects with the same contents (bpftune ships each tuner three
// times, some tools share an object) and says how many copies each kept one had.
func Dedup(objs []Object) ([]Object, map[string]int) {
	copies := map[string]int{}
	var out []Object
	for _, o := range objs {
		if copies[o.SHA256]++; copies[o.SHA256] == 1 {
			out = append(out, o)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Package != out[j].Package {
			return out[i].Package < out[j].Package
		}
		return out[i].Name() < out[j].Name()
	})
	return out, copies
}
