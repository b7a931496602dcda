package emu

import (
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
)

// TestBlocksPerHit: a checked batch hit of the benchmarked trampoline (2 programs, 6.12,
// at the addresses its corpus captured) runs the image's own blocks, one block per stub
// call, the traced function's and the caller's loop's. Under Unicorn every translated
// block costs the budget's hook and an exit check, so a stub whose checks branch, or
// that jumps to checks placed elsewhere, shows here: before the stubs' branchless ends
// (finish) and the checks at the stubs' own addresses, a hit ran 51 blocks on x86_64
// and 47 on arm64.
func TestBlocksPerHit(t *testing.T) {
	for _, c := range []struct {
		arch btfmodel.Arch
		max  int
	}{
		// The image's 12 blocks (its calls and jumps end them), 8 stub calls, the
		// function's entry, its jump to its body and the body, and the caller's loop
		// head, checks and loop branch.
		{btfmodel.AMD64, 12 + 8 + 3 + 3},
		// The same, and the ftrace veneer the function calls the image through.
		{btfmodel.ARM64, 12 + 8 + 4 + 3},
	} {
		r, img, m, h := benchImage(t, c.arch, benchAddrs(t, c.arch))
		l, err := h.Load(r, m, Addrs(r), img.Code, Options{})
		if err != nil {
			t.Fatal(err)
		}
		called := map[string]bool{}
		for _, e := range l.exp.events {
			called[e.name] = true
		}
		_, pr, err := h.prepare(r, m, Addrs(r), img.Code, Options{}, make([]byte, 1<<16))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pr.pieces {
			if n, ok := strings.CutSuffix(p.name, " checks"); ok && called[n] {
				t.Errorf("%s: the checks of %s are placed apart from it", c.arch, n)
			}
		}
		blocks := 0
		hk, err := h.e.HookBlock(1, 0, func(uint64, uint32) { blocks++ })
		if err != nil {
			t.Fatal(err)
		}
		count := func(n int) int {
			blocks = 0
			if rep, err := l.Call(n); err != nil || !rep.OK {
				t.Fatal(err, rep)
			}
			return blocks
		}
		perHit := count(3) - count(2)
		if err := h.e.Unhook(hk); err != nil {
			t.Fatal(err)
		}
		if perHit > c.max {
			t.Errorf("%s: %d translated blocks per checked hit, want at most %d", c.arch, perHit, c.max)
		}
		t.Logf("%s: %d translated blocks per checked hit", c.arch, perHit)
	}
}
