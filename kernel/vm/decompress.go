package vm

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/ulikunitz/xz"
	"github.com/ulikunitz/xz/lzma"
)

// maxDecompressed bounds what one kernel payload may decompress to: a vmlinux is tens of MiB.
const maxDecompressed = 1 << 30

// The payload magics the kernel's compressors write (scripts/Makefile.lib cmd_gzip, cmd_bzip2,
// cmd_lzma, cmd_xzkern, cmd_lzo, cmd_lz4, cmd_zstd22; lib/decompress.c compressed_formats).
var compressionMagics = []struct {
	name  string
	magic []byte
}{
	{"gzip", []byte{0x1f, 0x8b}},
	{"bzip2", []byte("BZh")},
	{"lzma", []byte{0x5d, 0x00, 0x00}},
	{"xz", []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}},
	{"lzo", []byte{0x89, 'L', 'Z', 'O'}},
	{"lz4", []byte{0x02, 0x21, 0x4c, 0x18}},
	{"zstd", []byte{0x28, 0xb5, 0x2f, 0xfd}},
}

// compressionOf names the compressor whose magic b starts with, "" when none.
func compressionOf(b []byte) string {
	for _, m := range compressionMagics {
		if bytes.HasPrefix(b, m.magic) {
			return m.name
		}
	}
	return ""
}

// zbootCompression maps the COMP_TYPE string of an EFI zboot header
// (drivers/firmware/efi/libstub/Makefile.zboot comp-type-y) to a compressor name.
func zbootCompression(s string) string {
	switch s {
	case "xzkern":
		return "xz"
	case "zstd22":
		return "zstd"
	}
	return s
}

// errLZO: no lzo decompressor is linked in (lzo is rare as a kernel compression).
var errLZO = errors.New("an lzo payload cannot be decompressed here")

// decompressor reads comp-compressed data from r: one stream, trailing bytes ignored
// (the kernel build appends the uncompressed size, scripts/Makefile.lib size_append).
func decompressor(comp string, r io.Reader) (io.Reader, func(), error) {
	nop := func() {}
	switch comp {
	case "gzip":
		z, err := gzip.NewReader(r)
		if err != nil {
			return nil, nop, err
		}
		z.Multistream(false)
		return z, nop, nil
	case "bzip2":
		return bzip2.NewReader(r), nop, nil
	case "lzma":
		z, err := lzma.NewReader(bufio.NewReader(r))
		if err != nil {
			return nil, nop, err
		}
		return z, nop, nil
	case "xz":
		c := xz.ReaderConfig{SingleStream: true}
		z, err := c.NewReader(bufio.NewReader(r))
		if err != nil {
			return nil, nop, err
		}
		return z, nop, nil
	case "lz4":
		return lz4.NewReader(r), nop, nil
	case "zstd":
		z, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(maxDecompressed))
		if err != nil {
			return nil, nop, err
		}
		return z, z.Close, nil
	case "lzo":
		return nil, nop, errLZO
	}
	return nil, nop, fmt.Errorf("unknown compression %q", comp)
}

// limitedReader fails once more than max bytes come out of r, naming the limit.
type limitedReader struct {
	r    io.Reader
	n    int64
	max  int64
	what string
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n >= l.max {
		// One byte more would exceed the limit: see whether the stream has it.
		var b [1]byte
		if n, _ := io.ReadFull(l.r, b[:]); n > 0 {
			return 0, fmt.Errorf("%s decompresses to more than %d MiB", l.what, l.max>>20)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.max-l.n {
		p = p[:l.max-l.n]
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	return n, err
}

// The markers kernel/configs.c puts around the gzip-compressed .config (CONFIG_IKCONFIG), and
// the start of init/version.c's linux_banner.
var (
	ikcfgStart   = []byte("IKCFG_ST")
	ikcfgEnd     = []byte("IKCFG_ED")
	bannerPrefix = []byte("Linux version ")
)

const (
	bannerMax      = 1024    // longest banner read; the window keeps this much past a search
	configGzMax    = 4 << 20 // the compressed .config between the IKCFG markers
	configMax      = 4 << 20 // the .config itself (ReadKernelConfig's bound too)
	imageHeaderLen = 64      // arm64/riscv64 Image header
)

// errScanDone stops a copy into a kscan once it has everything it looks for.
var errScanDone = errors.New("scan done")

// kscan finds the banner and the IKCFG block in a decompressed kernel streamed through
// Write, holding only a small window of it.
type kscan struct {
	head    []byte   // the first imageHeaderLen bytes
	banners []string // "Linux version ..." strings, in order
	config  []byte   // the gzip stream between IKCFG_ST and IKCFG_ED
	hasCfg  bool     // config is complete
	total   int64

	win   []byte
	from  int           // win[:from] has been searched
	inCfg *bytes.Buffer // collecting the IKCFG block
	// stopWhenDone: return errScanDone once a banner and the config are found.
	stopWhenDone bool
}

func (s *kscan) Write(p []byte) (int, error) {
	n := len(p)
	s.total += int64(n)
	if len(s.head) < imageHeaderLen {
		s.head = append(s.head, p[:min(len(p), imageHeaderLen-len(s.head))]...)
	}
	if s.inCfg != nil {
		rest, err := s.feedConfig(p)
		if err != nil {
			return 0, err
		}
		if rest == nil {
			return n, nil
		}
		p = rest
	}
	s.win = append(s.win, p...)
	if err := s.scan(false); err != nil {
		return 0, err
	}
	if s.stopWhenDone && s.hasCfg && slices.ContainsFunc(s.banners, bannerComplete) {
		return n, errScanDone
	}
	return n, nil
}

// finish scans what is left in the window at the end of the stream.
func (s *kscan) finish() error {
	if s.inCfg != nil {
		return errors.New("IKCFG_ST without IKCFG_ED: the embedded config is cut off")
	}
	return s.scan(true)
}

// feedConfig appends p to the IKCFG block; once IKCFG_ED is seen it returns what follows it
// (non-nil), else nil.
func (s *kscan) feedConfig(p []byte) ([]byte, error) {
	before := s.inCfg.Len()
	s.inCfg.Write(p)
	b := s.inCfg.Bytes()
	from := max(0, before-len(ikcfgEnd)+1)
	if i := bytes.Index(b[from:], ikcfgEnd); i >= 0 {
		end := from + i
		s.config = bytes.Clone(b[:end])
		s.hasCfg = true
		rest := bytes.Clone(b[end+len(ikcfgEnd):])
		s.inCfg = nil
		if rest == nil {
			rest = []byte{}
		}
		return rest, nil
	}
	if len(b) > configGzMax {
		return nil, fmt.Errorf("the IKCFG block is larger than %d MiB", configGzMax>>20)
	}
	return nil, nil
}

func (s *kscan) scan(final bool) error {
	for {
		limit := len(s.win)
		if !final {
			limit -= bannerMax
		}
		if limit <= s.from {
			break
		}
		area := s.win[s.from : limit+min(len(s.win)-limit, len(bannerPrefix))]
		bi := bytes.Index(area, bannerPrefix)
		ci := -1
		if !s.hasCfg {
			ci = bytes.Index(area, ikcfgStart)
		}
		if bi >= 0 && s.from+bi >= limit {
			bi = -1
		}
		if ci >= 0 && s.from+ci >= limit {
			ci = -1
		}
		switch {
		case bi >= 0 && (ci < 0 || bi < ci):
			pos := s.from + bi
			if b, ok := parseBanner(s.win[pos:]); ok && len(s.banners) < 16 {
				s.banners = append(s.banners, b)
			}
			s.from = pos + len(bannerPrefix)
		case ci >= 0:
			pos := s.from + ci
			body := s.win[pos+len(ikcfgStart):]
			if !bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
				// The string, not the block: the block starts with a gzip header.
				s.from = pos + len(ikcfgStart)
				continue
			}
			s.inCfg = new(bytes.Buffer)
			rest, err := s.feedConfig(body)
			if err != nil {
				return err
			}
			if rest == nil {
				s.win, s.from = s.win[:0], 0
				if final {
					return errors.New("IKCFG_ST without IKCFG_ED: the embedded config is cut off")
				}
				return nil
			}
			s.win, s.from = rest, 0
		default:
			s.from = limit
		}
	}
	// Keep what has not been searched yet, and enough before it for a banner.
	keep := min(s.from, len(s.win))
	s.win = append(s.win[:0], s.win[keep:]...)
	s.from = 0
	return nil
}

// parseBanner reads linux_banner at the start of b: printable text up to NUL or newline.
func parseBanner(b []byte) (string, bool) {
	end := 0
	for end < len(b) && end < bannerMax && b[end] >= 0x20 && b[end] < 0x7f {
		end++
	}
	if end == len(b) || end == bannerMax || (b[end] != 0 && b[end] != '\n') {
		return "", false
	}
	s := string(b[:end])
	f := strings.Fields(s)
	if len(f) < 3 || f[2] == "" || f[2][0] < '0' || f[2][0] > '9' || strings.Contains(f[2], "%") {
		return "", false
	}
	return s, true
}

// bannerComplete: the banner has a build number ("#1 SMP"), the final link's.
func bannerComplete(b string) bool {
	i := strings.Index(b, " #")
	return i >= 0 && i+2 < len(b) && b[i+2] >= '0' && b[i+2] <= '9'
}

// bannerRelease is uname -r of a banner: its third word.
func bannerRelease(b string) string {
	f := strings.Fields(b)
	if len(f) < 3 {
		return ""
	}
	return f[2]
}

// gunzipConfig decompresses an IKCFG block, bounded.
func gunzipConfig(gz []byte) ([]byte, error) {
	z, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("the embedded config (IKCFG block): %v", err)
	}
	z.Multistream(false)
	b, err := io.ReadAll(io.LimitReader(z, configMax+1))
	if err != nil {
		return nil, fmt.Errorf("the embedded config (IKCFG block): %v", err)
	}
	if len(b) > configMax {
		return nil, fmt.Errorf("the embedded config is larger than %d MiB", configMax>>20)
	}
	return b, nil
}
