package verifier

import (
	"testing"

	"github.com/cilium/ebpf/asm"
)

// Exploration limits (do_check, kernel/bpf/verifier.c): BPF_COMPLEXITY_LIMIT_INSNS.
func TestComplexityLimit(t *testing.T) {
	const R0, R6 = asm.R0, asm.R6
	cases := []vcase{
		{name: "too-many-insns", on: []string{"6.12-amd64"}, sec: "fentry/bpf_fentry_test1",
			prog: fixed(movi(R6, 0), addi(R6, 1), jmpi(asm.JLT, R6, 0x100000, -2), movi(R0, 0), exit()),
			want: "BPF program is too large. Processed 1000001 insn", errno: "E2BIG"},
	}
	runCases(t, cases)
}
