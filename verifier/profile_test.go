package verifier

import (
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/trampjit/trampjit/btfmodel"
)

// TestUnknownProfile: a kernel no profile names is refused as input; before capabilities it
// silently behaved like 6.12.
func TestUnknownProfile(t *testing.T) {
	p := Program{Section: "fentry/bpf_fentry_test1", License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}}
	res := Check(p, Env{Kernel: "6.6", Arch: "amd64"})
	want := `model: unknown kernel profile "6.6" (want ` + btfmodel.KernelNames() + `)`
	if res.Accepted || res.Error != want || res.Errno != "EINVAL" {
		t.Errorf("Check on kernel 6.6: accepted=%v error=%q errno=%q; want %q EINVAL", res.Accepted, res.Error, res.Errno, want)
	}
}
