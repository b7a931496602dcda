package vm

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/ulikunitz/xz"
)

// ErrNotInDeb is returned when a .deb has no file matching the wanted prefix.
var ErrNotInDeb = errors.New("no such file in the package")

// DebFile is a file extracted from a package.
type DebFile struct {
	Name string // path inside the package, without a leading "./"
	Data []byte
}

// ExtractFromDeb reads the .deb at path (an ar archive holding data.tar.{xz,gz}) and returns,
// for each prefix (e.g. "boot/vmlinuz-"), the first regular file whose path starts with it.
// It fails with ErrNotInDeb when the first prefix has no match; later ones are optional.
func ExtractFromDeb(path string, prefixes ...string) (map[string]DebFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := extractFromDeb(bufio.NewReader(f), prefixes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

func extractFromDeb(r io.Reader, prefixes []string) (map[string]DebFile, error) {
	magic := make([]byte, 8)
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != "!<arch>\n" {
		return nil, errors.New("not a Debian package (no ar magic)")
	}
	hdr := make([]byte, 60)
	for {
		if _, err := io.ReadFull(r, hdr); err != nil {
			if err == io.EOF {
				return nil, errors.New("no data.tar member in the package")
			}
			return nil, fmt.Errorf("read ar header: %w", err)
		}
		name := strings.TrimSuffix(strings.TrimSpace(string(hdr[0:16])), "/")
		size, err := strconv.ParseInt(strings.TrimSpace(string(hdr[48:58])), 10, 64)
		if err != nil || string(hdr[58:60]) != "`\n" {
			return nil, fmt.Errorf("corrupt ar header for member %q", name)
		}
		body := io.LimitReader(r, size)
		if strings.HasPrefix(name, "data.tar") {
			tr, err := decompress(name, body)
			if err != nil {
				return nil, err
			}
			return findInTar(tr, prefixes)
		}
		if _, err := io.Copy(io.Discard, body); err != nil {
			return nil, err
		}
		if size%2 == 1 { // ar pads members to even offsets
			if _, err := io.ReadFull(r, make([]byte, 1)); err != nil {
				return nil, err
			}
		}
	}
}

func decompress(member string, r io.Reader) (io.Reader, error) {
	switch {
	case strings.HasSuffix(member, ".xz"):
		return xz.NewReader(r)
	case strings.HasSuffix(member, ".zst"):
		// Debian's archive compresses kernel packages with xz; zstd would need a new module.
		return nil, fmt.Errorf("member %q is zstd-compressed, which trampjit does not read yet", member)
	case strings.HasSuffix(member, ".gz"):
		return gzip.NewReader(r)
	case member == "data.tar":
		return r, nil
	}
	return nil, fmt.Errorf("unsupported compression in member %q", member)
}

func findInTar(r io.Reader, prefixes []string) (map[string]DebFile, error) {
	out := map[string]DebFile{}
	tr := tar.NewReader(r)
	for len(out) < len(prefixes) {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read data.tar: %w", err)
		}
		p := strings.TrimPrefix(h.Name, "./")
		for _, pre := range prefixes {
			if _, done := out[pre]; done || h.Typeflag != tar.TypeReg || !strings.HasPrefix(p, pre) {
				continue
			}
			var b bytes.Buffer
			if _, err := io.Copy(&b, tr); err != nil {
				return nil, fmt.Errorf("read %s: %w", p, err)
			}
			out[pre] = DebFile{Name: p, Data: b.Bytes()}
		}
	}
	if len(prefixes) > 0 {
		if _, ok := out[prefixes[0]]; !ok {
			return nil, fmt.Errorf("%w: %s*", ErrNotInDeb, prefixes[0])
		}
	}
	return out, nil
}
