package vm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trampjit/trampjit/kernel/wire"
)

// TestRunInterruptedKillsGroup: cancelling Run's context after the agent spoke stops the
// guest without calling it a failure (no RunError, so no case is blamed), and kills qemu's
// whole process group, not just qemu.
func TestRunInterruptedKillsGroup(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "child")
	k := fakeQemu(t, "sleep 300 &\necho $! > "+pidfile+"\necho '"+frame(t, wire.KindHello, wire.Hello{})+"'\nexec sleep 300\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now()
	_, err := Run(ctx, RunOptions{Kernel: k, Initrd: "/nonexistent/initrd", Timeout: time.Minute,
		OnFrame: func(f wire.Frame) {
			if f.Kind == wire.KindHello {
				cancel()
			}
		}})
	var re *RunError
	if !errors.Is(err, context.Canceled) || errors.As(err, &re) {
		t.Fatalf("Run = %v, want context.Canceled and no RunError", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	for t1 := time.Now(); syscall.Kill(pid, 0) == nil && !zombie(pid); time.Sleep(20 * time.Millisecond) {
		if time.Since(t1) > 2*time.Second {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("qemu's child %d outlived the cancel", pid)
		}
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}
