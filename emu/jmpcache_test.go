package emu

import (
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// jmpCacheSlot is the tb jump-cache index QEMU (and so Unicorn) files a translated
// block under: 12 bits, the page number's low bits and the pc's low bits each
// xor-folded with the six bits above them. Unicorn's arm64 runs with 1 KiB target
// pages (TARGET_PAGE_BITS_MIN), x86_64 with 4 KiB.
func jmpCacheSlot(pc uint64, pageBits uint) uint64 {
	const half = 6
	t := pc ^ pc>>(pageBits-half)
	return t>>(pageBits-half)&0xfc0 | t&0x3f
}

// TestCallerJmpCacheSlots: no instruction of the caller shares a jump-cache slot with
// an instruction of any other piece of the benchmarked layout (2-program 6.12 image at
// the synthetic addresses). A shared slot evicts the other block on every hit: at
// callerBase 0x10000 the arm64 caller's return point (caller+0x44) and bpf_func#1 did,
// a tb_htable_lookup per hit.
func TestCallerJmpCacheSlots(t *testing.T) {
	for _, c := range []struct {
		arch     btfmodel.Arch
		pageBits uint
	}{{btfmodel.ARM64, 10}, {btfmodel.AMD64, 12}} {
		r := &jit.Request{Arch: c.arch, Kernel: btfmodel.Kernel612, Proto: "int f(int a, u64 b)",
			Progs: []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit}}}
		img, m, err := Generate(r)
		if err != nil {
			t.Fatal(err)
		}
		h, err := NewHarness(c.arch)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []Options{{}, {Trace: true}} {
			_, pr, err := h.prepare(r, m, Addrs(r), img.Code, o, make([]byte, 1<<16))
			if err != nil {
				t.Fatal(err)
			}
			used := map[uint64]string{}
			for _, p := range pr.pieces {
				for a := p.addr &^ 3; a < p.end(); a += 4 {
					used[jmpCacheSlot(a, c.pageBits)] = p.name
				}
			}
			for off := uint64(0); off < uint64(len(pr.caller)); off += 4 {
				if n, ok := used[jmpCacheSlot(callerBase+off, c.pageBits)]; ok {
					t.Errorf("%s trace=%v: caller+%#x shares jump-cache slot %#x with %s", c.arch, o.Trace, off, jmpCacheSlot(callerBase+off, c.pageBits), n)
				}
			}
		}
		h.Close()
	}
}
