//go:build cgo

package unicorn

import "testing"

// TestBudgetExact checks Run's block-level budget against an exact count of
// the same run (a C code hook on every instruction): a budget of exactly the
// instructions executed passes, one less ends by budget, for several loop
// lengths on one engine (the block counts are cached across runs).
func TestBudgetExact(t *testing.T) {
	for _, s := range allSnippets {
		e := setup(t, s.arch, s.loop)
		must(t, e.AddSentinel(sentinelAt(s, s.loop[:s.stubOff]), SentinelHalt))
		_, err := e.CountInsns(codeBase, codeBase+0xfff)
		must(t, err)
		start := func(n, budget uint64) (Exit, error) {
			must(t, e.WriteRegs([]Reg{s.res, s.loopCounter(), s.sp()}, []uint64{0, n, stackTop - 0x100}))
			return e.Run(codeBase, budget)
		}
		for _, n := range []uint64{1, 7, 1000} {
			x, err := start(n, 0)
			must(t, err)
			total := x.Count
			if total < 4*n {
				t.Fatalf("%v: %d iterations counted %d instructions", s.arch, n, total)
			}
			if x, err := start(n, total); err != nil || x.Reason != ReasonSentinel {
				t.Errorf("%v n=%d: budget %d (exact) ended %+v, %v", s.arch, n, total, x, err)
			}
			if x, err := start(n, total-1); err == nil || x.Reason != ReasonBudget {
				t.Errorf("%v n=%d: budget %d (one short) ended %+v, %v", s.arch, n, total-1, x, err)
			}
		}
	}
}

// TestBudgetCache checks the block counts stay cached for blocks whose
// addresses once shared a cache slot: the caller's loop at 0x10150 and a
// kernel image's block at 0xffffa00080100040 evicted each other on every
// call, which cost a Unicorn lookup per block (an eighth of a batch run).
// x86_64, whose instructions have no fixed width: arm64 counts a block by
// its size and needs no cache.
func TestBudgetCache(t *testing.T) {
	const loop, fn, stack = 0x10150, 0xffffa00080100040, 0x200000
	e, err := Open(X86_64)
	must(t, err)
	t.Cleanup(func() { e.Close() })
	must(t, e.Map(loop&^0xfff, PageSize, ProtRead|ProtExec))
	must(t, e.Map(fn&^0xfff, PageSize, ProtRead|ProtExec))
	must(t, e.Map(stack, PageSize, ProtRead|ProtWrite))
	// loop: call *%rdx; dec %rcx; jnz loop; hlt. fn: ret.
	must(t, e.Write(loop, []byte{0xff, 0xd2, 0x48, 0xff, 0xc9, 0x75, 0xf9, 0xf4}))
	must(t, e.Write(fn, []byte{0xc3}))
	must(t, e.AddSentinel(loop+7, SentinelHalt))
	must(t, e.WriteRegs([]Reg{RCX, RDX, RSP}, []uint64{1000, fn, stack + 0x800}))
	before := e.budgetMisses()
	x, err := e.Run(loop, 1<<20)
	if err != nil || x.Reason != ReasonSentinel {
		t.Fatal(x, err)
	}
	if m := e.budgetMisses() - before; m == 0 || m > 10 {
		t.Errorf("1000 iterations over 3 blocks: %d block-count lookups in Unicorn, want a few", m)
	}
}
