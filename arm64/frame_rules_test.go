package arm64

import (
	"errors"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// Argument limits of arch_prepare_bpf_trampoline (arch/arm64/net/bpf_jit_comp.c): 6.1
// passes the first 8 arguments in registers and refuses more ("if (nargs > 8) return
// -ENOTSUPP"); 6.12 counts registers (btf_func_model_nregs) and refuses more than 8
// (the 6.12-arm64 corpus: __bpf_sk_lookup, nine, is ENOTSUPP; ZSTD_compress_usingCDict_advanced,
// eight, attaches).
func TestArgRegsLimits(t *testing.T) {
	for _, k := range []btfmodel.Kernel{btfmodel.Kernel61, btfmodel.Kernel612} {
		p, err := ProfileFor(k)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n <= 10; n++ {
			got, err := ArgRegs(p, &btfmodel.FuncModel{Name: "f", Args: u64Args(n)})
			switch {
			case n <= 8 && (err != nil || got != n):
				t.Errorf("%s, %d arguments: %d registers, %v; want %d", k, n, got, err, n)
			case n > 8 && !errors.Is(err, jit.ENOTSUPP):
				t.Errorf("%s, %d arguments: %v, want ENOTSUPP", k, n, err)
			}
		}
	}
}
