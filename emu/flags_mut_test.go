package emu_test

import (
	"testing"

	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/jit"
)

// The request's flags override what the oracle derives. The kernel's 6.12 fexit image
// calls the original (bpf_trampoline_update sets BPF_TRAMP_F_CALL_ORIG for fexit); claimed
// with RESTORE_REGS alone (fentry-only: the trampoline returns into the body) it must fail.
func TestFlagsOverrideDecides(t *testing.T) {
	c, code := kernelCase(t, "6.12-amd64", "bpf_fentry_test2-fexit")
	o := emu.Options{Args: []uint64{0x1111, 0x2222}}
	if r := runBoth(t, c.Request, code, o); !r.OK {
		t.Fatalf("the kernel's image fails with its own flags:%s", failures(r))
	}
	req := *c.Request
	f := jit.Addr(jit.FlagRestoreRegs)
	req.Flags = &f
	if r := runBoth(t, &req, code, o); r.OK {
		t.Error("the fexit image passes claimed with RESTORE_REGS alone")
	}
}
