package realworld

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestExtractDeb: a package built here with dpkg-deb, one binary embedding two objects and
// one plain object file, comes out as three cached objects with their manifest.
func TestExtractDeb(t *testing.T) {
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("no dpkg-deb")
	}
	objs := objects(t)
	tree := t.TempDir()
	bin, offs := host(objs...)
	files := map[string][]byte{
		"DEBIAN/control":       []byte("Package: fake\nVersion: 1:2.0-1\nArchitecture: amd64\nMaintainer: x <x@example.org>\nDescription: test\n"),
		"usr/sbin/tool":        bin,
		"usr/lib/bpf/prog.o":   objs[1],
		"usr/share/doc/readme": []byte("no objects here"),
	}
	for p, b := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(tree, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tree, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	deb := filepath.Join(t.TempDir(), "fake.deb")
	if out, err := exec.Command("dpkg-deb", "--root-owner-group", "-b", tree, deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -b: %v: %s", err, out)
	}
	root := t.TempDir()
	dir := filepath.Join(root, cacheName("fake", "1:2.0-1", "amd64"))
	m, err := extractDeb(context.Background(), deb, dir, Fetched{Package: "fake", Version: "1:2.0-1", Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Fetched.Files != 2 || m.Fetched.Objects != 3 || len(m.Objects) != 3 {
		t.Fatalf("fetched %+v with %d objects, want 2 files and 3 objects", m.Fetched, len(m.Objects))
	}
	byName := map[string]Object{}
	for _, o := range m.Objects {
		byName[o.Name()] = o
		data, err := os.ReadFile(o.Path)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) != o.Size || !filepath.IsAbs(o.Path) {
			t.Errorf("%s: %d bytes at %s, manifest says %d", o.Name(), len(data), o.Path, o.Size)
		}
	}
	if o, ok := byName["usr/lib/bpf/prog.o"]; !ok || o.Offset != 0 {
		t.Errorf("the plain object is missing or misnamed: %v", byName)
	}
	for i, off := range offs {
		o, ok := byName["usr/sbin/tool@0x"+hexOff(off)]
		if !ok {
			t.Fatalf("object %d of usr/sbin/tool (at %#x) missing: %v", i, off, byName)
		}
		data, _ := os.ReadFile(o.Path)
		if !bytes.Equal(data, objs[i]) {
			t.Errorf("object %d of usr/sbin/tool differs from the embedded one", i)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "root")); !os.IsNotExist(err) {
		t.Errorf("the unpacked package was kept (%v)", err)
	}
	// The cache answers offline.
	c, err := newestCached(root, "fake", "amd64")
	if err != nil || len(c.Objects) != 3 || c.Fetched.Version != "1:2.0-1" {
		t.Errorf("newestCached = %+v, %v", c.Fetched, err)
	}
}

func hexOff(off int) string { return strconv.FormatInt(int64(off), 16) }

// TestReadManifestRefusesEscapes: a manifest naming a path outside its directory is refused.
func TestReadManifestRefusesEscapes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"objects":[{"path":"../../etc/passwd"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readManifest(dir); err == nil {
		t.Error("readManifest accepted ../../etc/passwd")
	}
}

func TestPickVersion(t *testing.T) {
	st := []map[string]string{
		{"Version": "0.26.0+ds-1", "Architecture": "amd64"},
		{"Version": "0.37.0+ds-8", "Architecture": "amd64"},
		{"Version": "0.37.0+ds-8", "Architecture": "arm64"},
		{"Version": "0.31.0+ds-7", "Architecture": "amd64"},
		{"Version": "0.40.0-1", "Architecture": "arm64"},
		{"Version": "0.31.0+ds-7", "Architecture": "amd64"}, // the same version from two suites
	}
	for _, c := range []struct {
		pin  string
		rank int
		want string
	}{{"", 1, "0.37.0+ds-8"}, {"", 2, "0.31.0+ds-7"}, {"", 3, "0.26.0+ds-1"}, {"0.26.0+ds-1", 1, "0.26.0+ds-1"}} {
		v, a, err := pickVersion(st, "amd64", c.pin, c.rank)
		if err != nil || v != c.want || a != "amd64" {
			t.Errorf("pickVersion(%q, %d) = %s %s %v, want %s", c.pin, c.rank, v, a, err, c.want)
		}
	}
	if v, _, err := pickVersion(st, "amd64", "", 4); err == nil {
		t.Errorf("rank 4 of 3 versions: %s", v)
	}
}
