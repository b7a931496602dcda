package vm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestOpenDebianKernels identifies every cached Debian kernel; the release and arch to
// expect are the packaging's (kernel.json, written by the fetch from the package and its
// file names), the format what file(1) says where it is installed.
func TestOpenDebianKernels(t *testing.T) {
	home, _ := os.UserHomeDir()
	// The profiles' kernels, and those fetched by name (kernels/debian/<package>_<version>).
	files, _ := filepath.Glob(filepath.Join(home, ".cache/trampjit/kernels/*/vmlinuz-*"))
	more, _ := filepath.Glob(filepath.Join(home, ".cache/trampjit/kernels/debian/*/vmlinuz-*"))
	files = append(files, more...)
	if len(files) == 0 {
		t.Skip("no cached Debian kernels (~/.cache/trampjit/kernels)")
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			var want struct{ Release, Arch, Config string }
			t.Logf("%s", f)
			b, err := os.ReadFile(filepath.Join(filepath.Dir(f), "kernel.json"))
			if err != nil {
				t.Skip(err)
			}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			k, err := OpenKernelFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if k.Release != want.Release || k.Arch != want.Arch {
				t.Errorf("release %s arch %s, the package says %s %s", k.Release, k.Arch, want.Release, want.Arch)
			}
			wantFormat := map[string]string{"amd64": FormatBzImage, "arm64": FormatImage, "riscv64": FormatImage}[want.Arch]
			if k.Format != wantFormat {
				t.Errorf("format %s, want %s", k.Format, wantFormat)
			}
			if out, err := exec.Command("file", "-b", f).Output(); err == nil {
				s := string(out)
				switch k.Format {
				case FormatBzImage:
					if !strings.Contains(s, "bzImage, version "+k.HeaderVersion+",") {
						t.Errorf("file(1) says %q; header version %q", s, k.HeaderVersion)
					}
				case FormatImage:
					// file(1) names an arm64 Image by its header, a riscv64 one (with its EFI
					// stub) as a PE32+ file.
					wantFile := map[string]string{"arm64": "ARM64 boot executable Image, little-endian", "riscv64": "RISC-V 64-bit"}[want.Arch]
					if !strings.Contains(s, wantFile) {
						t.Errorf("file(1) says %q", s)
					}
				}
			}
			cfg, err := k.Config() // for a bzImage, this decompresses the kernel and reads its banner
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(k.Banner, "Linux version "+want.Release+" (") || !strings.Contains(k.Banner, " #1 SMP") {
				t.Errorf("banner %q", k.Banner)
			}
			// Debian builds without CONFIG_IKCONFIG: its packaged config says so.
			pkgCfg, err := os.ReadFile(want.Config)
			if err != nil {
				t.Skip(err)
			}
			if ikconfig := bytes.Contains(pkgCfg, []byte("\nCONFIG_IKCONFIG=y\n")); ikconfig != (cfg != nil) {
				t.Errorf("embedded config %d bytes; the package's config has IKCONFIG=y: %v", len(cfg), ikconfig)
			}
			if k.Compression != "" {
				if got := compressionOf(k.payload); got != k.Compression {
					t.Errorf("compression %s, magic says %s", k.Compression, got)
				}
			}
			if p, err := k.BootImage(t.TempDir()); err != nil || p != f {
				t.Errorf("BootImage = %s, %v; want the file itself", p, err)
			}
		})
	}
}

// TestOpenSynthetic builds each format with each compressor and reads it back.
func TestOpenSynthetic(t *testing.T) {
	const rel = "6.12.95+deb12-cloud-amd64"
	kernel := fakeKernel(rel, []byte(testConfig), 40000)
	for _, comp := range []string{"gzip", "bzip2", "lzma", "xz", "lz4", "zstd"} {
		t.Run("bzImage-"+comp, func(t *testing.T) {
			bcj := map[string]string{"xz": "x86"}[comp]
			hv := rel + " (builder@host) #1 SMP PREEMPT_DYNAMIC Tue Dec  1 12:00:00 UTC 2026"
			path := writeFile(t, "bzImage", bzImage(hv, kernelPayload(t, comp, bcj, kernel)))
			k := openOK(t, path, FormatBzImage, "amd64", comp, rel)
			if k.Banner != "" || k.HeaderVersion != hv {
				t.Errorf("before Config: banner %q, header %q", k.Banner, k.HeaderVersion)
			}
			checkConfig(t, k)
			if out, err := exec.Command("file", "-b", path).Output(); err == nil && !strings.Contains(string(out), "bzImage, version "+hv) {
				t.Errorf("file(1) says %q", out)
			}
		})
		t.Run("zboot-"+comp, func(t *testing.T) {
			if comp == "bzip2" {
				t.Skip("EFI zboot has no bzip2 (Makefile.zboot)")
			}
			image := armImage(fakeKernel("6.12.95+deb12-cloud-arm64", []byte(testConfig), 40000))
			name := map[string]string{"xz": "xzkern", "zstd": "zstd22"}[comp]
			if name == "" {
				name = comp
			}
			p := compress(t, comp, map[string]string{"xz": "arm64"}[comp], image)
			path := writeFile(t, "vmlinuz.efi", zboot(name, append(p, le32bytes(len(image))...)))
			k := openOK(t, path, FormatZboot, "arm64", comp, "6.12.95+deb12-cloud-arm64")
			checkConfig(t, k)
			dir := t.TempDir()
			boot, err := k.BootImage(dir)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(boot); !bytes.Equal(b, image) || filepath.Dir(boot) != dir {
				t.Errorf("BootImage %s: %d bytes, not the %d-byte Image", boot, len(b), len(image))
			}
			if out, err := exec.Command("file", "-b", boot).Output(); err == nil && !strings.Contains(string(out), "ARM64 boot executable Image") {
				t.Errorf("file(1) says %q of the unpacked Image", out)
			}
			if again, err := k.BootImage(dir); err != nil || again != boot {
				t.Errorf("second BootImage = %s, %v", again, err)
			}
		})
	}
	t.Run("Image", func(t *testing.T) {
		path := writeFile(t, "Image", armImage(fakeKernel("7.2.0-rc1", []byte(testConfig), 40000)))
		checkConfig(t, openOK(t, path, FormatImage, "arm64", "", "7.2.0-rc1"))
		if out, err := exec.Command("file", "-b", path).Output(); err == nil && !strings.Contains(string(out), "ARM64 boot executable Image, little-endian") {
			t.Errorf("file(1) says %q", out)
		}
	})
	t.Run("Image.gz", func(t *testing.T) {
		path := writeFile(t, "Image.gz", compress(t, "gzip", "", armImage(fakeKernel("6.1.0-50-cloud-arm64", nil, 40000))))
		k := openOK(t, path, FormatImageGz, "arm64", "gzip", "6.1.0-50-cloud-arm64")
		if cfg, err := k.Config(); cfg != nil || err != nil {
			t.Errorf("Config of a kernel without IKCFG = %d bytes, %v", len(cfg), err)
		}
	})
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprintf("riscv64-oldmagic=%v", old), func(t *testing.T) {
			path := writeFile(t, "Image", riscvImage(fakeKernel("6.12.1", []byte(testConfig), 1000), old))
			checkConfig(t, openOK(t, path, FormatImage, "riscv64", "", "6.12.1"))
		})
	}
	t.Run("bzImage-no-kernel_version", func(t *testing.T) {
		b := bzImage("ignored", kernelPayload(t, "gzip", "", kernel))
		binary.LittleEndian.PutUint16(b[0x20e:], 0)
		k := openOK(t, writeFile(t, "bzImage", b), FormatBzImage, "amd64", "gzip", rel)
		checkConfig(t, k)
	})
	t.Run("riscv64-Image.gz", func(t *testing.T) {
		path := writeFile(t, "Image.gz", compress(t, "gzip", "", riscvImage(fakeKernel("6.12.1", []byte(testConfig), 1000), false)))
		checkConfig(t, openOK(t, path, FormatImageGz, "riscv64", "gzip", "6.12.1"))
	})
	t.Run("lzo", func(t *testing.T) {
		// No lzop here: the magic is what identifies it, and the config cannot be read.
		payload := append([]byte("\x89LZO\x00\r\n\x1a\n"), filler(100, 5)...)
		path := writeFile(t, "bzImage", bzImage("6.1.0 (b@h) #1 SMP", payload))
		k := openOK(t, path, FormatBzImage, "amd64", "lzo", "6.1.0")
		_, err := k.Config()
		want := path + ": the bzImage's payload is lzo-compressed: its embedded config cannot be read from it; pass --config"
		if err == nil || err.Error() != want {
			t.Errorf("Config: %v\nwant %s", err, want)
		}
	})
}

func openOK(t *testing.T, path, format, arch, comp, release string) *KernelFile {
	t.Helper()
	k, err := OpenKernelFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if k.Format != format || k.Arch != arch || k.Compression != comp || k.Release != release {
		t.Errorf("got %s %s %q %s, want %s %s %q %s", k.Format, k.Arch, k.Compression, k.Release, format, arch, comp, release)
	}
	b, _ := os.ReadFile(path)
	if out, err := exec.Command("sha256sum", path).Output(); err == nil && !strings.HasPrefix(string(out), k.SHA256+" ") {
		t.Errorf("sha256 %s, sha256sum says %s (%d bytes)", k.SHA256, out, len(b))
	}
	return k
}

// checkConfig: the embedded config is testConfig, the banner the final link's.
func checkConfig(t *testing.T, k *KernelFile) {
	t.Helper()
	cfg, err := k.Config()
	if err != nil {
		t.Fatal(err)
	}
	if string(cfg) != testConfig {
		t.Errorf("embedded config %q", cfg)
	}
	if want := "Linux version " + k.Release + " (builder@host) (gcc 14.2.0) #1 SMP PREEMPT_DYNAMIC Tue Dec  1 12:00:00 UTC 2026"; k.Banner != want {
		t.Errorf("banner %q\nwant   %q", k.Banner, want)
	}
	c, err := k.KernelConfig()
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != "embedded in "+k.Path || c.Value("LSM") != "landlock,bpf" || c.Release() != "6.12.95" {
		t.Errorf("KernelConfig: source %q, LSM %q, release %q", c.Source, c.Value("LSM"), c.Release())
	}
}

// TestOpenErrors: what each kind of bad input is told, exactly.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	sparse := filepath.Join(dir, "huge")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxKernelFile + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	elf := append([]byte("\x7fELF\x02\x01\x01\x00"), make([]byte, 120)...)
	good := bzImage("6.1.0 (b@h) #1 SMP", kernelPayload(t, "gzip", "", fakeKernel("6.1.0", nil, 100)))
	i386 := bytes.Clone(good)
	i386[0x236] = 0
	imageGzOfText := gzipBytes(bytes.Repeat([]byte("not a kernel "), 10))
	zbootGz := compress(t, "gzip", "", armImage(nil))
	bigEndian := armImage(fakeKernel("6.1.0", nil, 100))
	bigEndian[0x18] |= 1
	for _, tc := range []struct {
		name string
		data []byte // nil: the path is used as it is
		path string
		want string // after "PATH: "
	}{
		{name: "empty", data: []byte{}, want: "not a kernel image: the file is empty"},
		{name: "garbage", data: []byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09"), want: "not a kernel image: no x86 bzImage, arm64/riscv64 Image or EFI zboot header (first bytes: 00 01 02 03 04 05 06 07 ...)"},
		{name: "short", data: []byte("MZ"), want: "not a kernel image: no x86 bzImage, arm64/riscv64 Image or EFI zboot header (first bytes: 4d 5a)"},
		{name: "elf", data: elf, want: "not a kernel image: an ELF file (if it is a vmlinux: qemu boots the boot image the build makes beside it, arch/x86/boot/bzImage or arch/arm64/boot/Image)"},
		{name: "directory", path: dir, want: "is a directory, not a kernel image"},
		{name: "huge", path: sparse, want: fmt.Sprintf("%d bytes: larger than the 512 MiB a kernel image may be", maxKernelFile+1)},
		{name: "truncated-bzImage", data: good[:len(good)-10], want: fmt.Sprintf("truncated bzImage: the payload ends at byte %d, the file has %d", len(good), len(good)-10)},
		{name: "truncated-header", data: good[:0x210], want: "truncated bzImage: the setup header needs 592 bytes, the file has 528"},
		{name: "i386", data: i386, want: "a 32-bit x86 bzImage (xloadflags has no XLF_KERNEL_64): trampjit captures amd64, arm64 and riscv64 kernels"},
		{name: "gzip-text", data: imageGzOfText, want: "not a kernel image: a gzip file whose content is no arm64/riscv64 Image (first bytes: 6e 6f 74 20 61 20 6b 65 ...)"},
		{name: "truncated-Image.gz", data: gzipBytes(armImage(filler(1<<16, 9)))[:1000], want: "gzip payload: unexpected EOF"},
		{name: "big-endian", data: bigEndian, want: "a big-endian arm64 Image: trampjit captures little-endian kernels"},
		{name: "no-banner", data: armImage(filler(1000, 7)), want: "no \"Linux version\" banner in the kernel: its release cannot be read"},
		{name: "zboot-truncated", data: zboot("gzip", zbootGz)[:0x210], want: fmt.Sprintf("truncated EFI zboot image: the payload ends at byte %d, the file has 528", 0x200+len(zbootGz)-4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if tc.data != nil {
				path = writeFile(t, tc.name, tc.data)
			}
			_, err := OpenKernelFile(path)
			if want := path + ": " + tc.want; err == nil || err.Error() != want {
				t.Errorf("got  %v\nwant %s", err, want)
			}
		})
	}
}

// TestConfigErrors: payloads that identify but do not decompress, or disagree with the header.
func TestConfigErrors(t *testing.T) {
	kernel := fakeKernel("6.1.0", []byte(testConfig), 100)
	zs := kernelPayload(t, "zstd", "", kernel)
	corrupt := bytes.Clone(zs)
	for i := 8; i < len(corrupt)-8; i++ {
		corrupt[i] ^= 0x5a
	}
	cut := fakeKernel("6.1.0", nil, 100)
	cut = append(cut, "IKCFG_ST"...)
	cut = append(cut, gzipBytes([]byte(testConfig))...)
	for _, tc := range []struct {
		name, header string
		payload      []byte
		want         string
	}{
		{"corrupt-zstd", "6.1.0 (b@h) #1 SMP", corrupt, "zstd payload: "},
		{"other-release", "6.2.0 (b@h) #1 SMP", zs, "the bzImage header says release 6.2.0, the decompressed kernel's banner 6.1.0"},
		{"cut-config", "6.1.0 (b@h) #1 SMP", kernelPayload(t, "gzip", "", cut), "IKCFG_ST without IKCFG_ED: the embedded config is cut off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "bzImage", bzImage(tc.header, tc.payload))
			k, err := OpenKernelFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = k.Config()
			if want := path + ": " + tc.want; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("got  %v\nwant %s...", err, want)
			}
			if _, err2 := k.Config(); err2 != err {
				t.Errorf("second Config: %v, not the first's error", err2)
			}
		})
	}
}

// TestImageBrokenConfig: an Image whose IKCFG block is cut off still opens (it boots with
// --config); Config says what is wrong, and the banner after the block is still found.
func TestImageBrokenConfig(t *testing.T) {
	body := append([]byte("IKCFG_ST"), gzipBytes([]byte(testConfig))...)
	body = append(body, fakeKernel("6.12.1", nil, 100)...)
	path := writeFile(t, "Image", armImage(body))
	k := openOK(t, path, FormatImage, "arm64", "", "6.12.1")
	if _, err := k.Config(); err == nil || err.Error() != path+": "+errConfigCut.Error() {
		t.Errorf("Config: %v", err)
	}
}

// TestScanBoundaries moves the banner and the IKCFG block across every offset of the
// scanner's 32 KiB copy chunks.
func TestScanBoundaries(t *testing.T) {
	for fill := 32768 - 600; fill < 32768+40; fill += 7 {
		kernel := armImage(fakeKernel("6.12.1", []byte(testConfig), fill))
		s := &kscan{}
		r := bytes.NewReader(kernel)
		buf := make([]byte, 32768)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				s.Write(buf[:n])
			}
			if err != nil {
				break
			}
		}
		s.finish()
		if s.cfgErr != nil || !s.hasCfg || len(s.banners) != 2 {
			t.Fatalf("fill %d: err %v, config %v, %d banners", fill, s.cfgErr, s.hasCfg, len(s.banners))
		}
		if cfg, err := gunzipConfig(s.config); err != nil || string(cfg) != testConfig {
			t.Fatalf("fill %d: config %q, %v", fill, cfg, err)
		}
	}
}

// TestDecompressLimit: a payload that decompresses past 1 GiB is refused, naming the limit.
func TestDecompressLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("decompresses 1 GiB")
	}
	var zeros bytes.Buffer
	z, _ := zstd.NewWriter(&zeros, zstd.WithEncoderLevel(zstd.SpeedFastest))
	chunk := make([]byte, 1<<20)
	for range maxDecompressed>>20 + 1 {
		z.Write(chunk)
	}
	z.Close()
	zeros.Write(le32bytes(0)) // size_append (its value is not read)
	path := writeFile(t, "bzImage", bzImage("6.1.0 (b@h) #1 SMP", zeros.Bytes()))
	k, err := OpenKernelFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = k.Config()
	if want := path + ": zstd payload: decompresses to more than 1024 MiB"; err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// TestXZBranchFilters decodes what xz(1) writes with --x86 and --arm64, the filters
// scripts/xz_wrap.sh puts before LZMA2, over data dense in what the filters convert.
func TestXZBranchFilters(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	x86 := make([]byte, 1<<20)
	for i := range x86 {
		switch r.IntN(6) {
		case 0:
			x86[i] = 0xe8
		case 1:
			x86[i] = 0xe9
		case 2:
			x86[i] = 0
		case 3:
			x86[i] = 0xff
		default:
			x86[i] = byte(r.Uint32())
		}
	}
	arm := make([]byte, 1<<20)
	for i := 0; i < len(arm); i += 4 {
		ins := r.Uint32()
		switch r.IntN(3) {
		case 0:
			ins = 0x94000000 | ins&0x03ffffff // BL
		case 1:
			ins = 0x90000000 | ins&0x6fffffff // ADRP
		}
		binary.LittleEndian.PutUint32(arm[i:], ins)
	}
	odd := append(bytes.Clone(arm[:4099]), 0xe8, 1, 2) // a length no filter divides
	for _, tc := range []struct {
		bcj  string
		data []byte
	}{{"x86", x86}, {"arm64", arm}, {"arm64", odd}, {"x86", odd}, {"", x86}} {
		xzData := compress(t, "xz", tc.bcj, tc.data)
		ids, err := xzFilters(xzData)
		if err != nil || len(ids) != map[bool]int{true: 2, false: 1}[tc.bcj != ""] {
			t.Fatalf("%s: filters %x, %v", tc.bcj, ids, err)
		}
		rd, _, err := decompressor("xz", xzData)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rd)
		if err != nil || !bytes.Equal(got, tc.data) {
			i := 0
			for i < len(got) && i < len(tc.data) && got[i] == tc.data[i] {
				i++
			}
			t.Errorf("--%s, %d bytes: %v; %d bytes decoded, first difference at %d", tc.bcj, len(tc.data), err, len(got), i)
		}
	}
	// Real code: 2 MiB of the Debian kernels' text, where the branches are real.
	for _, real := range realKernelCode(t) {
		xzData := compress(t, "xz", real.bcj, real.code)
		rd, _, err := decompressor("xz", xzData)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(rd); err != nil || !bytes.Equal(got, real.code) {
			t.Errorf("%s: %d of %d bytes, %v", real.name, len(got), len(real.code), err)
		}
	}
	// The check types xz(1) writes besides the kernel's CRC32; blocks (with their sizes
	// in the block headers) as a threaded xz writes them.
	for _, check := range []string{"crc64", "sha256", "none", "crc32 -T2 --block-size=30000"} {
		cmd := exec.Command("xz", append(strings.Fields("--check="+check), "--x86", "--lzma2=preset=6", "-c")...)
		cmd.Stdin = bytes.NewReader(x86[:100000])
		xzData, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		rd, _, err := decompressor("xz", xzData)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(rd); err != nil || !bytes.Equal(got, x86[:100000]) {
			t.Errorf("--check=%s: %d bytes, %v", check, len(got), err)
		}
		xzData[len(xzData)-40] ^= 1
		rd, _, _ = decompressor("xz", xzData)
		if _, err := io.ReadAll(rd); check != "none" && err == nil {
			t.Errorf("--check=%s: a flipped bit near the end decoded without an error", check)
		}
	}
	// A corrupted block check is an error, not wrong bytes.
	xzData := compress(t, "xz", "x86", x86[:5000])
	xzData[len(xzData)-40] ^= 1
	if rd, _, err := decompressor("xz", xzData); err == nil {
		if _, err := io.ReadAll(rd); err == nil {
			t.Error("a flipped bit near the end decoded without an error")
		}
	}
}

type kernelCode struct {
	name, bcj string
	code      []byte
}

// realKernelCode is 2 MiB from 2 MiB into each cached Debian kernel's (decompressed) image:
// kernel text, for the branch filters.
func realKernelCode(t *testing.T) []kernelCode {
	home, _ := os.UserHomeDir()
	var out []kernelCode
	for _, glob := range []string{"6.12-amd64/vmlinuz-*", "6.12-arm64/vmlinuz-*"} {
		files, _ := filepath.Glob(filepath.Join(home, ".cache/trampjit/kernels", glob))
		if len(files) == 0 {
			continue
		}
		k, err := OpenKernelFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		var image bytes.Buffer
		if k.payload == nil {
			image.Write(k.data)
		} else if err := k.unpack(&image); err != nil {
			t.Fatal(err)
		}
		if image.Len() < 6<<20 {
			t.Fatalf("%s: %d bytes decompressed", files[0], image.Len())
		}
		bcj := map[string]string{"amd64": "x86", "arm64": "arm64"}[k.Arch]
		out = append(out, kernelCode{filepath.Base(files[0]), bcj, image.Bytes()[2<<20 : 4<<20]})
	}
	return out
}

// TestLZMADictionaryCapped: lzma -9 states a 64 MiB dictionary; under a lower output limit
// the stream still decodes (no match reaches further back than the output).
func TestLZMADictionaryCapped(t *testing.T) {
	old := decompressLimit
	decompressLimit = 1 << 20
	defer func() { decompressLimit = old }()
	data := append(filler(100000, 3), filler(100000, 3)...)
	lz := compress(t, "lzma", "", data)
	if binary.LittleEndian.Uint32(lz[1:]) != 64<<20 {
		t.Fatalf("lzma -9 dictionary %d", binary.LittleEndian.Uint32(lz[1:]))
	}
	rd, _, err := decompressor("lzma", lz)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(rd); err != nil || !bytes.Equal(got, data) {
		t.Errorf("%d bytes, %v", len(got), err)
	}
}
