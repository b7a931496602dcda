package vm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ulikunitz/xz"
)

// tarOf builds a tar stream of regular files (and their "./" directory entries).
func tarOf(t *testing.T, files map[string]string, order []string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "./boot/", Typeflag: tar.TypeDir, Mode: 0o755})
	for _, name := range order {
		data := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(data))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// arOf builds an ar archive as dpkg-deb does (odd-sized members padded with '\n').
func arOf(members [][2]string) []byte {
	var b bytes.Buffer
	b.WriteString("!<arch>\n")
	for _, m := range members {
		fmt.Fprintf(&b, "%-16s%-12s%-6s%-6s%-8s%-10d`\n", m[0], "0", "0", "0", "100644", len(m[1]))
		b.WriteString(m[1])
		if len(m[1])%2 == 1 {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func xzOf(t *testing.T, data []byte) []byte {
	var b bytes.Buffer
	w, err := xz.NewWriter(&b)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	w.Close()
	return b.Bytes()
}

func gzOf(data []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	w.Close()
	return b.Bytes()
}

func writeDeb(t *testing.T, dataMember string, data []byte) string {
	t.Helper()
	control := tarOf(t, map[string]string{"./control": "Package: linux-image-test\n"}, []string{"./control"})
	deb := arOf([][2]string{{"debian-binary", "2.0\n"}, {"control.tar.xz", string(xzOf(t, control))}, {dataMember, string(data)}})
	p := filepath.Join(t.TempDir(), "test.deb")
	if err := os.WriteFile(p, deb, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExtractFromDeb(t *testing.T) {
	files := map[string]string{
		"./usr/share/doc/x":      "doc",
		"./boot/System.map-1.2":  "map",
		"./boot/config-1.2":      "CONFIG_BPF=y\n",
		"./boot/vmlinuz-1.2-odd": "kernel image bytes!", // odd size exercises ar padding upstream
	}
	order := []string{"./usr/share/doc/x", "./boot/System.map-1.2", "./boot/config-1.2", "./boot/vmlinuz-1.2-odd"}
	tarball := tarOf(t, files, order)
	for _, c := range []struct {
		member string
		data   []byte
	}{{"data.tar.xz", xzOf(t, tarball)}, {"data.tar.gz", gzOf(tarball)}, {"data.tar", tarball}} {
		t.Run(c.member, func(t *testing.T) {
			got, err := ExtractFromDeb(writeDeb(t, c.member, c.data), "boot/vmlinuz-", "boot/config-", "boot/missing-")
			if err != nil {
				t.Fatal(err)
			}
			if f := got["boot/vmlinuz-"]; f.Name != "boot/vmlinuz-1.2-odd" || string(f.Data) != "kernel image bytes!" {
				t.Errorf("vmlinuz: %q %q", f.Name, f.Data)
			}
			if f := got["boot/config-"]; string(f.Data) != "CONFIG_BPF=y\n" {
				t.Errorf("config: %q", f.Data)
			}
			if _, ok := got["boot/missing-"]; ok {
				t.Error("optional prefix without a file must be absent")
			}
		})
	}
}

func TestExtractFromDebMissing(t *testing.T) {
	tarball := tarOf(t, map[string]string{"./boot/config-1": "x"}, []string{"./boot/config-1"})
	_, err := ExtractFromDeb(writeDeb(t, "data.tar.xz", xzOf(t, tarball)), "boot/vmlinuz-")
	if !errors.Is(err, ErrNotInDeb) {
		t.Fatalf("want ErrNotInDeb, got %v", err)
	}
}

func TestExtractFromDebNotADeb(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.deb")
	os.WriteFile(p, []byte("PK\x03\x04 not an ar archive"), 0o644)
	if _, err := ExtractFromDeb(p, "boot/vmlinuz-"); err == nil {
		t.Fatal("a non-ar file must fail")
	}
}
