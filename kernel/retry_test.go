package kernel

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trampjit/trampjit/kernel/vm"
	"github.com/trampjit/trampjit/kernel/wire"
)

// fakeGuest sets up a cached fake kernel, a dummy agent and a fake qemu-system-x86_64 that
// runs script, so Capture's bookkeeping can be tested without a guest.
func fakeGuest(t *testing.T, script string) {
	t.Helper()
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	kdir := filepath.Join(cache, "trampjit", "kernels", "6.12-amd64")
	os.MkdirAll(kdir, 0o755)
	os.WriteFile(filepath.Join(kdir, "vmlinuz-fake"), []byte("k"), 0o644)
	meta, _ := json.Marshal(vm.KernelImage{Kernel: "6.12", Arch: "amd64", Release: "fake", Path: filepath.Join(kdir, "vmlinuz-fake")})
	os.WriteFile(filepath.Join(kdir, "kernel.json"), meta, 0o644)
	agent := filepath.Join(cache, "agent")
	os.WriteFile(agent, []byte("agent"), 0o755)
	t.Setenv(vm.AgentEnv+"AMD64", agent)
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "qemu-system-x86_64"), []byte("#!/bin/sh\nSTATE="+t.TempDir()+"\n"+script), 0o755)
	t.Setenv("PATH", bin+":/usr/bin:/bin")
}

func frameLine(t *testing.T, kind string, v any) string {
	b, err := wire.Encode(kind, v)
	if err != nil {
		t.Fatal(err)
	}
	return "echo '" + strings.TrimRight(string(b), "\n") + "'\n"
}

// TestCaptureRetry: the guest dies on case b; b is reported with the reason, and c is
// captured by a second guest.
func TestCaptureRetry(t *testing.T) {
	hello := frameLine(t, wire.KindHello, wire.Hello{Release: "fake"})
	script := "if [ ! -e $STATE/booted ]; then\ntouch $STATE/booted\n" + hello +
		frameLine(t, wire.KindCapture, wire.CaptureResult{ID: "a", Code: []byte{0xc3}, Image: 0x1000}) +
		"echo 'BUG: kernel NULL pointer dereference'\necho 'Kernel panic - not syncing: Fatal exception'\nexit 0\nfi\n" +
		hello + frameLine(t, wire.KindCapture, wire.CaptureResult{ID: "c", Error: "refused", Errno: "EINVAL", Stage: "attach"}) +
		frameLine(t, wire.KindDone, wire.Done{Cases: 1})
	fakeGuest(t, script)
	rep, err := Capture(context.Background(), CaptureOptions{Kernel: "6.12", Arch: "amd64", Timeout: 20 * time.Second,
		Cases: []Case{{ID: "a", Func: "f"}, {ID: "b", Func: "g"}, {ID: "c", Func: "h"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Boots) != 2 {
		t.Errorf("%d boots, want 2", len(rep.Boots))
	}
	got := map[string]CorpusCase{}
	for _, c := range rep.Cases {
		got[c.ID] = c
	}
	if got["a"].Image != "c3" {
		t.Errorf("a: %+v", got["a"])
	}
	if b := got["b"]; b.Stage != "guest" || !strings.Contains(b.Error, string(vm.ReasonAgentCrashed)) {
		t.Errorf("b must be blamed for the crash: %+v", b)
	}
	if c := got["c"]; c.Errno != "EINVAL" || c.Stage != "attach" {
		t.Errorf("c: %+v", c)
	}
}

// TestCaptureNoBoot: a kernel that never starts the agent is a setup error, not per-case.
func TestCaptureNoBoot(t *testing.T) {
	fakeGuest(t, "echo 'Kernel panic - not syncing: VFS: Unable to mount root fs'\n")
	_, err := Capture(context.Background(), CaptureOptions{Kernel: "6.12", Arch: "amd64", Timeout: 10 * time.Second,
		Cases: []Case{{ID: "a", Func: "f"}}})
	if err == nil || !strings.Contains(err.Error(), string(vm.ReasonNoBoot)) {
		t.Fatalf("want %q, got %v", vm.ReasonNoBoot, err)
	}
}
