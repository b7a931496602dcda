package vm

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// decompressLimit is maxDecompressed, lowered by the fuzz test to keep each input fast.
var decompressLimit int64 = maxDecompressed

// maxKernelFile bounds the image file read: a compressed kernel is tens of MiB.
const maxKernelFile = 512 << 20

// The formats a KernelFile has.
const (
	FormatBzImage = "bzImage"
	FormatImage   = "Image"
	FormatImageGz = "Image.gz"
	FormatZboot   = "EFI zboot"
)

// KernelFile is a kernel image file as trampjit found it on disk.
type KernelFile struct {
	Path        string `json:"path"`
	Format      string `json:"format"`                // "bzImage", "Image", "Image.gz", "EFI zboot"
	Arch        string `json:"arch"`                  // "amd64", "arm64" or "riscv64"
	Compression string `json:"compression,omitempty"` // the payload's: gzip, xz, zstd, lz4, lzma, bzip2, lzo
	Banner      string `json:"banner,omitempty"`      // "Linux version 6.12.95+deb12-cloud-amd64 (...) #1 SMP ..."
	Release     string `json:"release"`               // uname -r: "6.12.95+deb12-cloud-amd64"
	SHA256      string `json:"sha256"`                // of the file
	// HeaderVersion is a bzImage's kernel_version string (its first word is the release).
	HeaderVersion string `json:"header_version,omitempty"`
	// BootProtocol is a bzImage's boot protocol version, "2.15".
	BootProtocol string `json:"boot_protocol,omitempty"`
	// EmbeddedConfig is the kernel's own .config (CONFIG_IKCONFIG), nil when it has none.
	// Filled by OpenKernelFile where the kernel was decompressed anyway (Image, Image.gz,
	// EFI zboot), else by Config.
	EmbeddedConfig []byte `json:"-"`

	data    []byte // the file
	payload []byte // the compressed kernel inside it; nil for an uncompressed Image

	cfgOnce sync.Once
	cfgDone bool // the kernel has been scanned for its config
	cfgErr  error
}

// OpenKernelFile reads and identifies path.
func OpenKernelFile(path string) (*KernelFile, error) {
	data, err := readKernelFile(path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	k := &KernelFile{Path: path, SHA256: hex.EncodeToString(sum[:]), data: data}
	if err := k.identify(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

func readKernelFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory, not a kernel image", path)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s), not a kernel image", path, st.Mode().Type())
	}
	if st.Size() > maxKernelFile {
		return nil, fmt.Errorf("%s: %d bytes: larger than the %d MiB a kernel image may be", path, st.Size(), maxKernelFile>>20)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKernelFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(data) > maxKernelFile {
		return nil, fmt.Errorf("%s: larger than the %d MiB a kernel image may be", path, maxKernelFile>>20)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%s: not a kernel image: the file is empty", path)
	}
	return data, nil
}

// identify reads the headers, in the order that keeps them apart: an EFI zboot and an
// x86 bzImage with its EFI stub both start with "MZ"; an arm64 Image with its EFI stub too.
func (k *KernelFile) identify() error {
	d := k.data
	switch {
	case len(d) >= 0x40 && string(d[0:2]) == "MZ" && string(d[4:8]) == "zimg":
		return k.identifyZboot()
	case len(d) >= 0x206 && string(d[0x202:0x206]) == "HdrS":
		return k.identifyBzImage()
	case imageArch(d) != "":
		return k.identifyImage()
	case bytes.HasPrefix(d, []byte{0x1f, 0x8b}):
		return k.identifyImageGz()
	case bytes.HasPrefix(d, []byte("\x7fELF")):
		return errors.New("not a kernel image: an ELF file (if it is a vmlinux: qemu boots the boot image the build makes beside it, arch/x86/boot/bzImage or arch/arm64/boot/Image)")
	}
	return fmt.Errorf("not a kernel image: no x86 bzImage, arm64/riscv64 Image or EFI zboot header (first bytes: %s)", firstBytes(d))
}

// imageArch is the architecture of an arm64 or riscv64 Image header
// (Documentation/arch/arm64/booting.rst, Documentation/arch/riscv/boot-image-header.rst).
func imageArch(d []byte) string {
	if len(d) < imageHeaderLen {
		return ""
	}
	switch {
	case string(d[0x38:0x3c]) == "ARM\x64":
		return "arm64"
	case string(d[0x38:0x3c]) == "RSC\x05", string(d[0x30:0x38]) == "RISCV\x00\x00\x00":
		return "riscv64"
	}
	return ""
}

// checkImage refuses a big-endian arm64 Image (flags bit 0, booting.rst): no profile is one.
func checkImage(d []byte) error {
	if imageArch(d) == "arm64" && binary.LittleEndian.Uint64(d[0x18:])&1 != 0 {
		return errors.New("a big-endian arm64 Image: trampjit captures little-endian kernels")
	}
	return nil
}

func (k *KernelFile) identifyBzImage() error {
	d := k.data
	k.Format = FormatBzImage
	k.Arch = "amd64"
	proto := le16(d, 0x206)
	k.BootProtocol = fmt.Sprintf("%d.%02d", proto>>8, proto&0xff)
	// payload_offset/length arrived in boot protocol 2.08, xloadflags in 2.12.
	if len(d) < 0x250 {
		return fmt.Errorf("truncated bzImage: the setup header needs %d bytes, the file has %d", 0x250, len(d))
	}
	if proto < 0x208 {
		return fmt.Errorf("bzImage boot protocol %s: older than 2.08, which has no payload_offset", k.BootProtocol)
	}
	if proto >= 0x20c && d[0x236]&1 == 0 { // XLF_KERNEL_64
		return errors.New("a 32-bit x86 bzImage (xloadflags has no XLF_KERNEL_64): trampjit captures amd64, arm64 and riscv64 kernels")
	}
	if kv := le16(d, 0x20e); kv != 0 {
		off := kv + 0x200
		if off >= len(d) {
			return fmt.Errorf("truncated bzImage: kernel_version points at byte %d, the file has %d", off, len(d))
		}
		end := bytes.IndexByte(d[off:min(len(d), off+512)], 0)
		if end < 0 {
			return fmt.Errorf("bzImage kernel_version at byte %d is not NUL-terminated within 512 bytes", off)
		}
		k.HeaderVersion = string(d[off : off+end])
		if f := strings.Fields(k.HeaderVersion); len(f) > 0 {
			k.Release = f[0]
		}
	}
	setup := int(d[0x1f1])
	if setup == 0 {
		setup = 4
	}
	pm := int64(setup+1) * 512
	off, n := pm+le32(d, 0x248), le32(d, 0x24c)
	if n < 4 {
		return fmt.Errorf("bzImage payload_length %d: no compressed kernel", n)
	}
	if off+n > int64(len(d)) {
		return fmt.Errorf("truncated bzImage: the payload ends at byte %d, the file has %d", off+n, len(d))
	}
	p := d[off : off+n]
	k.Compression = compressionOf(p)
	if k.Compression == "" {
		return fmt.Errorf("bzImage payload at byte %d has no known compression magic (first bytes: %s)", off, firstBytes(p))
	}
	if k.Compression != "gzip" {
		// size_append: the last 4 bytes are the uncompressed size, not the stream
		// (gzip's own trailer ends in the same field, arch/x86/boot/compressed/mkpiggy.c).
		p = p[:len(p)-4]
	}
	k.payload = p
	if k.Release == "" {
		// No kernel_version string (protocol < 2.00 layouts, or a zeroed field): the
		// release is the decompressed kernel's banner.
		s, err := k.decompress(true)
		if err != nil {
			return err
		}
		return k.scanned(s)
	}
	return nil
}

func (k *KernelFile) identifyImage() error {
	if err := checkImage(k.data); err != nil {
		return err
	}
	k.Format, k.Arch = FormatImage, imageArch(k.data)
	s := &kscan{}
	for d := k.data; len(d) > 0; {
		n := min(len(d), 1<<20)
		s.Write(d[:n])
		d = d[n:]
	}
	s.finish()
	return k.scanned(s)
}

func (k *KernelFile) identifyImageGz() error {
	k.Format, k.Compression, k.payload = FormatImageGz, "gzip", k.data
	s, err := k.decompress(true)
	if err != nil {
		return err
	}
	if k.Arch = imageArch(s.head); k.Arch == "" {
		return fmt.Errorf("not a kernel image: a gzip file whose content is no arm64/riscv64 Image (first bytes: %s)", firstBytes(s.head))
	}
	if err := checkImage(s.head); err != nil {
		return err
	}
	return k.scanned(s)
}

// zboot header: drivers/firmware/efi/libstub/zboot-header.S.
func (k *KernelFile) identifyZboot() error {
	d := k.data
	k.Format = FormatZboot
	off, n := le32(d, 8), le32(d, 12)
	name := d[24:0x38]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	if off+n > int64(len(d)) || n == 0 {
		return fmt.Errorf("truncated EFI zboot image: the payload ends at byte %d, the file has %d", off+n, len(d))
	}
	k.payload = d[off : off+n]
	k.Compression = compressionOf(k.payload)
	if k.Compression == "" {
		k.Compression = zbootCompression(string(name))
	}
	if k.Compression == "lzo" {
		return errors.New("an EFI zboot image with an lzo payload: it cannot be unpacked here (rebuild with CONFIG_KERNEL_GZIP or _ZSTD)")
	}
	s, err := k.decompress(true)
	if err != nil {
		return err
	}
	if k.Arch = imageArch(s.head); k.Arch == "" {
		return fmt.Errorf("EFI zboot payload is no arm64/riscv64 Image (first bytes: %s)", firstBytes(s.head))
	}
	if err := checkImage(s.head); err != nil {
		return err
	}
	return k.scanned(s)
}

// scanned takes the banner, release and config a scan of the whole kernel found. A broken
// config is Config's error, not the file's: the kernel can still boot with --config.
func (k *KernelFile) scanned(s *kscan) error {
	k.cfgDone = true
	err := s.cfgErr
	if err == nil && s.hasCfg {
		k.EmbeddedConfig, err = gunzipConfig(s.config)
	}
	if err != nil {
		k.cfgErr = fmt.Errorf("%s: %w", k.Path, err)
	}
	if len(s.banners) == 0 {
		return errors.New("no \"Linux version\" banner in the kernel: its release cannot be read")
	}
	k.Banner = pickBanner(s.banners, k.HeaderVersion)
	rel := bannerRelease(k.Banner)
	if k.Release != "" && rel != k.Release {
		return fmt.Errorf("the bzImage header says release %s, the decompressed kernel's banner %s", k.Release, rel)
	}
	k.Release = rel
	return nil
}

// pickBanner chooses linux_banner among the "Linux version" strings of a kernel. The
// kernel carries two: a weak one with an empty build number ("# SMP ...", init/version.c)
// and the one the final link puts in (init/version-timestamp.c, "#1 SMP ..."). A bzImage
// header's kernel_version ends with the same UTS_VERSION (arch/x86/boot/version.c).
func pickBanner(banners []string, header string) string {
	if i := strings.Index(header, ") #"); i >= 0 {
		for _, b := range banners {
			if strings.HasSuffix(b, header[i+1:]) {
				return b
			}
		}
	}
	for _, b := range banners {
		if bannerComplete(b) {
			return b
		}
	}
	return banners[len(banners)-1]
}

// decompress streams the payload through a kscan (stopping once banner and config are
// found when stopEarly).
func (k *KernelFile) decompress(stopEarly bool) (*kscan, error) {
	s := &kscan{stopWhenDone: stopEarly}
	if err := k.unpack(s); err != nil && !errors.Is(err, errScanDone) {
		return nil, err
	}
	s.finish()
	return s, nil
}

// unpack writes the decompressed payload to w, bounded by maxDecompressed.
func (k *KernelFile) unpack(w io.Writer) error {
	r, closer, err := decompressor(k.Compression, k.payload)
	if err != nil {
		if errors.Is(err, errLZO) {
			return fmt.Errorf("the %s's payload is lzo-compressed: its embedded config cannot be read from it; pass --config", k.Format)
		}
		return fmt.Errorf("%s payload: %v", k.Compression, err)
	}
	defer closer()
	lr := &limitedReader{r: r, max: decompressLimit}
	if _, err := io.Copy(w, lr); err != nil {
		if errors.Is(err, errScanDone) {
			return err
		}
		return fmt.Errorf("%s payload: %v", k.Compression, err)
	}
	return nil
}

// Config returns the kernel's embedded .config (CONFIG_IKCONFIG), decompressing the payload
// once; nil, nil when the kernel has no IKCFG block. For a bzImage it also fills Banner and
// checks that the decompressed kernel's release is the header's.
func (k *KernelFile) Config() ([]byte, error) {
	k.cfgOnce.Do(func() {
		if k.cfgDone {
			return
		}
		s, err := k.decompress(true)
		if err == nil {
			err = k.scanned(s)
		}
		if err != nil && k.cfgErr == nil {
			k.cfgErr = fmt.Errorf("%s: %w", k.Path, err)
		}
	})
	return k.EmbeddedConfig, k.cfgErr
}

// BootImage returns a file qemu's -kernel boots: the file itself, or (EFI zboot, whose
// payload qemu 7.2 cannot unpack) the decompressed Image written into dir.
func (k *KernelFile) BootImage(dir string) (string, error) {
	if k.Format != FormatZboot {
		return k.Path, nil
	}
	out := filepath.Join(dir, "Image-"+k.SHA256[:16])
	if st, err := os.Stat(out); err == nil && st.Mode().IsRegular() {
		return out, nil // written by an earlier call, named by the file's hash
	}
	f, err := os.CreateTemp(dir, ".Image-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	if err := k.unpack(f); err != nil {
		f.Close()
		return "", fmt.Errorf("%s: %w", k.Path, err)
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(f.Name(), out); err != nil {
		return "", err
	}
	return out, nil
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
	cfgErr  error    // the IKCFG block is broken (the banner is still looked for)

	win   []byte
	from  int           // win[:from] has been searched
	inCfg *bytes.Buffer // collecting the IKCFG block
	// stopWhenDone: return errScanDone once a banner and the config are found.
	stopWhenDone bool
}

var errConfigCut = errors.New("IKCFG_ST without IKCFG_ED: the embedded config is cut off")

func (s *kscan) Write(p []byte) (int, error) {
	n := len(p)
	if len(s.head) < imageHeaderLen {
		s.head = append(s.head, p[:min(len(p), imageHeaderLen-len(s.head))]...)
	}
	if s.inCfg != nil {
		if p = s.feedConfig(p); p == nil {
			return n, nil
		}
	}
	s.win = append(s.win, p...)
	s.scan(false)
	if s.stopWhenDone && s.hasCfg && slices.ContainsFunc(s.banners, bannerComplete) {
		return n, errScanDone
	}
	return n, nil
}

// finish scans what is left at the end of the stream.
func (s *kscan) finish() {
	if s.inCfg != nil {
		s.abandonConfig(errConfigCut)
	}
	s.scan(true)
	if s.inCfg != nil {
		s.abandonConfig(errConfigCut)
		s.scan(true)
	}
}

// abandonConfig records a broken IKCFG block and puts its bytes back to be searched for
// banners.
func (s *kscan) abandonConfig(err error) {
	s.cfgErr = err
	s.win, s.from = append(s.win[:0], s.inCfg.Bytes()...), 0
	s.inCfg = nil
}

// feedConfig appends p to the IKCFG block; once IKCFG_ED is seen (or the block is given up)
// it returns what is left to scan (non-nil), else nil.
func (s *kscan) feedConfig(p []byte) []byte {
	before := s.inCfg.Len()
	s.inCfg.Write(p)
	b := s.inCfg.Bytes()
	from := max(0, before-len(ikcfgEnd)+1)
	if i := bytes.Index(b[from:], ikcfgEnd); i >= 0 {
		end := from + i
		s.config = bytes.Clone(b[:end])
		s.hasCfg = true
		rest := append([]byte{}, b[end+len(ikcfgEnd):]...)
		s.inCfg = nil
		return rest
	}
	if len(b) > configGzMax {
		s.abandonConfig(fmt.Errorf("the IKCFG block is larger than %d MiB", configGzMax>>20))
		rest := s.win
		s.win = nil
		return rest
	}
	return nil
}

func (s *kscan) scan(final bool) {
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
		if !s.hasCfg && s.cfgErr == nil {
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
			rest := s.feedConfig(bytes.Clone(body))
			if rest == nil {
				s.win, s.from = s.win[:0], 0
				return // inside the block: the next Write continues it
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
