package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/trampjit/trampjit/kernel/wire"
)

// Reason classifies why a guest run failed.
type Reason string

const (
	ReasonQemuMissing  Reason = "qemu missing"
	ReasonNoBoot       Reason = "kernel failed to boot" // qemu ended before the agent spoke
	ReasonHung         Reason = "guest hung"            // timeout
	ReasonAgentCrashed Reason = "agent crashed"         // agent spoke but never finished
	ReasonProtocol     Reason = "damaged output"        // a frame failed its checksum
	ReasonQemuFailed   Reason = "qemu failed"           // qemu refused to start
)

// RunError is a failed guest run, with the end of the console for diagnosis.
type RunError struct {
	Reason  Reason
	Detail  string
	Console string // last lines of the serial console
}

func (e *RunError) Error() string {
	s := string(e.Reason)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Console != "" {
		s += "\n--- console tail ---\n" + e.Console
	}
	return s
}

// RunOptions describe one guest boot.
type RunOptions struct {
	Kernel   *KernelImage
	Initrd   string        // path of the initramfs
	Timeout  time.Duration // hard limit for the whole run; qemu is killed after it
	Append   []string      // extra kernel command line words
	Console  io.Writer     // raw serial output (optional), for logs
	Progress io.Writer     // one line per boot milestone and agent log (optional)
	OnFrame  func(wire.Frame)
	// ICount runs the guest under -icount shift=0: its clocks advance one ns per executed
	// instruction, so the guest can count instructions (the cost measurements).
	ICount bool
}

// RunResult is a finished guest run.
type RunResult struct {
	Frames   []wire.Frame
	BootTime time.Duration // until the agent's hello
	Duration time.Duration
}

// RISCV64CPU is the -cpu of riscv64 guests.
const RISCV64CPU = "rv64,zba=true,zbb=true,zbc=true,zbs=true"

// QemuCommand returns the qemu binary and arguments for arch.
func QemuCommand(arch, kernel, initrd string, appendArgs []string) (string, []string, error) {
	common := []string{"-accel", "tcg", "-m", "1G", "-smp", "1", "-display", "none",
		"-monitor", "none", "-serial", "stdio", "-nodefaults", "-no-user-config", "-no-reboot",
		"-kernel", kernel, "-initrd", initrd}
	cmdline := []string{"lsm=bpf", "panic=-1", "oops=panic", "rdinit=/init"}
	switch arch {
	case "amd64":
		// earlyprintk: the bzImage decompressor reports a corrupt payload on it; without it a
		// kernel that never unpacks leaves an empty console tail. no_timer_check: under TCG on
		// a loaded host the IO-APIC timer check (arch/x86/kernel/apic/io_apic.c check_timer)
		// can miss its ticks and panic ("IO-APIC + timer doesn't work!"); seen in a 6.1 fuzz
		// campaign. It only skips that boot-time check.
		cmdline = append([]string{"console=ttyS0", "earlyprintk=serial,ttyS0,115200", "no_timer_check"}, cmdline...)
		return "qemu-system-x86_64", append([]string{"-cpu", "max"}, append(common,
			"-append", strings.Join(append(cmdline, appendArgs...), " "))...), nil
	case "arm64":
		// pauth-impdef: QEMU's cheap pointer-auth algorithm; same instructions, faster TCG.
		cmdline = append([]string{"console=ttyAMA0"}, cmdline...)
		return "qemu-system-aarch64", append([]string{"-M", "virt", "-cpu", "max,pauth-impdef=on"}, append(common,
			"-append", strings.Join(append(cmdline, appendArgs...), " "))...), nil
	case "riscv64":
		// -bios default: the OpenSBI firmware qemu ships (opensbi), which the kernel calls
		// for its timer and console. rv64 is qemu 7.2's fullest CPU (it has no "max"): RV64GC
		// with the bit-manipulation extensions, Zbb among them, which the trampoline JIT
		// uses when the CPU has it (riscv_has_extension_likely); they are named so that
		// the guest's isa string does not depend on qemu's defaults.
		cmdline = append([]string{"console=ttyS0"}, cmdline...)
		return "qemu-system-riscv64", append([]string{"-M", "virt", "-bios", "default", "-cpu", RISCV64CPU}, append(common,
			"-append", strings.Join(append(cmdline, appendArgs...), " "))...), nil
	}
	return "", nil, fmt.Errorf("no qemu for architecture %q", arch)
}

// Run boots the guest and collects its frames until the agent's "done" frame, qemu's exit,
// or the timeout, whichever comes first. qemu never outlives Run, nor trampjit (StartTied).
// When ctx ends first (an interrupt, not the timeout) the error wraps ctx.Err() and is no
// RunError: the guest did not fail, it was stopped.
func Run(ctx context.Context, o RunOptions) (*RunResult, error) {
	parent := ctx
	bin, args, err := QemuCommand(o.Kernel.Arch, o.Kernel.Path, o.Initrd, o.Append)
	if err != nil {
		return nil, err
	}
	if o.ICount {
		args = append(args, "-icount", "shift=0")
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, &RunError{Reason: ReasonQemuMissing, Detail: bin + " is not installed"}
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.WaitDelay = 2 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t0 := time.Now()
	release, err := StartTied(cmd)
	if err != nil {
		return nil, &RunError{Reason: ReasonQemuFailed, Detail: err.Error()}
	}
	defer release()
	tag := o.Kernel.Kernel + "-" + o.Kernel.Arch
	res := &RunResult{}
	tail := newTail(40)
	var hello, done bool
	var fatal, damaged string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if o.Console != nil {
			fmt.Fprintln(o.Console, line)
		}
		f, ok, ferr := wire.Decode(line)
		if !ok {
			tail.add(line)
			continue
		}
		if ferr != nil {
			damaged = ferr.Error()
			tail.add(line)
			continue
		}
		res.Frames = append(res.Frames, f)
		if o.OnFrame != nil {
			o.OnFrame(f)
		}
		switch f.Kind {
		case wire.KindHello:
			hello = true
			res.BootTime = time.Since(t0)
			fmt.Fprintf(progress, "%s: booted in %.1fs\n", tag, res.BootTime.Seconds())
		case wire.KindLog:
			var s string
			_ = json.Unmarshal(f.JSON, &s)
			fmt.Fprintf(progress, "%s: agent: %s\n", tag, s)
		case wire.KindBlob:
			var b wire.Blob
			if json.Unmarshal(f.JSON, &b) == nil && (b.Offset/wire.BlobChunk)%32 == 0 {
				fmt.Fprintf(progress, "%s: copying %s: %d of %d KiB\n", tag, b.Name, b.Offset>>10, b.Total>>10)
			}
		case wire.KindFatal:
			_ = json.Unmarshal(f.JSON, &fatal)
		case wire.KindDone:
			done = true
		}
		if done {
			break
		}
	}
	// The agent powers off after "done"; give qemu a moment, then make sure it is gone.
	if done {
		go func() { time.Sleep(5 * time.Second); cancel() }()
	}
	_, _ = io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	res.Duration = time.Since(t0)
	timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded) && !done
	switch {
	case parent.Err() != nil && !done:
		return res, fmt.Errorf("%s: guest stopped: %w", tag, parent.Err())
	case done && damaged == "":
		return res, nil
	case damaged != "":
		return res, &RunError{Reason: ReasonProtocol, Detail: damaged, Console: tail.String()}
	case timedOut && !hello:
		return res, &RunError{Reason: ReasonHung, Detail: fmt.Sprintf("no agent output within %v (kernel stuck booting?)", o.Timeout), Console: tail.String()}
	case timedOut:
		return res, &RunError{Reason: ReasonHung, Detail: fmt.Sprintf("agent did not finish within %v", o.Timeout), Console: tail.String()}
	case fatal != "":
		return res, &RunError{Reason: ReasonAgentCrashed, Detail: fatal, Console: tail.String()}
	case hello:
		return res, &RunError{Reason: ReasonAgentCrashed, Detail: fmt.Sprintf("agent stopped before finishing (qemu: %v)", werr), Console: tail.String()}
	case werr != nil && stderr.Len() > 0 && res.Duration < 3*time.Second:
		return res, &RunError{Reason: ReasonQemuFailed, Detail: strings.TrimSpace(stderr.String())}
	}
	d := "qemu exited before the agent started"
	if s := strings.TrimSpace(stderr.String()); s != "" {
		d += ": " + s
	}
	return res, &RunError{Reason: ReasonNoBoot, Detail: d, Console: tail.String()}
}

// Boot builds an initramfs with agent as /init plus the request, boots it, and returns the
// frames. workDir holds the initramfs and the console log (console.log).
func Boot(ctx context.Context, k *KernelImage, agent string, req wire.Request, workDir string, timeout time.Duration, progress io.Writer) (*RunResult, error) {
	return boot(ctx, k, agent, req, workDir, timeout, progress, false)
}

// BootICount is Boot under -icount shift=0 (RunOptions.ICount).
func BootICount(ctx context.Context, k *KernelImage, agent string, req wire.Request, workDir string, timeout time.Duration, progress io.Writer) (*RunResult, error) {
	return boot(ctx, k, agent, req, workDir, timeout, progress, true)
}

func boot(ctx context.Context, k *KernelImage, agent string, req wire.Request, workDir string, timeout time.Duration, progress io.Writer, icount bool) (*RunResult, error) {
	bin, err := os.ReadFile(agent)
	if err != nil {
		return nil, fmt.Errorf("read agent: %w", err)
	}
	rj, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	img, err := BuildInitramfs([]File{{Name: "/init", Mode: 0o755, Data: bin}, {Name: wire.RequestPath, Mode: 0o644, Data: rj}})
	if err != nil {
		return nil, fmt.Errorf("build initramfs: %w", err)
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, err
	}
	initrd := filepath.Join(workDir, "initramfs.cpio.gz")
	if err := os.WriteFile(initrd, img, 0o644); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(workDir, "console.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	return Run(ctx, RunOptions{Kernel: k, Initrd: initrd, Timeout: timeout, Console: logf, Progress: progress, ICount: icount})
}

// tail keeps the last n console lines.
type tail struct {
	n     int
	lines []string
}

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) add(l string) {
	t.lines = append(t.lines, l)
	if len(t.lines) > t.n {
		t.lines = t.lines[len(t.lines)-t.n:]
	}
}

func (t *tail) String() string { return strings.Join(t.lines, "\n") }
