package vm

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"io"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
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

func le16(b []byte, off int) int { return int(binary.LittleEndian.Uint16(b[off:])) }
func le32(b []byte, off int) int64 {
	return int64(binary.LittleEndian.Uint32(b[off:]))
}

// firstBytes shows the start of a file: "7f 45 4c 46 02 01 01 00 ...".
func firstBytes(d []byte) string {
	n := min(len(d), 8)
	s := make([]string, n)
	for i := range n {
		s[i] = fmt.Sprintf("%02x", d[i])
	}
	out := strings.Join(s, " ")
	if len(d) > n {
		out += " ..."
	}
	return out
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
func decompressor(comp string, p []byte) (io.Reader, func(), error) {
	nop := func() {}
	r := bytes.NewReader(p)
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
		// A dictionary larger than the whole output is never used: the header's is capped at
		// the output limit (lzma -9 writes 64 MiB).
		if len(p) >= 5 && int64(binary.LittleEndian.Uint32(p[1:])) > decompressLimit {
			h := bytes.Clone(p[:5])
			binary.LittleEndian.PutUint32(h[1:], uint32(decompressLimit))
			p = append(h, p[5:]...)
			r = bytes.NewReader(p)
		}
		z, err := lzma.ReaderConfig{DictCap: int(decompressLimit)}.NewReader(bufio.NewReader(r))
		if err != nil {
			return nil, nop, err
		}
		return z, nop, nil
	case "xz":
		// Read here rather than by ulikunitz/xz: the kernel's streams carry a branch
		// filter, and the dictionary is bounded by the output limit.
		z, err := newXZReader(p)
		return z, nop, err
	case "lz4":
		return lz4.NewReader(r), nop, nil
	case "zstd":
		// The window is bounded by the output limit too (zstd -22 --ultra: 128 MiB).
		z, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(decompressLimit)), zstd.WithDecoderMaxWindow(uint64(decompressLimit)))
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
	r   io.Reader
	n   int64
	max int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n >= l.max {
		// One byte more would exceed the limit: see whether the stream has it.
		var b [1]byte
		if n, _ := io.ReadFull(l.r, b[:]); n > 0 {
			return 0, fmt.Errorf("decompresses to more than %d MiB", l.max>>20)
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

// The kernel's xz payloads carry a branch/call/jump filter before LZMA2 (scripts/xz_wrap.sh:
// --x86 for x86, --arm64 for arm64 with xz 5.4+), which github.com/ulikunitz/xz does not
// decode. xzReader reads such a stream itself (the .xz file format, version 1.2.1: stream
// header, blocks of filter flags, LZMA2 data, padding and check), with the LZMA2 decoder of
// ulikunitz/xz/lzma and the filter applied after it.

const (
	xzFilterX86   = 0x04
	xzFilterARM64 = 0x0a
	xzFilterLZMA2 = 0x21
)

// xzFilters reads the filter IDs of the first block of an xz stream, for choosing a reader.
func xzFilters(p []byte) ([]uint64, error) {
	if len(p) < 13 {
		return nil, errors.New("xz: truncated stream header")
	}
	h, err := parseXZBlockHeader(p[12:])
	if err != nil {
		return nil, err
	}
	var ids []uint64
	for _, f := range h.filters {
		ids = append(ids, f.id)
	}
	return ids, nil
}

type xzFilter struct {
	id    uint64
	props []byte
}

type xzBlockHeader struct {
	size    int // of the header itself
	filters []xzFilter
}

// xzVarint reads a multibyte integer (at most 9 bytes, 7 bits each, little end first).
func xzVarint(b []byte) (uint64, int, error) {
	var v uint64
	for i := 0; i < len(b) && i < 9; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1, nil
		}
	}
	return 0, 0, errors.New("xz: bad integer in a block header")
}

// parseXZBlockHeader reads the block header at the start of b; a nil header with no error
// is the index (no more blocks).
func parseXZBlockHeader(b []byte) (*xzBlockHeader, error) {
	if len(b) == 0 {
		return nil, errors.New("xz: truncated block header")
	}
	if b[0] == 0 {
		return nil, nil
	}
	size := (int(b[0]) + 1) * 4
	if len(b) < size {
		return nil, errors.New("xz: truncated block header")
	}
	hb := b[:size]
	if crc32.ChecksumIEEE(hb[:size-4]) != binary.LittleEndian.Uint32(hb[size-4:]) {
		return nil, errors.New("xz: block header CRC32 mismatch")
	}
	flags := hb[1]
	pos := 2
	for _, present := range []bool{flags&0x40 != 0, flags&0x80 != 0} { // compressed, uncompressed size
		if present {
			_, n, err := xzVarint(hb[pos : size-4])
			if err != nil {
				return nil, err
			}
			pos += n
		}
	}
	h := &xzBlockHeader{size: size}
	for range int(flags&3) + 1 {
		id, n, err := xzVarint(hb[pos : size-4])
		if err != nil {
			return nil, err
		}
		pos += n
		np, n, err := xzVarint(hb[pos : size-4])
		if err != nil {
			return nil, err
		}
		pos += n
		if np > uint64(size-4-pos) {
			return nil, errors.New("xz: filter properties past the block header")
		}
		h.filters = append(h.filters, xzFilter{id: id, props: hb[pos : pos+int(np)]})
		pos += int(np)
	}
	return h, nil
}

// xzCheckSize is the size of a block's check field for a stream's check type.
func xzCheckSize(t byte) int {
	if t == 0 {
		return 0
	}
	return 4 << ((t - 1) / 3)
}

// xzReader decodes an xz stream whose blocks are [BCJ x86 or ARM64,] LZMA2.
type xzReader struct {
	p         []byte
	pos       int // next block header
	checkType byte

	lz      io.Reader // the current block's LZMA2 data
	lzCount *countingReader
	blockAt int // the current block's header offset
	bcj     bcj
	check   hash.Hash // of the block's output, for the stream's check type
	buf     []byte    // decoded, filtered up to done
	done    int
	out     int // buf[:out] already returned
	lzEOF   bool
	end     bool
}

type countingReader struct {
	r *bytes.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// bcj is a branch-converter decoder: it converts what it can of b in place and returns how
// many bytes are final (the rest waits for more data).
type bcj interface{ decode(b []byte) int }

func newXZReader(p []byte) (*xzReader, error) {
	if len(p) < 12 || p[6] != 0 {
		return nil, errors.New("xz: bad stream header")
	}
	if crc32.ChecksumIEEE(p[6:8]) != binary.LittleEndian.Uint32(p[8:12]) {
		return nil, errors.New("xz: stream header CRC32 mismatch")
	}
	return &xzReader{p: p, pos: 12, checkType: p[7] & 0x0f}, nil
}

func (x *xzReader) startBlock() error {
	h, err := parseXZBlockHeader(x.p[x.pos:])
	if err != nil {
		return err
	}
	if h == nil {
		x.end = true
		return nil
	}
	last := h.filters[len(h.filters)-1]
	if last.id != xzFilterLZMA2 || len(last.props) != 1 || last.props[0] > 40 {
		return fmt.Errorf("xz: the last filter is %#x, not LZMA2", last.id)
	}
	dict := uint32(0xffffffff)
	if d := last.props[0]; d < 40 {
		dict = (2 | uint32(d&1)) << (d/2 + 11)
	}
	x.bcj = nil
	switch len(h.filters) {
	case 1:
	case 2:
		f := h.filters[0]
		var start uint32
		if len(f.props) == 4 {
			start = binary.LittleEndian.Uint32(f.props)
		} else if len(f.props) != 0 {
			return fmt.Errorf("xz: filter %#x has %d bytes of properties", f.id, len(f.props))
		}
		switch f.id {
		case xzFilterX86:
			x.bcj = &bcjX86{pos: start, prevPos: start - 5}
		case xzFilterARM64:
			x.bcj = &bcjARM64{pos: start}
		default:
			return fmt.Errorf("xz: filter %#x is not supported (only the x86 and ARM64 branch filters)", f.id)
		}
	default:
		return fmt.Errorf("xz: a chain of %d filters is not supported", len(h.filters))
	}
	x.blockAt = x.pos
	x.lzCount = &countingReader{r: bytes.NewReader(x.p[x.pos+h.size:])}
	// A dictionary larger than the whole output is never used: cap it at the limit.
	x.lz, err = lzma.Reader2Config{DictCap: int(min(max(dict, lzma.MinDictCap), uint32(decompressLimit)))}.NewReader2(x.lzCount)
	if err != nil {
		return fmt.Errorf("xz: %v", err)
	}
	x.check = nil
	switch x.checkType {
	case 0x01:
		x.check = crc32.NewIEEE()
	case 0x04:
		x.check = crc64.New(crc64.MakeTable(crc64.ECMA))
	case 0x0a:
		x.check = sha256.New()
	}
	x.lzEOF = false
	x.buf, x.done, x.out = x.buf[:0], 0, 0
	return nil
}

// endBlock skips the block's padding and verifies its check.
func (x *xzReader) endBlock() error {
	hdr := x.p[x.blockAt]
	data := x.blockAt + (int(hdr)+1)*4 + x.lzCount.n
	pad := (4 - (data-x.blockAt)%4) % 4
	checkAt := data + pad
	end := checkAt + xzCheckSize(x.checkType)
	if end > len(x.p) {
		return errors.New("xz: truncated block")
	}
	if x.check != nil {
		// CRC32 and CRC64 are stored little-endian, SHA-256 as its bytes.
		sum := x.check.Sum(nil)
		if x.checkType != 0x0a {
			slices.Reverse(sum)
		}
		if !bytes.Equal(sum, x.p[checkAt:end]) {
			return errors.New("xz: block check mismatch")
		}
	}
	x.pos, x.lz = end, nil
	return nil
}

func (x *xzReader) Read(p []byte) (int, error) {
	for {
		if x.out < x.done {
			n := copy(p, x.buf[x.out:x.done])
			x.out += n
			return n, nil
		}
		if x.end {
			return 0, io.EOF
		}
		if x.lz == nil {
			if err := x.startBlock(); err != nil {
				return 0, err
			}
			continue
		}
		if x.lzEOF {
			if err := x.endBlock(); err != nil {
				return 0, err
			}
			continue
		}
		// Keep the bytes the filter could not finish, read more behind them.
		rest := copy(x.buf, x.buf[x.done:])
		x.buf = x.buf[:rest]
		x.done, x.out = 0, 0
		if cap(x.buf) < 64<<10 {
			x.buf = append(make([]byte, 0, 64<<10), x.buf...)
		}
		n, err := x.lz.Read(x.buf[rest:cap(x.buf)])
		x.buf = x.buf[:rest+n]
		if err == io.EOF {
			x.lzEOF = true
		} else if err != nil {
			return 0, fmt.Errorf("xz: %v", err)
		}
		if x.bcj != nil && !x.lzEOF {
			x.done = x.bcj.decode(x.buf)
		} else {
			if x.bcj != nil {
				x.done = x.bcj.decode(x.buf)
			}
			x.done = len(x.buf) // the stream's last bytes pass unconverted
		}
		if x.check != nil {
			x.check.Write(x.buf[:x.done])
		}
	}
}

// bcjX86 undoes xz's x86 branch converter: the rel32 of E8 (call) and E9 (jmp) that the
// encoder made absolute, with its heuristics for which E8/E9 bytes are instructions
// (a mask of the recent unconverted candidates).
type bcjX86 struct {
	pos      uint32 // stream offset of b[0]
	prevPos  uint32
	prevMask uint32
}

var (
	x86MaskAllowed = [8]bool{true, true, true, false, true, false, false, false}
	x86MaskBit     = [8]uint32{0, 1, 2, 2, 3, 3, 3, 3}
)

// x86MSByte: the top byte of a rel32 that is plausibly a near branch.
func x86MSByte(b byte) bool { return b == 0 || b == 0xff }

func (f *bcjX86) decode(b []byte) int {
	if len(b) < 5 {
		return 0
	}
	if f.pos-f.prevPos > 5 {
		f.prevPos = f.pos - 5
	}
	i := 0
	for i+5 <= len(b) {
		if b[i] != 0xe8 && b[i] != 0xe9 {
			i++
			continue
		}
		at := f.pos + uint32(i)
		if gap := at - f.prevPos; gap > 5 {
			f.prevMask = 0
		} else {
			for range gap {
				f.prevMask = (f.prevMask & 0x77) << 1
			}
		}
		f.prevPos = at
		hi := b[i+4]
		m := f.prevMask >> 1
		if !x86MSByte(hi) || m >= 0x10 || !x86MaskAllowed[m&7] {
			f.prevMask |= 1
			if x86MSByte(hi) {
				f.prevMask |= 0x10
			}
			i++
			continue
		}
		src := binary.LittleEndian.Uint32(b[i+1:])
		var dst uint32
		for {
			dst = src - (at + 5)
			if f.prevMask == 0 {
				break
			}
			sh := 8 * x86MaskBit[m&7]
			if !x86MSByte(byte(dst >> (24 - sh))) {
				break
			}
			src = dst ^ (1<<(32-sh) - 1)
		}
		// Bit 24 of the result is sign-extended into the top byte.
		dst &= 0x01ffffff
		if dst&0x01000000 != 0 {
			dst |= 0xff000000
		}
		binary.LittleEndian.PutUint32(b[i+1:], dst)
		i += 5
		f.prevMask = 0
	}
	f.pos += uint32(i)
	return i
}

// bcjARM64 undoes xz's ARM64 converter: BL's imm26 and ADRP's imm21 (within +-512 MiB)
// made absolute by the encoder.
type bcjARM64 struct{ pos uint32 }

func (f *bcjARM64) decode(b []byte) int {
	i := 0
	for ; i+4 <= len(b); i += 4 {
		pc := f.pos + uint32(i)
		ins := binary.LittleEndian.Uint32(b[i:])
		switch {
		case ins>>26 == 0x25: // BL
			ins = 0x94000000 | (ins-pc>>2)&0x03ffffff
		case ins&0x9f000000 == 0x90000000: // ADRP
			src := (ins>>29)&3 | (ins>>3)&0x001ffffc
			if (src+0x00020000)&0x001c0000 != 0 {
				continue
			}
			dst := src - pc>>12
			ins = ins&0x9000001f | (dst&3)<<29 | (dst&0x0003fffc)<<3 | (-(dst & 0x00020000))&0x00e00000
		default:
			continue
		}
		binary.LittleEndian.PutUint32(b[i:], ins)
	}
	f.pos += uint32(i)
	return i
}
