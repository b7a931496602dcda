package vm

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

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

func le16(b []byte, off int) int { return int(binary.LittleEndian.Uint16(b[off:])) }
func le32(b []byte, off int) int64 {
	return int64(binary.LittleEndian.Uint32(b[off:]))
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
		return errors.New("not a kernel image: an ELF vmlinux; qemu boots the compressed image: arch/x86/boot/bzImage or arch/arm64/boot/Image")
	}
	return fmt.Errorf("not a kernel image: no x86 bzImage, arm64/riscv64 Image or EFI zboot header (first bytes: %s)", firstBytes(d))
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
	if proto < 0x208 || len(d) < 0x250 {
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
		return errors.New("bzImage has no kernel_version string: its release cannot be read")
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
		if _, err := s.Write(d[:n]); err != nil {
			return err
		}
		d = d[n:]
	}
	return k.scanned(s, s.finish())
}

func (k *KernelFile) identifyImageGz() error {
	k.Format, k.Compression, k.payload = FormatImageGz, "gzip", k.data
	s, err := k.decompress(false)
	if err != nil {
		return err
	}
	if k.Arch = imageArch(s.head); k.Arch == "" {
		return fmt.Errorf("not a kernel image: a gzip file whose content is no arm64/riscv64 Image (first bytes: %s)", firstBytes(s.head))
	}
	if err := checkImage(s.head); err != nil {
		return err
	}
	return k.scanned(s, nil)
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
	s, err := k.decompress(false)
	if err != nil {
		return err
	}
	if k.Arch = imageArch(s.head); k.Arch == "" {
		return fmt.Errorf("EFI zboot payload is no arm64/riscv64 Image (first bytes: %s)", firstBytes(s.head))
	}
	if err := checkImage(s.head); err != nil {
		return err
	}
	return k.scanned(s, nil)
}

// scanned takes the banner, release and config a scan of the whole kernel found.
func (k *KernelFile) scanned(s *kscan, err error) error {
	if err != nil {
		return err
	}
	k.cfgDone = true
	if s.hasCfg {
		cfg, err := gunzipConfig(s.config)
		if err != nil {
			return err
		}
		k.EmbeddedConfig = cfg
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
	if err := s.finish(); err != nil {
		return nil, err
	}
	return s, nil
}

// unpack writes the decompressed payload to w, bounded by maxDecompressed.
func (k *KernelFile) unpack(w io.Writer) error {
	r, closer, err := decompressor(k.Compression, bytes.NewReader(k.payload))
	if err != nil {
		if errors.Is(err, errLZO) {
			return fmt.Errorf("the %s's payload is lzo-compressed: its embedded config cannot be read from it; pass --config", k.Format)
		}
		return fmt.Errorf("%s payload: %v", k.Compression, err)
	}
	defer closer()
	lr := &limitedReader{r: r, max: maxDecompressed, what: "the " + k.Compression + " payload"}
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
			err = k.scanned(s, nil)
		}
		if err != nil {
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
