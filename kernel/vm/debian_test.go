package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stanza is one apt-cache show record, as bookworm-backports lists them.
func stanza(pkg, ver, arch, depends string) map[string]string {
	return map[string]string{"Package": pkg, "Version": ver, "Architecture": arch, "Depends": depends}
}

// backports is a package list shaped like bookworm-backports' and trixie-backports' in
// December 2026 (names and versions as apt-cache showed them).
var backports = []map[string]string{
	stanza("linux-image-6.12.9+deb12-cloud-amd64", "6.12.9-1~bpo12+1", "amd64", "kmod"),
	stanza("linux-image-6.12.90+deb12-cloud-amd64", "6.12.90-1~bpo12+1", "amd64", "kmod"),
	stanza("linux-image-6.12.90+deb12.1-cloud-amd64", "6.12.90-1~bpo12+2", "amd64", "kmod"),
	stanza("linux-image-6.12.95+deb12-cloud-amd64", "6.12.95-1~bpo12+1", "amd64", "kmod"),
	stanza("linux-image-6.12.95+deb12-cloud-amd64-unsigned", "6.12.95-1~bpo12+1", "amd64", "kmod"),
	stanza("linux-image-6.12.96+deb12-cloud-amd64-dbg", "6.12.96-1~bpo12+1", "amd64", ""),
	stanza("linux-image-6.12.95+deb12-cloud-arm64", "6.12.95-1~bpo12+1", "arm64", "kmod"),
	stanza("linux-image-7.3.4+deb13-cloud-amd64", "7.3.4-1~bpo13+1", "amd64",
		"dracut | initramfs-tools (>= 0.120+deb8u2) | linux-initramfs-tool, linux-base-7.3.4+deb13-cloud-amd64 (= 7.3.4-1~bpo13+1), linux-binary-7.3.4+deb13-cloud-amd64 (= 7.3.4-1~bpo13+1)"),
	stanza("linux-image-7.3.10+deb13-cloud-amd64", "7.3.10-1~bpo13+1", "amd64", "kmod"),
	stanza("linux-image-cloud-amd64", "7.3.10-1~bpo13+1", "amd64", "linux-image-7.3.10+deb13-cloud-amd64 (= 7.3.10-1~bpo13+1)"),
}

func names(st []map[string]string) []string {
	var out []string
	for _, s := range st {
		out = append(out, s["Package"])
	}
	return out
}

func TestChooseDebian(t *testing.T) {
	for _, c := range []struct{ pattern, arch, pkg, ver string }{
		// dpkg order: 6.12.95 > 6.12.90 (+bpo12+2 the newer of the two) > 6.12.9; -unsigned
		// and -dbg (a newer version) are not candidates of a glob.
		{"linux-image-6.12.*-cloud-amd64", "amd64", "linux-image-6.12.95+deb12-cloud-amd64", "6.12.95-1~bpo12+1"},
		{"linux-image-6.12.9*-cloud-amd64", "amd64", "linux-image-6.12.95+deb12-cloud-amd64", "6.12.95-1~bpo12+1"},
		{"linux-image-6.12.90+deb12*-cloud-amd64", "amd64", "linux-image-6.12.90+deb12.1-cloud-amd64", "6.12.90-1~bpo12+2"},
		{"linux-image-6.12.*-cloud-*", "arm64", "linux-image-6.12.95+deb12-cloud-arm64", "6.12.95-1~bpo12+1"},
		// 7.3.10 sorts after 7.3.4 (numerically, not as strings).
		{"linux-image-7.3.*-cloud-amd64", "amd64", "linux-image-7.3.10+deb13-cloud-amd64", "7.3.10-1~bpo13+1"},
		// An exact name is taken as it is, -unsigned included.
		{"linux-image-6.12.95+deb12-cloud-amd64-unsigned", "amd64", "linux-image-6.12.95+deb12-cloud-amd64-unsigned", "6.12.95-1~bpo12+1"},
		{"linux-image-7.3.4+deb13-cloud-amd64", "amd64", "linux-image-7.3.4+deb13-cloud-amd64", "7.3.4-1~bpo13+1"},
	} {
		got, err := ChooseDebian("bookworm-backports", c.pattern, c.arch, names(backports), backports)
		if err != nil || got.Package != c.pkg || got.Version != c.ver {
			t.Errorf("%s (%s) = %s %s, %v; want %s %s", c.pattern, c.arch, got.Package, got.Version, err, c.pkg, c.ver)
		}
	}
}

func TestChooseDebianNoMatch(t *testing.T) {
	for _, c := range []struct{ pattern, arch, want string }{
		{"linux-image-7.4.*-cloud-amd64", "amd64", `no package in trixie-backports matches "linux-image-7.4.*-cloud-amd64" for amd64; nearest: linux-image-7.3.10+deb13-cloud-amd64, linux-image-7.3.4+deb13-cloud-amd64, linux-image-6.12.95+deb12-cloud-amd64`},
		{"linux-image-7.3.4+deb13-cloud-amd46", "amd64", "nearest: linux-image-7.3.4+deb13-cloud-amd64"},
		// The arm64 package exists, but not for amd64.
		{"linux-image-6.12.95+deb12-cloud-arm64", "amd64", `no package in trixie-backports matches "linux-image-6.12.95+deb12-cloud-arm64" for amd64`},
		{"linux-image-*-cloud-amd64-dbg", "amd64", "matches"},
	} {
		_, err := ChooseDebian("trixie-backports", c.pattern, c.arch, names(backports), backports)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.pattern, err, c.want)
		}
	}
}

func TestDependency(t *testing.T) {
	d := backports[7]["Depends"]
	if got := dependency(d, "linux-binary-", "7.3.4-1~bpo13+1"); got != "linux-binary-7.3.4+deb13-cloud-amd64" {
		t.Errorf("linux-binary- = %q", got)
	}
	if got := dependency(d, "linux-binary-", "7.3.5-1"); got != "" {
		t.Errorf("another version: %q", got)
	}
	if got := dependency(backports[9]["Depends"], "linux-image-", "7.3.10-1~bpo13+1"); got != "linux-image-7.3.10+deb13-cloud-amd64" {
		t.Errorf("meta = %q", got)
	}
}

// seedDebian writes a cached build as FetchDebian leaves it.
func seedDebian(t *testing.T, cache, pkg, ver, suite string) *KernelImage {
	t.Helper()
	dir := debianDir(cache, pkg, ver)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	k := &KernelImage{Kernel: "6.12", Arch: "amd64", Suite: suite, Package: pkg, Version: ver,
		Path: filepath.Join(dir, "vmlinuz"), Config: filepath.Join(dir, "config")}
	for _, f := range []string{k.Path, k.Config} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := json.Marshal(k)
	if err := os.WriteFile(filepath.Join(dir, "kernel.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return k
}

func TestCachedDebian(t *testing.T) {
	cache := t.TempDir()
	seedDebian(t, cache, "linux-image-6.12.9+deb12-cloud-amd64", "6.12.9-1~bpo12+1", "bookworm-backports")
	seedDebian(t, cache, "linux-image-6.12.88+deb12-cloud-amd64", "6.12.88-1~bpo12+1", "bookworm-backports")
	seedDebian(t, cache, "linux-image-6.12.95+deb12-cloud-amd64", "6.12.95-1~bpo12+1", "other")
	k, err := CachedDebian(cache, "bookworm-backports", "linux-image-6.12.*-cloud-amd64", "amd64")
	if err != nil || k.Version != "6.12.88-1~bpo12+1" {
		t.Errorf("newest cached = %+v, %v; want 6.12.88", k, err)
	}
	if _, err := CachedDebian(cache, "bookworm-backports", "linux-image-6.12.*-cloud-amd64", "arm64"); err == nil {
		t.Error("arm64: found an amd64 build")
	}
	// A build whose vmlinuz is gone is not cached.
	os.Remove(filepath.Join(debianDir(cache, "linux-image-6.12.88+deb12-cloud-amd64", "6.12.88-1~bpo12+1"), "vmlinuz"))
	if k, _ := CachedDebian(cache, "bookworm-backports", "linux-image-6.12.*", "amd64"); k == nil || k.Version != "6.12.9-1~bpo12+1" {
		t.Errorf("after removing 6.12.88's vmlinuz: %+v", k)
	}
}

// offlineApt is a private apt configuration whose archive refuses connections: apt-get
// update fails the way it does without a network (exit 0, "W: Failed to fetch").
func offlineApt(t *testing.T) *Apt {
	t.Helper()
	if _, err := os.Stat(DefaultKeyring); err != nil {
		t.Skip("no debian-archive-keyring")
	}
	a := &Apt{Dir: filepath.Join(t.TempDir(), "apt"), URI: "http://127.0.0.1:9/debian", Keyring: DefaultKeyring}
	return a
}

// TestFetchDebianOffline: without the archive the newest cached match is used, saying so;
// with nothing cached the error says both.
func TestFetchDebianOffline(t *testing.T) {
	if _, err := os.Stat("/usr/bin/apt-get"); err != nil {
		t.Skip("no apt-get")
	}
	cache := t.TempDir()
	want := seedDebian(t, cache, "linux-image-6.12.90+deb12-cloud-amd64", "6.12.90-1~bpo12+1", "bookworm-backports")
	var progress bytes.Buffer
	t0 := time.Now()
	k, err := fetchDebian(context.Background(), offlineApt(t), cache, "bookworm-backports", "linux-image-6.12.*-cloud-amd64", "amd64", &progress)
	if err != nil || k.Path != want.Path {
		t.Fatalf("offline: %+v, %v\n%s", k, err, &progress)
	}
	if !strings.Contains(k.Note, "apt-get update could not reach the archive") || !strings.Contains(k.Note, "using the cached linux-image-6.12.90+deb12-cloud-amd64 6.12.90-1~bpo12+1") ||
		!strings.Contains(progress.String(), "note: ") {
		t.Errorf("note %q, progress:\n%s", k.Note, &progress)
	}
	_, err = fetchDebian(context.Background(), offlineApt(t), cache, "bookworm-backports", "linux-image-7.3.*-cloud-amd64", "amd64", nil)
	if err == nil || !strings.Contains(err.Error(), "could not reach the archive") || !strings.Contains(err.Error(), `no build matching "linux-image-7.3.*-cloud-amd64" for amd64 is cached`) {
		t.Errorf("nothing cached: %v", err)
	}
	if d := time.Since(t0); d > 20*time.Second {
		t.Errorf("offline fetches took %v", d)
	}
}

func TestFetchDebianBadInput(t *testing.T) {
	for _, c := range []struct{ suite, pattern, arch, want string }{
		{"bookworm-backports", "linux-image-[6.12", "amd64", "syntax error in pattern"},
		{"bookworm-backports", "Linux Image", "amd64", "neither a Debian package name nor a glob"},
		{"bookworm-backports", "linux-image-*", "s390x", "s390x"},
		{"bookworm main\ndeb http://x", "linux-image-*", "amd64", "is not a Debian suite name"},
	} {
		_, err := FetchDebian(context.Background(), c.suite, c.pattern, c.arch, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %q %q: %v; want %q", c.suite, c.pattern, c.arch, err, c.want)
		}
	}
}

// TestFetchDebianReal fetches bookworm-backports' newest 6.12 cloud kernel (cached after the
// first run: a second call does no network I/O) and asks for a suite the archive lacks.
func TestFetchDebianReal(t *testing.T) {
	if testing.Short() {
		t.Skip("fetches from the Debian archive")
	}
	ctx := context.Background()
	var progress bytes.Buffer
	k, err := FetchDebian(ctx, "bookworm-backports", "linux-image-6.12.*-cloud-amd64", "amd64", &progress)
	if err != nil {
		t.Fatalf("%v\n%s", err, &progress)
	}
	if !strings.HasPrefix(k.Release, "6.12.") || !strings.HasSuffix(k.Release, "+deb12-cloud-amd64") || k.Kernel != "6.12" {
		t.Errorf("kernel = %+v", k)
	}
	if k.ConfigValue("CONFIG_DEBUG_INFO_BTF") != "y" {
		t.Errorf("%s: CONFIG_DEBUG_INFO_BTF = %q", k.Config, k.ConfigValue("CONFIG_DEBUG_INFO_BTF"))
	}
	b, err := os.ReadFile(k.Path)
	if err != nil || len(b) < 1<<20 || string(b[0x202:0x206]) != "HdrS" {
		t.Errorf("%s is not a bzImage (%d bytes, %v)", k.Path, len(b), err)
	}
	// The index is fresh and the build cached: no apt-get update, no download.
	progress.Reset()
	k2, err := FetchDebian(ctx, "bookworm-backports", "linux-image-6.12.*-cloud-amd64", "amd64", &progress)
	if err != nil || k2.Path != k.Path || strings.Contains(progress.String(), "apt-get update") || strings.Contains(progress.String(), "fetching") {
		t.Errorf("second fetch: %+v, %v\n%s", k2, err, &progress)
	}
	_, err = FetchDebian(ctx, "bookworm-backportz", "linux-image-*", "amd64", nil)
	if err == nil || !strings.Contains(err.Error(), "suite bookworm-backportz is not in the Debian archive") {
		t.Errorf("unknown suite: %v", err)
	}
}
