//go:build cgo

package unicorn

import (
	"errors"
	"strings"
	"testing"
)

// TestKernelAddresses runs code at the addresses the corpus images live at
// (x86_64 0xffffffff81200000, arm64 0xffff800080000000) with a load and a
// store in another high page. libunicorn 2.1's default TLB cut x86_64
// addresses to 52 bits ("unmapped fetch ... at 0xfffff81200000"); Open
// selects the virtual TLB so that every 64-bit address is its own.
func TestKernelAddresses(t *testing.T) {
	for _, c := range []struct {
		arch       Arch
		text, data uint64
		code       []byte // ld r, [base]; st r, [base+8]; halt
		val, base  Reg
	}{
		{X86_64, 0xffffffff81200000, 0xffffffffc0000000,
			[]byte{0x48, 0x8b, 0x03, 0x48, 0x89, 0x43, 0x08, 0xf4}, RAX, RBX},
		{ARM64, 0xffff800080000000, 0xffff800082000000,
			[]byte{0x20, 0x00, 0x40, 0xf9, 0x20, 0x04, 0x00, 0xf9, 0x7f, 0x20, 0x03, 0xd5}, X0, X1},
	} {
		t.Run(c.arch.String(), func(t *testing.T) {
			e, err := Open(c.arch)
			must(t, err)
			t.Cleanup(func() { e.Close() })
			must(t, e.Map(c.text, PageSize, ProtRead|ProtExec))
			must(t, e.Map(c.data, PageSize, ProtRead|ProtWrite))
			must(t, e.Write(c.text, c.code))
			must(t, e.WriteU64(c.data, 0x1122334455667788))
			must(t, e.AddSentinel(c.text+uint64(len(c.code)-len(SentinelBytes(c.arch, SentinelHalt))), SentinelHalt))
			must(t, e.SetReg(c.base, c.data))
			if _, err := e.Run(c.text, 100); err != nil {
				t.Fatalf("libunicorn %s: %v", Version(), err)
			}
			if v, err := e.ReadU64(c.data + 8); err != nil || v != 0x1122334455667788 {
				t.Errorf("store at %#x: %#x, %v", c.data+8, v, err)
			}
			if v := reg(t, e, c.val); v != 0x1122334455667788 {
				t.Errorf("load at %#x: %#x", c.data, v)
			}
			// The identity TLB grants every access; the regions' protections
			// still hold: the store to read-only text faults.
			must(t, e.SetReg(c.base, c.text))
			if _, err := e.Run(c.text, 100); !errors.Is(err, ErrWriteProt) {
				t.Errorf("store into read-only text at %#x: %v, want %v", c.text+8, err, ErrWriteProt)
			}
		})
	}
}

// TestVersion checks Version names the library the process runs on in full.
func TestVersion(t *testing.T) {
	v := Version()
	if n := strings.Count(v, "."); n != 2 || !strings.HasPrefix(v, "2.") {
		t.Errorf("Version() = %q, want major.minor.patch of a 2.x library", v)
	}
}
