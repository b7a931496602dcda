package vm

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The kernel build's compressor command lines (scripts/Makefile.lib cmd_gzip, cmd_bzip2,
// cmd_lzma, cmd_lz4, cmd_zstd22; scripts/xz_wrap.sh), run as the independent encoders of
// the synthetic images. The xz line gets the arch's branch filter.
var kernelCompressors = map[string][]string{
	"gzip":  {"gzip", "-n", "-f", "-9"},
	"bzip2": {"bzip2", "-9"},
	"lzma":  {"lzma", "-9"},
	"lz4":   {"lz4", "-l", "-12", "--favor-decSpeed"},
	"zstd":  {"zstd", "-22", "--ultra", "-q"},
	"xz":    {"xz", "--check=crc32", "--lzma2=dict=1MiB"},
}

// compress runs the kernel build's compressor for comp over data, skipping the test when it
// is not installed. bcj is "x86", "arm64" or "" (xz only).
func compress(t testing.TB, comp, bcj string, data []byte) []byte {
	t.Helper()
	args := kernelCompressors[comp]
	if args == nil {
		t.Fatalf("no compressor for %s", comp)
	}
	if !haveCompressor(comp) {
		t.Skipf("%s is not installed", args[0])
	}
	if bcj != "" {
		args = append(args[:1:1], append([]string{"--" + bcj}, args[1:]...)...)
	}
	cmd := exec.Command(args[0], append(args[1:], "-c")...)
	cmd.Stdin = bytes.NewReader(data)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v: %s", args, err, stderr.Bytes())
	}
	return out.Bytes()
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	z.Write(b)
	z.Close()
	return buf.Bytes()
}

func le32bytes(n int) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(n)) }

// filler is deterministic noise, so that the markers have to be found in it.
func filler(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

const testConfig = "#\n# Automatically generated file; DO NOT EDIT.\n# Linux/x86 6.12.95 Kernel Configuration\n#\nCONFIG_BPF_SYSCALL=y\n# CONFIG_IKCONFIG_PROC is not set\nCONFIG_IKCONFIG=y\nCONFIG_LSM=\"landlock,bpf\"\n"

// fakeKernel is a decompressed kernel as far as trampjit reads one: the weak banner of
// init/version.c ("# SMP", no build number), a decoy IKCFG_ST string, the final banner,
// the IKCFG block of kernel/configs.c (when cfg is not nil), with noise between them.
func fakeKernel(release string, cfg []byte, fill int) []byte {
	var b bytes.Buffer
	b.Write(filler(fill, 1))
	fmt.Fprintf(&b, "Linux version %s (builder@host) (gcc 14.2.0) # SMP PREEMPT_DYNAMIC Tue Dec  1 12:00:00 UTC 2026\n\x00", release)
	b.Write(filler(fill, 2))
	b.WriteString("IKCFG_ST and a string that is not the block\x00")
	fmt.Fprintf(&b, "Linux version %s (builder@host) (gcc 14.2.0) #1 SMP PREEMPT_DYNAMIC Tue Dec  1 12:00:00 UTC 2026\n\x00", release)
	b.Write(filler(fill, 3))
	if cfg != nil {
		b.WriteString("IKCFG_ST")
		b.Write(gzipBytes(cfg))
		b.WriteString("IKCFG_ED")
	}
	b.Write(filler(fill, 4))
	return b.Bytes()
}

// armImage is an arm64 Image (Documentation/arch/arm64/booting.rst): flags 0xa is
// little-endian, 4K pages, anywhere in memory.
func armImage(body []byte) []byte {
	h := make([]byte, 64)
	copy(h, "MZ@\xfa")
	binary.LittleEndian.PutUint64(h[0x10:], uint64(64+len(body)))
	binary.LittleEndian.PutUint64(h[0x18:], 0xa)
	copy(h[0x38:], "ARM\x64")
	return append(h, body...)
}

// riscvImage is a riscv64 Image (Documentation/arch/riscv/boot-image-header.rst), with the
// version-0.2 magic2 or only the deprecated "RISCV" magic.
func riscvImage(body []byte, oldMagic bool) []byte {
	h := make([]byte, 64)
	binary.LittleEndian.PutUint64(h[0x10:], uint64(64+len(body)))
	binary.LittleEndian.PutUint32(h[0x20:], 2)
	copy(h[0x30:], "RISCV\x00\x00\x00")
	if !oldMagic {
		copy(h[0x38:], "RSC\x05")
	}
	return append(h, body...)
}

// bzImageLayout: the synthetic bzImage's setup is 1 sector plus the boot sector; the
// protected-mode part starts at 0x400 and the payload 0x10 into it.
const (
	bzSetupSects  = 1
	bzPM          = (bzSetupSects + 1) * 512
	bzPayloadOff  = 0x10
	bzVersionAt   = 0x280
	bzPayloadFile = bzPM + bzPayloadOff
)

// bzImage builds an x86 bzImage (Documentation/arch/x86/boot.rst) whose header says
// version and whose payload is payload (already compressed, size appended as the build does).
func bzImage(version string, payload []byte) []byte {
	b := make([]byte, bzPayloadFile)
	b[0x1f1] = bzSetupSects
	binary.LittleEndian.PutUint16(b[0x1fe:], 0xaa55)
	copy(b[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(b[0x206:], 0x020f)
	binary.LittleEndian.PutUint16(b[0x20e:], bzVersionAt-0x200)
	b[0x211] = 1     // LOADED_HIGH
	b[0x236] = 1 | 2 // XLF_KERNEL_64, XLF_CAN_BE_LOADED_ABOVE_4G
	copy(b[bzVersionAt:], version+"\x00")
	binary.LittleEndian.PutUint32(b[0x248:], bzPayloadOff)
	binary.LittleEndian.PutUint32(b[0x24c:], uint32(len(payload)))
	return append(b, payload...)
}

// kernelPayload compresses a decompressed kernel as the bzImage and zboot builds do:
// size_append after every compressor but gzip, whose trailer holds the size already.
func kernelPayload(t testing.TB, comp, bcj string, kernel []byte) []byte {
	p := compress(t, comp, bcj, kernel)
	if comp != "gzip" {
		p = append(p, le32bytes(len(kernel))...)
	}
	return p
}

// zboot builds an EFI zboot image (drivers/firmware/efi/libstub/zboot-header.S): the
// payload size excludes the 4-byte size the build appends (the _with_size commands).
func zboot(compType string, payload []byte) []byte {
	h := make([]byte, 0x200)
	copy(h, "MZ\x00\x00zimg")
	binary.LittleEndian.PutUint32(h[8:], uint32(len(h)))
	binary.LittleEndian.PutUint32(h[12:], uint32(len(payload)-4))
	copy(h[24:], compType)
	binary.LittleEndian.PutUint32(h[0x38:], 0x818223cd) // LINUX_PE_MAGIC
	binary.LittleEndian.PutUint32(h[0x3c:], 0x40)
	return append(append(h, payload...), make([]byte, 64)...)
}

func writeFile(t testing.TB, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func haveCompressor(comp string) bool {
	_, err := exec.LookPath(kernelCompressors[comp][0])
	return err == nil
}

// FuzzOpenKernelFile: any file is identified or refused with an error, without a panic, in
// bounded time (decompression is capped lower here than the 1 GiB of a real open).
func FuzzOpenKernelFile(f *testing.F) {
	cfg := []byte(testConfig)
	f.Add(bzImage("6.1.0 (b@h) #1 SMP", gzipBytes(fakeKernel("6.1.0", cfg, 64))))
	f.Add(armImage(fakeKernel("6.12.1", cfg, 64)))
	f.Add(riscvImage(fakeKernel("6.12.1", cfg, 64), false))
	f.Add(riscvImage(fakeKernel("6.12.1", cfg, 64), true))
	f.Add(gzipBytes(armImage(fakeKernel("6.12.1", cfg, 64))))
	f.Add(zboot("gzip", append(gzipBytes(armImage(fakeKernel("6.12.1", cfg, 64))), 0, 0, 0, 0)))
	for _, comp := range []string{"bzip2", "lzma", "xz", "lz4", "zstd"} {
		if haveCompressor(comp) {
			f.Add(bzImage("6.1.0 (b@h) #1 SMP", kernelPayload(f, comp, map[string]string{"xz": "x86"}[comp], fakeKernel("6.1.0", cfg, 64))))
		}
	}
	if haveCompressor("xz") {
		image := armImage(fakeKernel("6.12.1", cfg, 64))
		f.Add(zboot("xzkern", kernelPayload(f, "xz", "arm64", image)))
	}
	f.Add([]byte("\x7fELF\x02\x01\x01\x00"))
	f.Add([]byte{})
	old := decompressLimit
	decompressLimit = 256 << 10
	f.Cleanup(func() { decompressLimit = old })
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "k")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		k, err := OpenKernelFile(path)
		if err != nil {
			if !bytes.HasPrefix([]byte(err.Error()), []byte(path+": ")) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if k.Release == "" || k.Arch == "" || k.Format == "" {
			t.Fatalf("identified without release/arch/format: %+v", k)
		}
		if _, err := k.Config(); err != nil && !bytes.HasPrefix([]byte(err.Error()), []byte(path+": ")) {
			t.Fatalf("Config error does not name the file: %v", err)
		}
		if _, err := k.KernelConfig(); err != nil && !bytes.Contains([]byte(err.Error()), []byte(path)) {
			t.Fatalf("KernelConfig error does not name the file: %v", err)
		}
		boot := filepath.Join(dir, "boot")
		os.RemoveAll(boot)
		os.Mkdir(boot, 0o755)
		if b, err := k.BootImage(boot); err == nil && b == "" {
			t.Fatal("BootImage returned no path")
		}
		if d := time.Since(t0); d > 10*time.Second {
			t.Fatalf("%d-byte input took %v", len(data), d)
		}
	})
}
