package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/trampjit/trampjit/kernel"
)

// runKernelCost boots one guest under qemu -icount shift=0 and prints the instructions each
// attach mechanism adds per hit of the traced function, and what each fentry attach costs.
func runKernelCost(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("kernel cost", stderr)
	p := profileFlags{fetchable: true}
	var mechs, counts, updateDoc, save, from string
	var batches, batch, attach int
	var all bool
	var out output
	p.register(fs.StringVar)
	fs.StringVar(&mechs, "mech", strings.Join(kernel.CostMechanisms, ","), "mechanisms, comma-separated")
	fs.StringVar(&counts, "progs", "1,4,16,38", "program counts, comma-separated")
	fs.IntVar(&batches, "batches", 0, "measurements per point, the median reported (default 63)")
	fs.IntVar(&batch, "batch", 0, "hits per measurement (default 1; 2 on arm64, whose counter ticks every 16 instructions)")
	fs.IntVar(&attach, "attach", 39, "count attaching fentry programs 1..N (0: none); the kernel refuses the 39th")
	fs.BoolVar(&all, "all", false, "measure every guest the claims table needs: amd64 and arm64 on "+strings.Join(kernel.CostKernels, " and "))
	fs.StringVar(&updateDoc, "update-doc", "", "rewrite the generated section of this markdown file (docs/cost.md) from the reports")
	fs.StringVar(&save, "save", "", "write each guest's report as DIR/<kernel>-<arch>.json")
	fs.StringVar(&from, "from", "", "read the reports from DIR (written by --save) instead of booting guests")
	out.register(fs, "text or json")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: trampjit kernel cost [flags]\n\n"+
			"Counts, in a guest under qemu -icount shift=0, the instructions the kernel executes per call\n"+
			"of %s under each attach mechanism, and per fentry attach.\n\n%s\n", kernel.CostFunc, kernelExitStatus)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := out.check("text", "json"); err != nil {
		return err
	}
	if err := p.check(); err != nil {
		return err
	}
	o := kernel.CostOptions{Kernel: p.kernel, Arch: p.arch, Batches: batches, Batch: batch, Attach: attach, Progress: stderr}
	if attach == 0 {
		o.Attach = -1
	}
	if batches < 0 || batch < 0 {
		return usageErr("--batches and --batch: want at least 1")
	}
	o.Mechanisms = strings.Split(mechs, ",")
	for _, c := range strings.Split(counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 || n > 64 {
			return usageErr("--progs: %q is not a program count 1..64", c)
		}
		o.Counts = append(o.Counts, n)
	}
	guests := [][2]string{{p.kernel, p.arch}}
	if all || from != "" {
		guests = nil
		for _, k := range kernel.CostKernels {
			for _, a := range []string{"amd64", "arm64"} {
				guests = append(guests, [2]string{k, a})
			}
		}
	}
	ctx, stop := interruptible()
	defer stop()
	var reps []*kernel.CostReport
	for _, g := range guests {
		var rep *kernel.CostReport
		var err error
		if from != "" {
			rep, err = kernel.ReadCostReport(filepath.Join(from, g[0]+"-"+g[1]+".json"))
		} else {
			o.Kernel, o.Arch = g[0], g[1]
			rep, err = kernel.Cost(ctx, o)
		}
		if err != nil {
			return asInterrupt(ctx, err)
		}
		if save != "" {
			if err := kernel.WriteCostReport(filepath.Join(save, g[0]+"-"+g[1]+".json"), rep); err != nil {
				return err
			}
		}
		reps = append(reps, rep)
		if out.format == "json" {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				return err
			}
		} else if err := writeCostText(stdout, rep); err != nil {
			return err
		}
	}
	if updateDoc != "" {
		if err := kernel.UpdateCostDoc(updateDoc, reps); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote the kernel cost section of %s (%d guests)\n", updateDoc, len(reps))
	}
	return nil
}

func writeCostText(w io.Writer, r *kernel.CostReport) error {
	fmt.Fprintf(w, "%s %s (%s): %s, counter %s", r.Kernel, r.Arch, r.Release, r.Func, r.Counter)
	if r.CounterHz != 0 {
		fmt.Fprintf(w, " at %d Hz (%.0f instructions per tick)", r.CounterHz, r.InsnsPerTick())
	}
	fmt.Fprintln(w)
	for _, l := range r.Loop {
		fmt.Fprintf(w, "  known loop %7d x %d instructions: %9.0f counted\n", l.Iters, l.PerIter, float64(l.MinTicks)*r.InsnsPerTick())
	}
	if err := r.LoopExact(); err != nil {
		fmt.Fprintf(w, "  counter NOT exact: %v\n", err)
	} else {
		fmt.Fprintln(w, "  counter exact on the known loop")
	}
	fmt.Fprintf(w, "  uninstrumented call (BPF_PROG_TEST_RUN): %.0f instructions\n", r.Baseline.Median)
	fmt.Fprintf(w, "  %-16s %5s %10s %10s %10s  %s\n", "mechanism", "progs", "added", "p10", "p90", "runs/hits")
	for _, p := range r.Paths {
		if p.Attached == 0 {
			fmt.Fprintf(w, "  %-16s %5d %s\n", p.Mech, p.Progs, p.Error)
			continue
		}
		note := ""
		if p.Error != "" {
			note = fmt.Sprintf("  (%d attached: %s)", p.Attached, p.Error)
		}
		if p.Probe != "" {
			note += "  " + p.Probe
		}
		fmt.Fprintf(w, "  %-16s %5d %10.0f %10.0f %10.0f  %d-%d/%d%s\n", p.Mech, p.Progs, kernel.Added(p), p.Stat.P10-p.Base, p.Stat.P90-p.Base,
			p.RunsMin, p.RunsMax, p.RunsOf, note)
	}
	for _, a := range r.Attach {
		if a.Error != "" {
			fmt.Fprintf(w, "  attach fentry #%d: %s\n", a.N, a.Error)
			continue
		}
		fmt.Fprintf(w, "  attach fentry #%-2d %9d ticks (guest ns) %9d thread ns\n", a.N, a.Ticks, a.ThreadNs)
	}
	return nil
}
