//go:build cgo

package unicorn

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A fetch from a FastStores range is reported as the hooked fault would be:
// same kind, address and pc; outside the range faults are still recorded by
// the hook (an unmapped write names its address, not the pc).
func TestFastStoresFaults(t *testing.T) {
	for _, arch := range []Arch{X86_64, ARM64} {
		t.Run(arch.String(), func(t *testing.T) {
			jmp := []byte{0xff, 0xe2} // jmp rdx
			reg := Reg(RDX)
			if arch == ARM64 {
				jmp, reg = a64(0xd61f0040), X2 // br x2
			}
			fetch := func(fast bool) *Fault {
				e := setup(t, arch, jmp)
				if fast {
					must(t, e.FastStores(dataBase, dataBase+0x1000))
				}
				must(t, e.SetReg(reg, dataBase+0x10))
				_, err := e.Run(codeBase, 100)
				var ue *Error
				if !errors.As(err, &ue) || ue.Fault == nil {
					t.Fatalf("fast=%v: %v, want a fetch fault", fast, err)
				}
				return ue.Fault
			}
			want, got := fetch(false), fetch(true)
			if want.Kind != FetchProt || got.Kind != want.Kind || got.Addr != want.Addr || got.PC != want.PC {
				t.Fatalf("FastStores fetch fault %+v, hooked %+v", got, want)
			}
			// Outside the range: a store to an unmapped page past it.
			st := []byte{0x48, 0x89, 0x02, 0xf4} // mov [rdx], rax; hlt
			if arch == ARM64 {
				st = a64(0xf9000043, 0xd503207f) // str x3, [x2]; wfi
			}
			e := setup(t, arch, st)
			must(t, e.FastStores(dataBase, dataBase+0x1000))
			must(t, e.SetReg(reg, 0x5f008))
			_, err := e.Run(codeBase, 100)
			var ue *Error
			if !errors.As(err, &ue) || ue.Fault == nil || ue.Fault.Kind != WriteUnmapped || ue.Fault.Addr != 0x5f008 {
				t.Fatalf("unmapped store past the range: %v", err)
			}
		})
	}
}

func TestFastStoresArgs(t *testing.T) {
	e := setup(t, X86_64, []byte{0xf4})
	if err := e.FastStores(dataBase+1, dataBase+0x1000); !errors.Is(err, ErrArg) {
		t.Fatalf("unaligned range: %v, want ErrArg", err)
	}
}

// BenchmarkFastStores: on 2.1 a store loop over a FastStores region runs about as fast as the
// same loop loading (before the fix: ~2.7x, every store on the slow path). It reports the
// store/load ratio of one run each, measured in the same benchmark (make bench); a ratio well
// above 1 means stores are back on Unicorn's slow path.
func BenchmarkFastStores(b *testing.B) {
	if v := Version(); strings.HasPrefix(v, "2.0.") {
		b.Skipf("libunicorn %s: every store is slow before 2.1", v)
	}
	loop := func(code []byte) func() time.Duration {
		e := setup(b, X86_64, code)
		haltAfter(b, e, code)
		must(b, e.FastStores(dataBase, dataBase+0x1000))
		must(b, e.SetReg(RDX, dataBase))
		return func() time.Duration {
			must(b, e.SetReg(RCX, 100000))
			t0 := time.Now()
			if _, err := e.Run(codeBase, 0); err != nil {
				b.Fatal(err)
			}
			return time.Since(t0)
		}
	}
	load := loop([]byte{0x48, 0x8b, 0x02, 0x48, 0xff, 0xc9, 0x75, 0xf8, 0xf4})  // mov rax, [rdx]; dec rcx; jnz; hlt
	store := loop([]byte{0x48, 0x89, 0x02, 0x48, 0xff, 0xc9, 0x75, 0xf8, 0xf4}) // mov [rdx], rax; ...
	load()
	store() // the first runs translate
	var tl, ts time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tl += load()
		ts += store()
	}
	b.ReportMetric(float64(ts)/float64(tl), "store/load")
}
