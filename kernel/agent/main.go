// Command agent is trampjit's guest agent: a static binary that runs as /init in a qemu guest
// (or as root on a host), reads its request from the initramfs, attaches BPF programs, reads
// the kernel's trampolines back and prints the results as frames (package wire) on the console.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trampjit/trampjit/kernel/wire"
)

var out = os.Stdout

func emit(kind string, v any) {
	if err := wire.Write(out, kind, v); err != nil {
		fmt.Fprintf(os.Stderr, "agent: emit %s: %v\n", kind, err)
	}
}

func logf(format string, args ...any) { emit(wire.KindLog, fmt.Sprintf(format, args...)) }

func main() {
	reqPath := flag.String("request", wire.RequestPath, "request file")
	flag.Parse()
	isInit := os.Getpid() == 1
	code := 0
	defer func() {
		if r := recover(); r != nil {
			emit(wire.KindFatal, fmt.Sprintf("agent panic: %v\n%s", r, debug.Stack()))
			code = 2
		}
		finish(isInit, code)
	}()
	if isInit {
		setupGuest()
	}
	code = run(*reqPath)
}

func run(reqPath string) int {
	var u unix.Utsname
	_ = unix.Uname(&u)
	hello := wire.Hello{Release: unix.ByteSliceToString(u.Release[:]),
		Version: unix.ByteSliceToString(u.Version[:]), Machine: unix.ByteSliceToString(u.Machine[:])}
	emit(wire.KindHello, hello)

	b, err := os.ReadFile(reqPath)
	if err != nil {
		emit(wire.KindFatal, fmt.Sprintf("read request: %v", err))
		return 1
	}
	var req wire.Request
	if err := json.Unmarshal(b, &req); err != nil {
		emit(wire.KindFatal, fmt.Sprintf("parse request %s: %v", reqPath, err))
		return 1
	}
	if req.Info {
		emit(wire.KindInfo, collectInfo(hello))
	}
	if req.BTF {
		if err := sendFile("/sys/kernel/btf/vmlinux"); err != nil {
			logf("copy out BTF: %v", err)
		}
	}
	checkJIT()
	if len(req.Cases) > 0 {
		c, err := newCapturer()
		if err != nil {
			emit(wire.KindFatal, fmt.Sprintf("set up capture: %v", err))
			return 1
		}
		for _, cs := range req.Cases {
			t0 := time.Now()
			r := c.capture(cs)
			emit(wire.KindCapture, r)
			logf("case %s done in %.1fs", cs.ID, time.Since(t0).Seconds())
		}
		c.closeStructOps()
	}
	done := wire.Done{Cases: len(req.Cases)}
	if req.Verify != nil {
		newVerifier(req.Verify).verifyAll(req.Verify.Programs)
		done.Programs = len(req.Verify.Programs)
	}
	if req.Cost != nil {
		emit(wire.KindCost, runCost(req.Cost))
	}
	emit(wire.KindDone, done)
	return 0
}

// sendFile copies a guest file to the host as blob frames.
func sendFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for off := 0; off == 0 || off < len(b); off += wire.BlobChunk {
		end := min(off+wire.BlobChunk, len(b))
		emit(wire.KindBlob, wire.Blob{Name: path, Offset: int64(off), Total: int64(len(b)), Data: b[off:end]})
	}
	return nil
}

// setupGuest mounts what the agent reads (before any BPF call: cilium/ebpf looks for BPF
// tokens through /proc/self/mountinfo on its first map create, and remembers a failure;
// that is also why the agent does not import cilium/ebpf/rlimit, whose init creates a map) and quiets console printk so frames stay intact.
func setupGuest() {
	mounts := []struct{ src, dst, fs string }{
		{"proc", "/proc", "proc"},
		{"sysfs", "/sys", "sysfs"},
		{"devtmpfs", "/dev", "devtmpfs"},
		{"debugfs", "/sys/kernel/debug", "debugfs"},
		{"tracefs", "/sys/kernel/tracing", "tracefs"},
		{"bpffs", "/sys/fs/bpf", "bpf"},
	}
	for _, m := range mounts {
		_ = os.MkdirAll(m.dst, 0o755)
		if err := unix.Mount(m.src, m.dst, m.fs, 0, ""); err != nil && err != unix.EBUSY {
			logf("mount %s on %s: %v", m.fs, m.dst, err)
		}
	}
	_ = os.WriteFile("/proc/sys/kernel/printk", []byte("1\n"), 0)
	_ = os.WriteFile("/proc/sys/kernel/kptr_restrict", []byte("0\n"), 0)
	// Without BPF_JIT_DEFAULT_ON (Debian's riscv64 kernels) the JIT starts off: programs would
	// run in the interpreter and every trampoline would call it (net/core/sysctl_net_core.c).
	if err := os.WriteFile(jitSysctl, []byte("1\n"), 0); err != nil {
		logf("enable the BPF JIT: %v", err)
	}
	// Its kallsyms default follows the same option (bpf_jit_kallsyms, kernel/bpf/core.c): without
	// it /proc/kallsyms has no [bpf] symbols, so no bpf__<ops>_<member> names struct_ops images.
	if err := os.WriteFile(jitKallsymsSysctl, []byte("1\n"), 0); err != nil {
		logf("enable BPF JIT kallsyms: %v", err)
	}
}

// jitSysctl is net.core.bpf_jit_enable.
const jitSysctl = "/proc/sys/net/core/bpf_jit_enable"

// jitKallsymsSysctl is net.core.bpf_jit_kallsyms.
const jitKallsymsSysctl = "/proc/sys/net/core/bpf_jit_kallsyms"

// checkJIT says when programs will not be JITed (a host whose JIT is off: the agent does not
// change a host's sysctl).
func checkJIT() {
	b, err := os.ReadFile(jitSysctl)
	if v := strings.TrimSpace(string(b)); err == nil && v == "0" {
		logf("net.core.bpf_jit_enable is 0: programs run in the interpreter and trampolines call it (sysctl -w net.core.bpf_jit_enable=1)")
	}
}

// finish powers the guest off (as init) or exits (on a host).
func finish(isInit bool, code int) {
	if !isInit {
		os.Exit(code)
	}
	unix.Sync()
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	// If power-off failed, returning from init panics the kernel; with panic=-1 and
	// -no-reboot qemu then exits.
	os.Exit(code)
}
