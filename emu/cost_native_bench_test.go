package emu

import (
	"fmt"
	"testing"
)

// Run with: make bench, or go test -run '^$' -bench NativeCost ./emu/
//
// BenchmarkNativeCost measures, natively, the cost per hit of a trampoline on a
// vfs_read-shaped function (x86_64, Linux 6.12 image) against a plain call of the same
// function measured in the same child, interleaved (cost_native.go). Metrics per hit, as
// medians over all repetitions of every b.Loop iteration:
//
//	plain-cyc   the plain call (rdtsc cycles)
//	tramp-cyc   the call through the trampoline
//	over-cyc    tramp - plain: what attaching costs
//	stubs-cyc   the stubs' share of it (their replay - plain)
//	own-cyc     tramp - stubs' replay: the trampoline's own instructions
//	x-plain     tramp / plain
//	over-ns     tramp - plain in ns (CLOCK_MONOTONIC)
//
// ns/op is a whole child (fork, mapping, three phases): ignore it.
func BenchmarkNativeCost(b *testing.B) {
	if !NativeSupported {
		b.Skip("the native engine needs an x86_64 Linux host")
	}
	const calls, reps = 20000, 31
	for _, kind := range []string{"fentry", "fexit", "fentry+fexit", "fmod_ret"} {
		for _, n := range []int{1, 4, 16, 38} {
			if kind == "fentry+fexit" && n == 1 {
				n = 2
			}
			b.Run(fmt.Sprintf("%s/n=%d", kind, n), func(b *testing.B) {
				r, err := CostRequest(kind, n)
				if err != nil {
					b.Fatal(err)
				}
				// The image must pass the checked run before its cost means anything.
				if rep, err := Run(r, Options{Engine: EngineNative, Count: 100, Clobber: true}); err != nil || !rep.OK {
					b.Fatalf("checked run: %v %+v", err, rep)
				}
				var all []CostSample
				for b.Loop() {
					c, err := NativeCost(r, calls, reps)
					if err != nil {
						b.Fatal(err)
					}
					all = append(all, c.Samples...)
				}
				med := func(f func(CostSample) float64) float64 { return Median(all, f) }
				plain := med(func(s CostSample) float64 { return s.PlainCyc })
				tramp := med(func(s CostSample) float64 { return s.TrampCyc })
				b.ReportMetric(plain, "plain-cyc")
				b.ReportMetric(tramp, "tramp-cyc")
				b.ReportMetric(med(func(s CostSample) float64 { return s.TrampCyc - s.PlainCyc }), "over-cyc")
				b.ReportMetric(med(func(s CostSample) float64 { return s.StubsCyc - s.PlainCyc }), "stubs-cyc")
				b.ReportMetric(med(func(s CostSample) float64 { return s.TrampCyc - s.StubsCyc }), "own-cyc")
				b.ReportMetric(tramp/plain, "x-plain")
				b.ReportMetric(med(func(s CostSample) float64 { return s.TrampNs - s.PlainNs }), "over-ns")
				b.ReportMetric(med(func(s CostSample) float64 { return s.PlainNs }), "plain-ns")
			})
		}
	}
}

// BenchmarkNativeChecked: checked calls natively (every call compared with the oracle's
// script by the stubs, as under Unicorn), the 2-program image of BenchmarkBatch.
func BenchmarkNativeChecked(b *testing.B) {
	if !NativeSupported {
		b.Skip("the native engine needs an x86_64 Linux host")
	}
	r, err := CostRequest("fentry+fexit", 2)
	if err != nil {
		b.Fatal(err)
	}
	const n = 1000000
	var hps []float64
	for b.Loop() {
		rep, err := Run(r, Options{Engine: EngineNative, Count: n})
		if err != nil || !rep.OK {
			b.Fatal(err, rep)
		}
		hps = append(hps, rep.HitsPerSec)
	}
	b.ReportMetric(Median(hps, func(v float64) float64 { return v }), "hits/s")
}
