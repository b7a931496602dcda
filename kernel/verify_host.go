package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"

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
	if err := checkPrograms(o.Programs); err != nil {
		return nil, err
	}
	req := wire.Request{Kernel: "host", Arch: runtime.GOARCH, Verify: &wire.VerifyRequest{LogLevel: o.LogLevel, LogLimit: o.LogLimit, Programs: o.Programs}}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	results := make([]*VerifyResult, len(o.Programs))
	err := runHostAgent(ctx, req, progress, func(f wire.Frame) {
		var r wire.VerifyResult
		if f.Kind == wire.KindVerify && json.Unmarshal(f.JSON, &r) == nil && r.Index >= 0 && r.Index < len(results) {
			vr := fromWire(r)
			results[r.Index] = &vr
		}
	})
	if err != nil {
		return nil, err
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
