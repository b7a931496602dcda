package kernel

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/trampjit/trampjit/jit"
)

// TestCaptureHost runs the agent on the running kernel; where BPF is not permitted (the
// usual case in containers) it must say so with ErrHostNotPermitted, and the test skips.
func TestCaptureHost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the agent on the host; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := CaptureHost(ctx, "host", []Case{{ID: "t2", Func: "bpf_fentry_test2",
		Progs: []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit}}}}, testWriter{t})
	if errors.Is(err, ErrHostNotPermitted) {
		t.Skipf("host capture not possible here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.Info == nil || len(rep.Cases) != 1 {
		t.Fatalf("report: %+v", rep)
	}
	c := rep.Cases[0]
	t.Logf("host %s: case %s: error %q, %d image bytes, located by %s", rep.Info.Release, c.ID, c.Error, len(c.Image)/2, c.Locate)
}
