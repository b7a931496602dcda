package vm

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/cavaliergopher/cpio"
)

// File is one regular file of an initramfs.
type File struct {
	Name string // absolute path inside the guest, e.g. "/init"
	Mode uint32 // permission bits
	Data []byte
}

// BuildInitramfs writes a gzip-compressed cpio "newc" archive holding files and their parent
// directories. /dev/console is not needed: the kernel unpacks its built-in default
// initramfs (which has it) before this one (init/initramfs.c, populate_rootfs).
func BuildInitramfs(files []File) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	w := cpio.NewWriter(zw)
	dirs := map[string]bool{"dev": true, "proc": true, "sys": true, "tmp": true}
	for _, f := range files {
		for d := path.Dir(strings.TrimPrefix(f.Name, "/")); d != "." && d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var names []string
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names) // parents sort before their children
	for _, d := range names {
		if err := w.WriteHeader(&cpio.Header{Name: d, Mode: cpio.TypeDir | 0o755}); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		name := strings.TrimPrefix(f.Name, "/")
		if name == "" {
			return nil, fmt.Errorf("initramfs file with empty name")
		}
		h := &cpio.Header{Name: name, Mode: cpio.TypeReg | cpio.FileMode(f.Mode&0o7777), Size: int64(len(f.Data))}
		if err := w.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := w.Write(f.Data); err != nil {
			return nil, fmt.Errorf("initramfs %s: %w", f.Name, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
