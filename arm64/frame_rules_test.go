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

// 7.2 copies stack arguments (calc_arg_aux): up to MAX_BPF_FUNC_ARGS (12) slots attach, and
// more are -ENOTSUPP (the corpus: tcp_v4_send_ack, twelve, attaches; bpf_trace_run12, thirteen,
// is refused before the JIT, at load). A struct that no longer fits x0..x7 goes whole to the
// stack, and every later argument with it (bpf_log_attr_init: 8 registers, 3 stack slots).
func TestArgSlotsLimits72(t *testing.T) {
	p, err := ProfileFor(btfmodel.Kernel72)
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n <= 13; n++ {
		got, err := ArgRegs(p, &btfmodel.FuncModel{Name: "f", Args: u64Args(n)})
		switch {
		case n <= 12 && (err != nil || got != n):
			t.Errorf("%d arguments: %d slots, %v; want %d", n, got, err, n)
		case n > 12 && !errors.Is(err, jit.ENOTSUPP):
			t.Errorf("%d arguments: %v, want ENOTSUPP", n, err)
		}
	}
	for _, c := range []struct {
		args        []btfmodel.Arg
		regs, slots int
	}{
		{append(u64Args(7), structArg(16)), 7, 9},                         // the struct does not split
		{append(append(u64Args(7), structArg(16)), u64Args(1)...), 7, 10}, // nor does a later u64 fill x7
		{append(u64Args(6), structArg(16)), 8, 8},
	} {
		l, err := Layout(p, &btfmodel.FuncModel{Name: "f", Args: c.args}, jit.FlagRestoreRegs, 0)
		if err != nil || l.NRegs != c.regs || l.NArgs != c.slots {
			t.Errorf("%d args: %d registers, %d slots, %v; want %d, %d", len(c.args), l.NRegs, l.NArgs, err, c.regs, c.slots)
		}
	}
	if _, err := ArgRegs(p, &btfmodel.FuncModel{Name: "f", Args: append(u64Args(11), structArg(16))}); !errors.Is(err, jit.ENOTSUPP) {
		t.Errorf("11 arguments and a 16-byte struct (13 slots): %v, want ENOTSUPP", err)
	}
}
