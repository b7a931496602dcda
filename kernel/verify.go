package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/trampjit/trampjit/kernel/vm"
	"github.com/trampjit/trampjit/kernel/wire"
)

// VerifyOptions configure Verify and VerifyHost.
type VerifyOptions struct {
	Kernel   string // profile: a btfmodel.Kernel, e.g. "6.12" (Verify only)
	Arch     string // "amd64" or "arm64" (Verify only)
	Programs []wire.VerifyProgram
	LogLevel uint32        // BPF_PROG_LOAD log_level: 1 (default) or 2 (every instruction's state)
	LogLimit uint32        // the largest log in bytes (default 16 MiB); longer ones come back truncated
	Timeout  time.Duration // per guest boot (default 90 s plus 250 ms per program)
	WorkDir  string        // agent, initramfs and console logs; default a temporary directory, removed
	Progress io.Writer     // progress lines (optional)
}

// VerifyResult is the real kernel's verdict on one program.
type VerifyResult struct {
	Name     string `json:"name"`
	Accepted bool   `json:"accepted"`
	Errno    string `json:"errno,omitempty"` // "EACCES", "EINVAL", ... when rejected
	// Error is the kernel's reason as a user sees it: the log's last line that is not a
	// statistic, or libbpf's words when the attach target is not in vmlinux. Empty when
	// the kernel refused without a log line.
	Error string   `json:"error,omitempty"`
	Log   []string `json:"log,omitempty"` // the verifier log, verbatim (Stage "guest": the console's end)
	// Stage is the step that failed: "target", "kfunc", "map", "btf", "load", "request",
	// "agent" or "guest" (the guest died while loading this program).
	Stage     string `json:"stage,omitempty"`
	Truncated bool   `json:"truncated,omitempty"` // the log outgrew LogLimit (the verdict stands)
	// BTFDropped: the kernel refused the program's BTF, so it was loaded without BTF, func
	// and line info, as libbpf does; this is the refusal.
	BTFDropped string `json:"btf_dropped,omitempty"`
}

// Verify boots the kernel under qemu and loads every program through its verifier, in one
// boot (each load independent). A program the kernel refuses is a result, not an error. If
// the guest dies on a program, that program fails (Stage "guest", with the reason) and the
// rest are verified in a fresh guest. The error is for setup failures (fetch, agent build,
// qemu missing, a kernel that does not boot).
func Verify(ctx context.Context, o VerifyOptions) ([]VerifyResult, error) {
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	if err := checkPrograms(o.Programs); err != nil {
		return nil, err
	}
	if len(o.Programs) == 0 {
		return nil, nil
	}
	k, agent, work, cleanup, err := guestSetup(ctx, o.Kernel, o.Arch, vm.Pin{}, o.WorkDir, progress)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	tag := o.Kernel + "-" + o.Arch
	fmt.Fprintf(progress, "%s: %s (%s %s), verifying %d programs\n", tag, k.Release, k.Package, k.Version, len(o.Programs))

	results := make([]*VerifyResult, len(o.Programs))
	pending := make([]int, len(o.Programs)) // indices into o.Programs still to verify
	for i := range pending {
		pending[i] = i
	}
	for boot := 1; len(pending) > 0; boot++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		req := wire.Request{Kernel: k.Kernel, Arch: k.Arch, Verify: &wire.VerifyRequest{LogLevel: o.LogLevel, LogLimit: o.LogLimit}}
		for _, i := range pending {
			req.Verify.Programs = append(req.Verify.Programs, o.Programs[i])
		}
		timeout := o.Timeout
		if timeout <= 0 {
			timeout = 90*time.Second + time.Duration(len(pending))*250*time.Millisecond
		}
		res, err := vm.Boot(ctx, k, agent, req, filepath.Join(work, "boots", fmt.Sprint(boot)), timeout, progress)
		got := 0
		if res != nil {
			for _, f := range res.Frames {
				if f.Kind != wire.KindVerify {
					continue
				}
				var r wire.VerifyResult
				if json.Unmarshal(f.JSON, &r) != nil || r.Index < 0 || r.Index >= len(pending) {
					continue
				}
				vr := fromWire(r)
				results[pending[r.Index]] = &vr
				got++
			}
		}
		var next []int
		for _, i := range pending {
			if results[i] == nil {
				next = append(next, i)
			}
		}
		fmt.Fprintf(progress, "%s: boot %d verified %d of %d programs\n", tag, boot, got, len(pending))
		if err == nil {
			for _, i := range next { // done, yet some unreported: never loop forever
				results[i] = &VerifyResult{Name: o.Programs[i].Name, Stage: "guest", Error: "the agent finished without reporting this program"}
			}
			break
		}
		var re *vm.RunError
		if !errors.As(err, &re) || !hasHello(res) {
			return nil, err // qemu or the kernel: a retry would fail the same way
		}
		if len(next) == 0 {
			break
		}
		if fatal := fatalFrame(res); fatal != "" || boot >= maxVerifyBoots {
			// The agent gave up by itself (the same would happen again), or too many guests died.
			why := fmt.Sprintf("%s: %s", re.Reason, re.Detail)
			if fatal == "" {
				why = fmt.Sprintf("not verified: %d guests died (the last: %s)", boot, why)
			}
			for _, i := range next {
				results[i] = &VerifyResult{Name: o.Programs[i].Name, Stage: "guest", Error: why}
			}
			break
		}
		// The guest died on the first unreported program: blame it, verify the rest again.
		fmt.Fprintf(progress, "%s: program %s: %s\n", tag, o.Programs[next[0]].Name, re.Reason)
		results[next[0]] = &VerifyResult{Name: o.Programs[next[0]].Name, Stage: "guest", Error: fmt.Sprintf("%s: %s", re.Reason, re.Detail),
			Log: consoleTail(re.Console)} // the kernel's oops, if it printed one
		pending = next[1:]
	}
	out := make([]VerifyResult, len(results))
	for i, r := range results {
		out[i] = *r
	}
	return out, nil
}

// checkPrograms validates programs before any boot, within MaxVerifyPrograms programs of
// MaxProgramInsns instructions each.
func checkPrograms(progs []wire.VerifyProgram) error {
	if len(progs) > MaxVerifyPrograms {
		return fmt.Errorf("%d programs: at most %d in one run", len(progs), MaxVerifyPrograms)
	}
	for i := range progs {
		if n := progs[i].Insns.Len(); n > MaxProgramInsns {
			return fmt.Errorf("program %d (%s): %d instructions: the kernel loads at most %d (BPF_COMPLEXITY_LIMIT_INSNS), -E2BIG", i, progs[i].Name, n, MaxProgramInsns)
		}
		if err := progs[i].Validate(); err != nil {
			return fmt.Errorf("program %d: %w", i, err)
		}
	}
	return nil
}

// maxVerifyBoots bounds the guests one Verify boots when programs keep killing them.
const maxVerifyBoots = 20

// fatalFrame returns the agent's fatal message, if it sent one.
func fatalFrame(res *vm.RunResult) string {
	if res == nil {
		return ""
	}
	for _, f := range res.Frames {
		if f.Kind == wire.KindFatal {
			var s string
			_ = json.Unmarshal(f.JSON, &s)
			return s
		}
	}
	return ""
}

// consoleTail is the end of a dead guest's console, as log lines.
func consoleTail(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func fromWire(r wire.VerifyResult) VerifyResult {
	return VerifyResult{Name: r.Name, Accepted: r.Accepted, Errno: r.Errno, Error: r.Error, Log: r.Log, Stage: r.Stage, Truncated: r.Truncated, BTFDropped: r.BTFDropped}
}
