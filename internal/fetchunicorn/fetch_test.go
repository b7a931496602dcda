package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The fields of sid's libunicorn-dev 2.1.4-4 (amd64) as apt-cache shows them.
const (
	sidDepends = "libunicorn2t64 (= 2.1.4-4)"
	sidPC      = "Name: unicorn\nDescription: Unicorn emulator engine\nVersion: 2.1.4\nlibdir=/usr/lib/x86_64-linux-gnu\nincludedir=/usr/include\nLibs: -L${libdir} -lunicorn\nLibs.private: -lpthread -lm\nCflags: -I${includedir}\n"
)

func TestLibPackage(t *testing.T) {
	for _, c := range []struct{ depends, ver, want string }{
		{sidDepends, "2.1.4-4", "libunicorn2t64"},
		{"libc6 (>= 2.34), libunicorn2 (= 2.0.1.post1-1+b1)", "2.0.1.post1-1+b1", "libunicorn2"},
	} {
		if got, err := LibPackage(c.depends, c.ver); err != nil || got != c.want {
			t.Errorf("LibPackage(%q, %q) = %q, %v; want %q", c.depends, c.ver, got, err, c.want)
		}
	}
	if _, err := LibPackage(sidDepends, "2.1.3-1"); err == nil || !strings.Contains(err.Error(), "= 2.1.3-1") {
		t.Errorf("a version mismatch: %v", err)
	}
}

func TestPCFile(t *testing.T) {
	got, err := PCFile(sidPC, "/c/u/root/usr/include", "/c/u/root/usr/lib/x86_64-linux-gnu")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer("libdir=/usr", "libdir=/c/u/root/usr", "includedir=/usr", "includedir=/c/u/root/usr").Replace(sidPC)
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := PCFile("Name: unicorn\n", "/i", "/l"); err == nil {
		t.Error("a .pc without libdir= accepted")
	}
}

// TestCachedNoNetwork checks a library checked within max-age is returned
// as it is (no apt run: the cache has no apt directory afterwards).
func TestCachedNoNetwork(t *testing.T) {
	cache := t.TempDir()
	dir := filepath.Join(cache, "unicorn", "2.1.4-4-amd64")
	os.MkdirAll(filepath.Join(dir, "pkgconfig"), 0o755)
	os.WriteFile(filepath.Join(dir, "pkgconfig/unicorn.pc"), []byte(sidPC), 0o644)
	os.WriteFile(filepath.Join(dir, "version"), []byte("2.1.4-4\n"), 0o644)
	if err := link(filepath.Join(cache, "unicorn", "current"), "2.1.4-4-amd64"); err != nil {
		t.Fatal(err)
	}
	lib, err := Fetch(t.Context(), cache, "amd64", time.Hour, io.Discard)
	if err != nil || lib.Version != "2.1.4-4" || lib.Dir != dir {
		t.Fatalf("Fetch = %+v, %v", lib, err)
	}
	if _, err := os.Stat(filepath.Join(cache, "apt-unicorn")); err == nil {
		t.Error("apt ran although the cached library was fresh")
	}
}
