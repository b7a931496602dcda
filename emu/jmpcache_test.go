package emu

import (
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

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
		r, img, m, h := benchImage(t, c.arch, nil)
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
	}
}

// TestChecksJmpCacheSlots: no byte of a stub's checks placed apart (where they do not
// fit at the stub's own address: in the 6.12 captures, x86_64's __bpf_prog_exit 0x40
// bytes before __bpf_prog_exit_recur) shares a jump-cache slot with a byte of another
// piece or of the caller, in the benchmarked 2-program 6.12 image, at the synthetic
// addresses and at the ones its corpus captured. When all checks were placed apart,
// packed 64-byte aligned
// past their cluster, the x86_64 checks of bpf_func#1 and #2 sat on the image's page
// and shared slots with its blocks (two misses per hit), and the enter and exit
// helpers' checks shared slots with each other.
func TestChecksJmpCacheSlots(t *testing.T) {
	for _, arch := range []btfmodel.Arch{btfmodel.ARM64, btfmodel.AMD64} {
		bits := jmpCachePageBits(mustTarget(t, arch).ucArch())
		for _, addrs := range []*jit.Addrs{nil, benchAddrs(t, arch)} {
			r, img, m, h := benchImage(t, arch, addrs)
			_, pr, err := h.prepare(r, m, Addrs(r), img.Code, Options{}, make([]byte, 1<<16))
			if err != nil {
				t.Fatal(err)
			}
			owner := map[uint64]int{}
			for a := uint64(callerBase); a < callerBase+uint64(len(pr.caller)); a++ {
				owner[jmpCacheSlot(a, bits)] = -1
			}
			for i, p := range pr.pieces {
				for a := p.addr; a < p.end(); a++ {
					s := jmpCacheSlot(a, bits)
					if j, ok := owner[s]; ok && j != i && (strings.HasSuffix(p.name, " checks") || j >= 0 && strings.HasSuffix(pr.pieces[j].name, " checks")) {
						other := "the caller"
						if j >= 0 {
							other = pr.pieces[j].name
						}
						t.Errorf("%s synthetic=%v: %s at %#x shares slot %#x with %s", arch, addrs == nil, p.name, a, s, other)
						break
					}
					owner[s] = i
				}
			}
		}
	}
}

func mustTarget(t *testing.T, arch btfmodel.Arch) target {
	tg, err := targetFor(arch)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}
