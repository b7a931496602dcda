package kernel

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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
	rep, err := CaptureHost(ctx, CaptureOptions{Kernel: "6.12", Cases: []Case{{ID: "t2", Func: "bpf_fentry_test2",
		Progs: []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit}}}}, Progress: testWriter{t}})
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

// TestDenialReason: each reason the host refuses for names what to change: root, the
// capabilities, lockdown; else it says the kernel itself refuses, with what was checked.
func TestDenialReason(t *testing.T) {
	all := uint64(1)<<unix.CAP_BPF | 1<<unix.CAP_PERFMON | 1<<unix.CAP_SYS_ADMIN
	noLock := errors.New("/sys/kernel/security/lockdown: no such file or directory")
	for _, c := range []struct {
		name    string
		euid    int
		eff     uint64
		lock    string
		lockErr error
		want    []string
	}{
		{"not root", 1000, 0, "none", nil, []string{"uid 1000", "needs root (CAP_BPF + CAP_PERFMON + CAP_SYS_ADMIN)"}},
		{"no CAP_BPF", 0, all &^ (1 << unix.CAP_BPF), "none", nil, []string{"root without CAP_BPF:"}},
		{"no PERFMON, SYS_ADMIN", 0, 1 << unix.CAP_BPF, "none", nil, []string{"without CAP_PERFMON, CAP_SYS_ADMIN"}},
		{"integrity", 0, all, "integrity", nil, []string{"locked down", "[integrity]"}},
		{"confidentiality", 0, all, "confidentiality", nil, []string{"locked down", "[confidentiality]"}},
		{"not locked", 0, all, "none", nil, []string{"not locked down", "the running kernel itself refuses"}},
		{"lockdown unknown", 0, all, "", noLock, []string{"lockdown unknown", "no such file", "itself refuses"}},
	} {
		got := denialReason(c.euid, c.eff, nil, c.lock, c.lockErr)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.name, got, w)
			}
		}
		if c.name != "integrity" && c.name != "confidentiality" && strings.Contains(got, "locked down (") {
			t.Errorf("%s: %q blames lockdown", c.name, got)
		}
	}
}

// TestParseLockdown: the file lists every mode with the selected one in brackets
// (security/lockdown/lockdown.c lockdown_read).
func TestParseLockdown(t *testing.T) {
	for in, want := range map[string]string{
		"[none] integrity confidentiality\n": "none",
		"none [integrity] confidentiality\n": "integrity",
		"none integrity [confidentiality]\n": "confidentiality",
	} {
		if got, err := parseLockdown(in); err != nil || got != want {
			t.Errorf("parseLockdown(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if got, err := parseLockdown("none integrity\n"); err == nil {
		t.Errorf("no mode selected: %q, want an error", got)
	}
}
