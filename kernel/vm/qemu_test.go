package vm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trampjit/trampjit/kernel/wire"
)

// fakeQemu puts a shell script named qemu-system-x86_64 first in PATH.
func fakeQemu(t *testing.T, script string) *KernelImage {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "qemu-system-x86_64"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":/usr/bin:/bin")
	return &KernelImage{Kernel: "6.12", Arch: "amd64", Path: "/nonexistent/vmlinuz"}
}

func frame(t *testing.T, kind string, v any) string {
	b, err := wire.Encode(kind, v)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimRight(string(b), "\n")
}

func runFake(t *testing.T, k *KernelImage, timeout time.Duration) (*RunResult, error) {
	return Run(context.Background(), RunOptions{Kernel: k, Initrd: "/nonexistent/initrd", Timeout: timeout})
}

func reasonOf(t *testing.T, err error) Reason {
	t.Helper()
	var re *RunError
	if !errors.As(err, &re) {
		t.Fatalf("want a *RunError, got %v", err)
	}
	return re.Reason
}

func TestRunQemuMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := runFake(t, &KernelImage{Kernel: "6.12", Arch: "amd64"}, time.Second)
	if r := reasonOf(t, err); r != ReasonQemuMissing {
		t.Fatalf("reason %q", r)
	}
}

func TestRunSuccess(t *testing.T) {
	k := fakeQemu(t, "echo 'Linux version 6.12'\necho '"+frame(t, wire.KindHello, wire.Hello{Release: "6.12"})+"'\n"+
		"echo '"+frame(t, wire.KindDone, wire.Done{})+"'\n")
	res, err := runFake(t, k, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Frames) != 2 || res.Frames[1].Kind != wire.KindDone {
		t.Fatalf("frames %+v", res.Frames)
	}
}

func TestRunFailureReasons(t *testing.T) {
	hello := "echo '" + frame(t, wire.KindHello, wire.Hello{}) + "'\n"
	for _, c := range []struct {
		name, script string
		want         Reason
	}{
		{"no boot", "echo 'Kernel panic - not syncing: VFS'\nexit 0\n", ReasonNoBoot},
		{"hang before agent", "echo booting\nexec sleep 30\n", ReasonHung},
		{"hang in agent", hello + "exec sleep 30\n", ReasonHung},
		{"agent crash", hello + "echo 'Kernel panic - not syncing: Attempted to kill init!'\n", ReasonAgentCrashed},
		{"agent fatal", hello + "echo '" + frame(t, wire.KindFatal, "no memory reader") + "'\n", ReasonAgentCrashed},
		{"damaged", hello + "echo '@@trampjit done 00000000 e30='\n", ReasonProtocol},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := fakeQemu(t, c.script)
			t0 := time.Now()
			_, err := runFake(t, k, 2*time.Second)
			if r := reasonOf(t, err); r != c.want {
				t.Fatalf("reason %q, want %q (%v)", r, c.want, err)
			}
			if d := time.Since(t0); d > 8*time.Second {
				t.Errorf("took %v: the timeout must kill qemu", d)
			}
		})
	}
}

func TestQemuCommand(t *testing.T) {
	bin, args, err := QemuCommand("arm64", "/k", "/i", []string{"nokaslr"})
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Join(args, " ")
	if bin != "qemu-system-aarch64" || !strings.Contains(s, "-M virt") || !strings.Contains(s, "-accel tcg") ||
		!strings.Contains(s, "console=ttyAMA0") || !strings.Contains(s, "lsm=bpf") || !strings.Contains(s, "nokaslr") {
		t.Errorf("%s %s", bin, s)
	}
	// riscv64: the virt machine with qemu's OpenSBI (-bios default) and a CPU with Zbb.
	bin, args, err = QemuCommand("riscv64", "/k", "/i", nil)
	s = strings.Join(args, " ")
	if err != nil || bin != "qemu-system-riscv64" || !strings.Contains(s, "-M virt -bios default") ||
		!strings.Contains(s, "zbb=true") || !strings.Contains(s, "console=ttyS0") {
		t.Errorf("riscv64: %s %s %v", bin, s, err)
	}
	if _, _, err := QemuCommand("s390x", "/k", "/i", nil); err == nil {
		t.Error("unknown arch must fail")
	}
}
