package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/trampjit/trampjit/kernel/vm"
	"github.com/trampjit/trampjit/kernel/wire"
)

// CostMechanisms are the attach mechanisms Cost measures, in table order.
var CostMechanisms = []string{"kprobe", "kprobe_trap", "kprobe_opt", "kretprobe", "kprobe_multi", "kretprobe_multi", "fentry", "fexit", "fmod_ret", "raw_tp", "tp_btf"}

// CostCounts are the program counts of each mechanism's points.
var CostCounts = []int{1, 4, 16, 38}

// costOptions are the kernel options that decide which path a mechanism takes: kprobe_multi
// needs FPROBE; KPROBES_ON_FTRACE makes an entry kprobe an ftrace callback; OPTPROBES jumps.
var costOptions = []string{"CONFIG_FPROBE", "CONFIG_KPROBES_ON_FTRACE", "CONFIG_OPTPROBES", "CONFIG_HZ"}

// CostKernels are the profiles the claims table measures: 6.12 and the newest.
var CostKernels = []string{"6.12", "7.2"}

// ReadCostReport reads a report written by WriteCostReport.
func ReadCostReport(path string) (*CostReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r CostReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// WriteCostReport writes r as indented JSON, creating the directory.
func WriteCostReport(path string, r *CostReport) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// CostFunc is the traced function: BPF_PROG_TEST_RUN of an fmod_ret program calls it (and
// nothing else traced), and fmod_ret may attach to it (ALLOW_ERROR_INJECTION).
const CostFunc = "bpf_modify_return_test"

// CostOptions configure Cost.
type CostOptions struct {
	Kernel, Arch string
	Mechanisms   []string // default CostMechanisms
	Counts       []int    // default CostCounts
	Batches      int      // measurements per point (default 63)
	Batch        int      // hits per measurement (default 1; 2 on arm64, whose counter ticks every 16 instructions)
	Loop         []int    // known-loop iteration counts (default 1000, 2000, 10000, 20000)
	Attach       int      // fentry attaches to count, 1..Attach (default 39; -1 none)
	Timeout      time.Duration
	WorkDir      string
	Progress     io.Writer
}

// CostReport is one guest's measurements.
type CostReport struct {
	Kernel  string `json:"kernel"`
	Arch    string `json:"arch"`
	Release string `json:"release"`
	Func    string `json:"func"`
	Batch   int    `json:"batch"`   // hits per measurement
	Batches int    `json:"batches"` // measurements per point
	wire.CostResult
	// Config are the build options that decide the mechanisms' paths (costOptions), "" unset.
	Config      map[string]string `json:"config,omitempty"`
	BootSeconds float64           `json:"boot_seconds"`
	RunSeconds  float64           `json:"run_seconds"`
}

// Cost boots the kernel under qemu -icount shift=0 and counts, in the guest, the
// instructions of each attach mechanism's path and of fentry attaches.
func Cost(ctx context.Context, o CostOptions) (*CostReport, error) {
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	req := wire.CostRequest{Func: CostFunc, Mechanisms: o.Mechanisms, Counts: o.Counts, Batches: o.Batches, Batch: o.Batch, Loop: o.Loop, Attach: o.Attach}
	if req.Mechanisms == nil {
		req.Mechanisms = CostMechanisms
	}
	for _, m := range req.Mechanisms {
		if !validMech(m) {
			return nil, fmt.Errorf("unknown mechanism %q (known: %v)", m, CostMechanisms)
		}
	}
	if req.Counts == nil {
		req.Counts = CostCounts
	}
	for _, n := range req.Counts {
		if n < 1 || n > 64 {
			return nil, fmt.Errorf("program count %d: want 1..64", n)
		}
	}
	// Interrupts only add, and a 7.2 guest takes one every ~100k instructions: short batches
	// keep most of them clean, so the median is the path. The TSC counts single hits
	// exactly; CNTVCT_EL0 ticks every 16 instructions, so arm64 batches 2 (8 per hit).
	if req.Batch <= 0 {
		req.Batch = 1
		if o.Arch == "arm64" {
			req.Batch = 2
		}
	}
	if req.Batches <= 0 {
		req.Batches = 63
	}
	if req.Loop == nil {
		req.Loop = []int{1000, 2000, 10000, 20000}
	}
	switch {
	case req.Attach == 0:
		req.Attach = 39 // one past BPF_MAX_TRAMP_LINKS: where the kernel stops
	case req.Attach < 0:
		req.Attach = 0
	}
	if o.Arch != "amd64" && o.Arch != "arm64" {
		return nil, fmt.Errorf("cost is measured on amd64 and arm64, not %q", o.Arch)
	}
	k, agent, work, cleanup, err := guestSetup(ctx, o.Kernel, o.Arch, vm.Pin{}, o.WorkDir, progress)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	tag := o.Kernel + "-" + o.Arch
	fmt.Fprintf(progress, "%s: %s (%s %s), counting instructions under -icount shift=0\n", tag, k.Release, k.Package, k.Version)
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	res, err := vm.BootICount(ctx, k, agent, wire.Request{Kernel: k.Kernel, Arch: k.Arch, Cost: &req}, filepath.Join(work, "cost"), timeout, progress)
	if err != nil {
		return nil, err
	}
	rep := &CostReport{Kernel: k.Kernel, Arch: k.Arch, Func: req.Func, Batch: req.Batch, Batches: req.Batches, BootSeconds: res.BootTime.Seconds(), RunSeconds: res.Duration.Seconds()}
	if k.Config != "" {
		if kc, err := vm.ReadKernelConfig(k.Config); err == nil {
			rep.Config = map[string]string{}
			for _, o := range costOptions {
				rep.Config[o] = kc.Value(o)
			}
		}
	}
	found := false
	for _, f := range res.Frames {
		switch f.Kind {
		case wire.KindHello:
			var h wire.Hello
			if json.Unmarshal(f.JSON, &h) == nil {
				rep.Release = h.Release
			}
		case wire.KindCost:
			if err := json.Unmarshal(f.JSON, &rep.CostResult); err != nil {
				return nil, fmt.Errorf("cost frame: %w", err)
			}
			found = true
		}
	}
	if !found {
		return nil, errors.New(tag + ": the agent finished without a cost result")
	}
	if rep.Error != "" {
		return rep, fmt.Errorf("%s: %s", tag, rep.Error)
	}
	return rep, nil
}

func validMech(m string) bool {
	for _, k := range CostMechanisms {
		if k == m {
			return true
		}
	}
	return false
}

// LoopExact checks the known loop: between two iteration counts the counted instructions
// differ by exactly the iterations' instructions; on a counter that ticks every q
// instructions (CNTFRQ_EL0 below 1 GHz) within one tick. It returns the first mismatch.
func (r *CostReport) LoopExact() error {
	q := r.InsnsPerTick()
	for i := 1; i < len(r.Loop); i++ {
		a, b := r.Loop[i-1], r.Loop[i]
		if a.PerIter != b.PerIter {
			continue
		}
		got := (float64(b.MinTicks) - float64(a.MinTicks)) * q
		want := float64((b.Iters - a.Iters) * b.PerIter)
		if d := got - want; d > q || d < -q || (q == 1 && d != 0) {
			return fmt.Errorf("%d vs %d iterations: counted %.0f more instructions, the loop has %.0f more", b.Iters, a.Iters, got, want)
		}
	}
	return nil
}

// InsnsPerTick is how many instructions one counter tick stands for.
func (r *CostReport) InsnsPerTick() float64 {
	if r.CounterHz == 0 {
		return 1
	}
	return 1e9 / float64(r.CounterHz)
}

// Path returns the measured point of mechanism m with n programs.
func (r *CostReport) Path(m string, n int) (wire.CostPath, bool) {
	for _, p := range r.Paths {
		if p.Mech == m && p.Progs == n {
			return p, true
		}
	}
	return wire.CostPath{}, false
}

// Added is a point's instructions per hit above the uninstrumented call, with the programs
// attached (p.Attached); 0 when the point was not measured.
func Added(p wire.CostPath) float64 {
	if p.Stat.Samples == 0 {
		return 0
	}
	return p.Stat.Median - p.Base
}
