package btfmodel

import (
	"path/filepath"
	"testing"
)

// TestTraceTargetImplicitArgs: on 7.2 a trampoline on scx_bpf_cidperf_cap is modelled with
// scx_bpf_cidperf_cap_impl's two arguments (the 7.2 arm64 capture's frame holds two
// slots, kernel/testdata/fuzz/7.2-arm64-implicit-args.jsonl); a profile before implicit
// arguments keeps the one of the BTF prototype, and an ordinary function is left alone.
func TestTraceTargetImplicitArgs(t *testing.T) {
	spec, err := LoadFile(filepath.Join("..", "testdata", "kernel", "7.2-arm64", "vmlinux.btf.xz"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fn   string
		k    Kernel
		args int
	}{
		{"scx_bpf_cidperf_cap", Kernel72, 2},
		{"scx_bpf_cidperf_set", Kernel72, 3},
		{"scx_bpf_cidperf_cap", Kernel612, 1},
		{"tcp_v4_connect", Kernel72, 3},
	} {
		fn, err := FuncByName(spec, tc.fn)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Distill(TraceTarget(spec, fn, tc.k), tc.k)
		if err != nil {
			t.Fatal(err)
		}
		if m.Name != tc.fn || m.NrArgs() != tc.args {
			t.Errorf("%s on %s: %s with %d arguments, want %d", tc.fn, tc.k, m.Name, m.NrArgs(), tc.args)
		}
	}
}
