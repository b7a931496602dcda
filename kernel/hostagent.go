package kernel

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
	"runtime"
	"strings"

	"github.com/trampjit/trampjit/kernel/vm"
	"github.com/trampjit/trampjit/kernel/wire"
)

// ErrHostNotPermitted is returned by CaptureHost and VerifyHost when the running kernel refuses
// BPF to this process (EPERM: not root, missing CAP_BPF/CAP_PERFMON, or a sandbox): callers skip.
var ErrHostNotPermitted = errors.New("the running kernel does not permit BPF here (EPERM)")

// runHostAgent runs the guest agent on the running kernel with req and hands every result
// frame to onFrame; log frames go to progress. A fatal frame ends in an error, wrapping
// ErrHostNotPermitted when the kernel said EPERM.
func runHostAgent(ctx context.Context, req wire.Request, progress io.Writer, onFrame func(wire.Frame)) error {
	if progress == nil {
		progress = io.Discard
	}
	dir, cleanup, err := makeWorkDir("trampjit-host-")
	if err != nil {
		return err
	}
	defer cleanup()
	agent, err := vm.BuildAgent(ctx, runtime.GOARCH, dir)
	if err != nil {
		return err
	}
	rj, err := json.Marshal(req)
	if err != nil {
		return err
	}
	reqPath := filepath.Join(dir, "request.json")
	if err := os.WriteFile(reqPath, rj, 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, agent, "-request", reqPath)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	release, runErr := vm.StartTied(cmd) // the agent holds BPF links: it must not outlive us
	if runErr == nil {
		runErr = cmd.Wait()
		release()
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("host agent stopped: %w", err)
	}

	var fatal string
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		f, ok, err := wire.Decode(sc.Text())
		if !ok {
			continue
		}
		if err != nil {
			return fmt.Errorf("host agent output: %w", err)
		}
		switch f.Kind {
		case wire.KindFatal:
			_ = json.Unmarshal(f.JSON, &fatal)
		case wire.KindLog:
			var s string
			_ = json.Unmarshal(f.JSON, &s)
			fmt.Fprintf(progress, "host: agent: %s\n", s)
		default:
			onFrame(f)
		}
	}
	if fatal != "" {
		if strings.Contains(fatal, "operation not permitted") || strings.Contains(fatal, "EPERM") {
			return fmt.Errorf("%w: %s", ErrHostNotPermitted, fatal)
		}
		return fmt.Errorf("host agent: %s", fatal)
	}
	if runErr != nil {
		return fmt.Errorf("host agent: %v: %s", runErr, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// guestSetup fetches a profile's kernel and builds the agent for it in workDir (a temporary
// directory when empty, removed by cleanup): what every guest run starts with.
func guestSetup(ctx context.Context, kernel, arch string, pin vm.Pin, workDir string, progress io.Writer) (k *vm.KernelImage, agent, work string, cleanup func(), err error) {
	cleanup = func() {}
	if k, err = vm.FetchPinned(ctx, kernel, arch, pin, progress); err != nil {
		return nil, "", "", cleanup, err
	}
	work = workDir
	if work == "" {
		if work, cleanup, err = makeWorkDir("trampjit-guest-"); err != nil {
			return nil, "", "", func() {}, err
		}
	}
	if agent, err = vm.BuildAgent(ctx, arch, filepath.Join(work, "agent")); err != nil {
		cleanup()
		return nil, "", "", func() {}, err
	}
	return k, agent, work, cleanup, nil
}
