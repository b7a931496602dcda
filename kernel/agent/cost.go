package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel/wire"
)

// The agent counts instructions with the guest's clock: under qemu -icount shift=0 the TSC
// (amd64) and CNTVCT_EL0 (arm64) advance with every instruction the guest executes, kernel
// and user alike, so the ticks between two reads are the path length of what ran between
// them (plus idle time, which the measurements here do not have, and interrupts, which the
// median of many measurements leaves out).

type coster struct {
	req   *wire.CostRequest
	scale float64 // instructions per tick
	trig  int     // the trigger's fd: its BPF_PROG_TEST_RUN calls req.Func
	progs map[string][]*ebpf.Program
	keep  *ebpf.Program
	// trapOff is kprobe_trap's offset into the function (cost_kprobe.go).
	trapOff uint64
}

// runCost answers a cost request.
func runCost(req *wire.CostRequest) (r wire.CostResult) {
	if !haveCounter {
		r.Error = "no instruction counter on " + runtime.GOARCH
		return r
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r.Counter, r.CounterHz = "rdtsc", counterHz()
	c := &coster{req: req, scale: 1, progs: map[string][]*ebpf.Program{}}
	if runtime.GOARCH == "arm64" {
		r.Counter = "cntvct_el0"
		if r.CounterHz == 0 {
			r.Error = "CNTFRQ_EL0 reads 0"
			return r
		}
		c.scale = 1e9 / float64(r.CounterHz) // the virtual clock is 1 ns per instruction
	}
	for _, n := range req.Loop {
		l := wire.CostLoop{Iters: n, PerIter: 2, MinTicks: ^uint64(0)}
		for range 31 { // the fewest: an interrupt only adds (7.2 guests take one every ~100k instructions)
			l.MinTicks = min(l.MinTicks, knownLoop(uint64(max(n, 1))))
		}
		r.Loop = append(r.Loop, l)
	}
	tp, err := trigger(req.Func)
	if err != nil {
		r.Error = "trigger: " + err.Error()
		return r
	}
	defer tp.Close()
	c.keep, c.trig = tp, tp.FD()
	if err := c.testRun(); err != nil {
		r.Error = "BPF_PROG_TEST_RUN: " + err.Error()
		return r
	}
	defer c.close()
	r.Baseline = c.measure()
	for _, m := range req.Mechanisms {
		for _, n := range req.Counts {
			p := c.path(m, n)
			logf("cost %s x%d: %.0f instructions per hit (uninstrumented %.0f) %s", m, n, p.Stat.Median, p.Base, p.Error)
			r.Paths = append(r.Paths, p)
		}
	}
	if req.Attach > 0 {
		r.Attach = c.attachCost(req.Attach)
	}
	return r
}

// testRunAttr is union bpf_attr's test part (include/uapi/linux/bpf.h), zero but prog_fd: the
// tracing test run takes no data.
type testRunAttr struct {
	ProgFD uint32
	_      [19]uint32
}

func (c *coster) testRun() error {
	attr := testRunAttr{ProgFD: uint32(c.trig)}
	_, _, errno := unix.RawSyscall(unix.SYS_BPF, unix.BPF_PROG_TEST_RUN, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if errno != 0 {
		return kernelErrno{errno}
	}
	return nil
}

// settle lets the work an attach or detach leaves to kernel threads (RCU callbacks freeing
// old images, ftrace's deferred updates) finish before a measurement: the guest idles, which
// under -icount costs no host time (the clock jumps to the next timer).
func settle() { time.Sleep(200 * time.Millisecond) }

// measure counts Batches batches of Batch triggers (after one discarded batch) and returns
// the per-hit spread.
func (c *coster) measure() wire.CostStat {
	batch, batches := max(c.req.Batch, 1), max(c.req.Batches, 1)
	s := make([]float64, 0, batches)
	for b := -1; b < batches; b++ {
		t0 := counter()
		for range batch {
			_ = c.testRun()
		}
		t1 := counter()
		if b >= 0 {
			s = append(s, float64(t1-t0)*c.scale/float64(batch))
		}
	}
	slices.Sort(s)
	q := func(f float64) float64 { return s[int(f*float64(len(s)-1)+0.5)] }
	return wire.CostStat{Median: q(0.5), Min: s[0], Max: s[len(s)-1], P10: q(0.1), P90: q(0.9), Samples: len(s)}
}

// path attaches n programs of mechanism m to the function, measures, and detaches them.
func (c *coster) path(m string, n int) wire.CostPath {
	p := wire.CostPath{Mech: m, Progs: n}
	settle()
	p.Base = c.measure().Median
	progs, err := c.load(m, n)
	if err != nil {
		p.Error, p.Errno = "load: "+err.Error(), errnoOf(err)
		return p
	}
	var links []func()
	if m == "kprobe_trap" {
		defer setOptprobes(true)
	}
	defer func() {
		for _, cl := range links {
			cl()
		}
	}()
	for i, prog := range progs {
		cl, err := c.attach(m, prog)
		if err != nil {
			p.Error, p.Errno = fmt.Sprintf("attach program %d: %v", i+1, err), errnoOf(err)
			break
		}
		links = append(links, cl)
	}
	if p.Attached = len(links); p.Attached == 0 {
		return p
	}
	settle()
	if strings.HasPrefix(m, "kprobe") || strings.HasPrefix(m, "kretprobe") {
		p.Probe = probeState(c.req.Func)
	}
	p.Stat = c.measure()
	p.RunsMin, p.RunsMax, p.RunsOf = c.runs(progs[:p.Attached])
	return p
}

// statsSysctl is kernel.bpf_stats_enabled: run_cnt and run_time_ns are kept while it is on.
const statsSysctl = "/proc/sys/kernel/bpf_stats_enabled"

// runsOf is how many triggers the run check makes.
const runsOf = 4

// runs triggers runsOf times with statistics on and returns the fewest and most runs of
// one of progs: a check that every attached program ran on every hit.
func (c *coster) runs(progs []*ebpf.Program) (lo, hi uint64, n int) {
	if err := os.WriteFile(statsSysctl, []byte("1\n"), 0); err != nil {
		logf("%s: %v", statsSysctl, err)
		return 0, 0, 0
	}
	defer os.WriteFile(statsSysctl, []byte("0\n"), 0)
	before := make([]uint64, len(progs))
	for i, p := range progs {
		if st, err := p.Stats(); err == nil {
			before[i] = st.RunCount
		}
	}
	for range runsOf {
		_ = c.testRun()
	}
	lo = ^uint64(0)
	for i, p := range progs {
		st, err := p.Stats()
		if err != nil {
			return 0, 0, 0
		}
		d := st.RunCount - before[i]
		lo, hi = min(lo, d), max(hi, d)
	}
	return lo, hi, runsOf
}

// load returns n programs for mechanism m, loading those not loaded yet.
func (c *coster) load(m string, n int) ([]*ebpf.Program, error) {
	for len(c.progs[m]) < n {
		prog, err := c.loadOne(m)
		if err != nil {
			return nil, fmt.Errorf("program %d: %w", len(c.progs[m])+1, err)
		}
		c.progs[m] = append(c.progs[m], prog)
	}
	return c.progs[m][:n], nil
}

func (c *coster) loadOne(m string) (*ebpf.Program, error) {
	spec := &ebpf.ProgramSpec{Name: "tj_cost", License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}}
	switch m {
	case "kprobe", "kretprobe", "kprobe_trap", "kprobe_opt":
		spec.Type = ebpf.Kprobe
	case "kprobe_multi", "kretprobe_multi":
		spec.Type, spec.AttachType = ebpf.Kprobe, ebpf.AttachTraceKprobeMulti
	case "fentry", "fexit", "fmod_ret":
		kind := map[string]jit.Kind{"fentry": jit.Fentry, "fexit": jit.Fexit, "fmod_ret": jit.ModRet}[m]
		return loadProg(nil, c.req.Func, jit.Prog{Kind: kind}, nil, nil)
	case "raw_tp":
		spec.Type = ebpf.RawTracepoint
	case "tp_btf":
		spec.Type, spec.AttachType, spec.AttachTo = ebpf.Tracing, ebpf.AttachTraceRawTp, costTracepoint
	default:
		return nil, fmt.Errorf("unknown mechanism %q", m)
	}
	return ebpf.NewProgram(spec)
}

// costTracepoint is the raw tracepoint on every syscall's path (the trigger's bpf(2) among
// them): attaching to it sets SYSCALL_WORK_SYSCALL_TRACEPOINT on every task.
const costTracepoint = "sys_enter"

// attach links prog by mechanism m and returns what detaches it.
func (c *coster) attach(m string, prog *ebpf.Program) (func(), error) {
	var l link.Link
	var err error
	fn := c.req.Func
	switch m {
	case "kprobe":
		l, err = link.Kprobe(fn, prog, nil)
	case "kretprobe":
		l, err = link.Kretprobe(fn, prog, nil)
	case "kprobe_trap", "kprobe_opt":
		if c.trapOff == 0 {
			if c.trapOff, err = trapOffset(fn); err != nil {
				return nil, err
			}
		}
		setOptprobes(m == "kprobe_opt")
		l, err = link.Kprobe(fn, prog, &link.KprobeOptions{Offset: c.trapOff})
	case "kprobe_multi":
		l, err = link.KprobeMulti(prog, link.KprobeMultiOptions{Symbols: []string{fn}})
	case "kretprobe_multi":
		l, err = link.KretprobeMulti(prog, link.KprobeMultiOptions{Symbols: []string{fn}})
	case "fentry", "fexit", "fmod_ret":
		at := map[string]ebpf.AttachType{"fentry": ebpf.AttachTraceFEntry, "fexit": ebpf.AttachTraceFExit, "fmod_ret": ebpf.AttachModifyReturn}[m]
		fd, err := linkCreate(prog, at, 0)
		if err != nil {
			return nil, err
		}
		return func() { unix.Close(fd) }, nil
	case "raw_tp":
		l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: costTracepoint, Program: prog})
	case "tp_btf":
		l, err = link.AttachTracing(link.TracingOptions{Program: prog})
	default:
		return nil, fmt.Errorf("unknown mechanism %q", m)
	}
	if err != nil {
		return nil, err
	}
	return func() { l.Close() }, nil
}

// attachCost attaches fentry programs 1..n one at a time and counts each attach: every one
// rebuilds the trampoline image for all programs attached so far.
func (c *coster) attachCost(n int) []wire.CostAttach {
	var out []wire.CostAttach
	progs, err := c.load("fentry", n)
	if err != nil {
		return []wire.CostAttach{{N: 1, Error: err.Error()}}
	}
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for i, prog := range progs {
		var ts0, ts1 unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts0)
		t0 := counter()
		fd, err := linkCreate(prog, ebpf.AttachTraceFEntry, 0)
		t1 := counter()
		_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts1)
		a := wire.CostAttach{N: i + 1, Ticks: uint64(float64(t1-t0) * c.scale), ThreadNs: ts1.Nano() - ts0.Nano()}
		if err != nil {
			if a.Error = errnoOf(err); a.Error == "" {
				a.Error = err.Error()
			}
			out = append(out, a)
			break
		}
		fds = append(fds, fd)
		out = append(out, a)
	}
	return out
}

func (c *coster) close() {
	for _, ps := range c.progs {
		for _, p := range ps {
			p.Close()
		}
	}
}
