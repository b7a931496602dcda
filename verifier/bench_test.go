package verifier_test

import (
	"bufio"
	"context"
	"flag"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/kernel/wire"
	"github.com/trampjit/trampjit/verifier"
)

// The model's speed (docs/verifier-model-speed.md): BenchmarkModel runs every program of
// testdata/verifier through the model, per profile, and reports the median time per
// program and the slowest program; TestKernelVerificationTime collects the kernel's own
// "verification time N usec" for the same programs from one guest boot.

var (
	benchList    = flag.String("benchlist", "", "BenchmarkModel, TestKernelVerificationTime: only the programs listed in this file (file:name, one a line)")
	benchWrite   = flag.String("benchwrite", "", "BenchmarkModel: write the programs benchmarked (file:name, one a line) to this file")
	kernelTime   = flag.Bool("kerneltime", false, "TestKernelVerificationTime: boot a guest and collect the kernel's verification times")
	kernelTimeOn = flag.String("kerneltimeprofile", "6.12-amd64", "TestKernelVerificationTime: the kernel profile to boot")
)

// benchPrograms are the programs of testdata/verifier for env, restricted to -benchlist.
func benchPrograms(tb testing.TB, env verifier.Env, withWire bool) []truthProgram {
	tb.Helper()
	var only map[string]bool
	if *benchList != "" {
		f, err := os.Open(*benchList)
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		only = map[string]bool{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); l != "" {
				only[l] = true
			}
		}
	}
	var out []truthProgram
	for _, p := range truthPrograms(tb, env, withWire) {
		if only == nil || only[p.file+":"+p.prog.Name] {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		tb.Fatal("no programs to measure")
	}
	return out
}

// medianMax is the median of d and its largest element's index.
func medianMax(d []time.Duration) (time.Duration, int) {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	slowest := 0
	for i := range d {
		if d[i] > d[slowest] {
			slowest = i
		}
	}
	return med, slowest
}

// BenchmarkModel: one op is every program once; the metrics are per program: the median
// over programs of each program's median time, and the slowest program's.
func BenchmarkModel(b *testing.B) {
	for _, profile := range truthProfiles {
		b.Run(profile, func(b *testing.B) {
			env := profileEnv(b, profile)
			progs := benchPrograms(b, env, false)
			if *benchWrite != "" && profile == truthProfiles[0] {
				var names []string
				for _, p := range progs {
					names = append(names, p.file+":"+p.prog.Name)
				}
				if err := os.WriteFile(*benchWrite, []byte(strings.Join(names, "\n")+"\n"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			// One untimed pass first: what the model builds once per kernel BTF (indexes,
			// caches) is not charged to whichever program happens to need it first.
			for j := range progs {
				verifier.Check(progs[j].prog, env)
			}
			runs := make([][]time.Duration, len(progs))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j := range progs {
					start := time.Now()
					verifier.Check(progs[j].prog, env)
					runs[j] = append(runs[j], time.Since(start))
				}
			}
			b.StopTimer()
			// A program's time is the median of its runs (a GC pause or a preemption
			// in one run does not make it the slowest).
			times := make([]time.Duration, len(progs))
			for j := range runs {
				times[j], _ = medianMax(runs[j])
			}
			med, slowest := medianMax(times)
			b.ReportMetric(float64(med.Nanoseconds()), "median-ns/prog")
			b.ReportMetric(float64(times[slowest].Nanoseconds()), "max-ns/prog")
			b.ReportMetric(float64(len(progs)), "progs")
			largest := largestProgram(progs)
			b.ReportMetric(float64(times[largest].Nanoseconds()), "largest-ns/prog")
			b.Logf("%s: %d programs, median %v per program, slowest %s:%s %v, largest %s:%s (%d insns) %v", profile, len(progs), med,
				progs[slowest].file, progs[slowest].prog.Name, times[slowest],
				progs[largest].file, progs[largest].prog.Name, len(progs[largest].prog.Instructions), times[largest])
		})
	}
}

// verificationTime is the kernel's BPF_LOG_STATS line (print_verification_stats in
// kernel/bpf/verifier.c).
var verificationTime = regexp.MustCompile(`^verification time (\d+) usec`)

// TestKernelVerificationTime loads the benchmark's programs into one guest with
// log_level 1|4 (BPF_LOG_STATS) and reports the kernel's own verification times beside the
// model's for the same programs.
func TestKernelVerificationTime(t *testing.T) {
	if !*kernelTime {
		t.Skip("boots a guest kernel: set -kerneltime")
	}
	env := profileEnv(t, *kernelTimeOn)
	progs := benchPrograms(t, env, true)
	wps := make([]wire.VerifyProgram, len(progs))
	for i, p := range progs {
		wps[i] = p.wire
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	res, err := kernel.Verify(ctx, kernel.VerifyOptions{Kernel: string(env.Kernel), Arch: string(env.Arch),
		Programs: wps, LogLevel: 1 | 4, Progress: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	var ktimes, mtimes []time.Duration
	var names []string
	var sizes []int
	for i, r := range res {
		var us int
		found := false
		for _, l := range r.Log {
			if m := verificationTime.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
				us, _ = strconv.Atoi(m[1])
				found = true
			}
		}
		if !found {
			t.Logf("%s:%s: no verification time in the log (stage %q)", progs[i].file, progs[i].prog.Name, r.Stage)
			continue
		}
		ktimes = append(ktimes, time.Duration(us)*time.Microsecond)
		const reps = 20
		start := time.Now()
		for k := 0; k < reps; k++ {
			verifier.Check(progs[i].prog, env)
		}
		mtimes = append(mtimes, time.Since(start)/reps)
		names = append(names, progs[i].file+":"+progs[i].prog.Name)
		sizes = append(sizes, len(progs[i].prog.Instructions))
	}
	if len(ktimes) == 0 {
		t.Fatal("no verification times in the guest logs")
	}
	kmed, kmax := medianMax(ktimes)
	mmed, mmax := medianMax(mtimes)
	big := 0
	for i := range sizes {
		if sizes[i] > sizes[big] {
			big = i
		}
	}
	t.Logf("%s: %d programs with a verification time: kernel median %v, max %v (%s); model median %v, max %v (%s); largest %s (%d insns): kernel %v, model %v",
		*kernelTimeOn, len(ktimes), kmed, ktimes[kmax], names[kmax], mmed, mtimes[mmax], names[mmax],
		names[big], sizes[big], ktimes[big], mtimes[big])
}

// largestProgram is the index of the program with the most instructions.
func largestProgram(progs []truthProgram) int {
	big := 0
	for i := range progs {
		if len(progs[i].prog.Instructions) > len(progs[big].prog.Instructions) {
			big = i
		}
	}
	return big
}
