package kernel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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

// VerifyHost loads the programs through the running kernel's verifier with the same agent
// (it needs root; o.Kernel and o.Arch are ignored). When the kernel refuses every program
// with EPERM (not root, no CAP_BPF/CAP_PERFMON, a container or lockdown), it returns the
// results with an error wrapping ErrHostNotPermitted: callers skip rather than fail.
func VerifyHost(ctx context.Context, o VerifyOptions) ([]VerifyResult, error) {
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	for i := range o.Programs {
		if err := o.Programs[i].Validate(); err != nil {
			return nil, fmt.Errorf("program %d: %w", i, err)
		}
	}
	dir, err := os.MkdirTemp("", "trampjit-verify-host-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	agent, err := vm.BuildAgent(ctx, runtime.GOARCH, dir)
	if err != nil {
		return nil, err
	}
	req := wire.Request{Kernel: "host", Arch: runtime.GOARCH, Verify: &wire.VerifyRequest{LogLevel: o.LogLevel, LogLimit: o.LogLimit, Programs: o.Programs}}
	rj, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	reqPath := filepath.Join(dir, "request.json")
	if err := os.WriteFile(reqPath, rj, 0o644); err != nil {
		return nil, err
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, agent, "-request", reqPath)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	results := make([]*VerifyResult, len(o.Programs))
	var fatal string
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		f, ok, err := wire.Decode(sc.Text())
		if !ok {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("host agent output: %w", err)
		}
		switch f.Kind {
		case wire.KindVerify:
			var r wire.VerifyResult
			if json.Unmarshal(f.JSON, &r) == nil && r.Index >= 0 && r.Index < len(results) {
				vr := fromWire(r)
				results[r.Index] = &vr
			}
		case wire.KindFatal:
			_ = json.Unmarshal(f.JSON, &fatal)
		case wire.KindLog:
			var s string
			_ = json.Unmarshal(f.JSON, &s)
			fmt.Fprintf(progress, "host: agent: %s\n", s)
		}
	}
	if fatal != "" {
		if strings.Contains(fatal, "operation not permitted") || strings.Contains(fatal, "EPERM") {
			return nil, fmt.Errorf("%w: %s", ErrHostNotPermitted, fatal)
		}
		return nil, fmt.Errorf("host agent: %s", fatal)
	}
	if runErr != nil {
		return nil, fmt.Errorf("host agent: %v: %s", runErr, strings.TrimSpace(stderr.String()))
	}
	out := make([]VerifyResult, len(results))
	eperm := 0
	for i, r := range results {
		if r == nil {
			r = &VerifyResult{Name: o.Programs[i].Name, Stage: "agent", Error: "the agent finished without reporting this program"}
		}
		if r.Errno == "EPERM" {
			eperm++
		}
		out[i] = *r
	}
	if eperm > 0 && eperm == len(out) {
		e := out[0]
		return out, fmt.Errorf("%w: every program was refused, e.g. %s at %s: %s", ErrHostNotPermitted, e.Name, e.Stage, firstNonEmpty(e.Error, "EPERM without a log line"))
	}
	return out, nil
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
