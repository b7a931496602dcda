package kernel

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trampjit/trampjit/kernel/wire"
)

// TestGuestCost boots Debian's 6.12 amd64 kernel under -icount shift=0 and checks the
// counter on the agent's known loop (two instructions per iteration, written in assembly:
// N more iterations must count exactly 2N more instructions), and the ordering the counts
// measure on bpf_modify_return_test: a kprobe's path, trap or ftrace, is longer than fentry's.
func TestGuestCost(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a qemu guest; skipped with -short")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("qemu-system-x86_64 is not installed; cannot boot the 6.12-amd64 guest")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	t0 := time.Now()
	rep, err := Cost(ctx, CostOptions{Kernel: "6.12", Arch: "amd64", Mechanisms: []string{"fentry", "kprobe", "kprobe_trap"},
		Counts: []int{1}, Batches: 15, Attach: -1, Loop: []int{1000, 2000, 10000, 20000}, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %v", rep.Release, time.Since(t0))
	if rep.Counter != "rdtsc" || rep.InsnsPerTick() != 1 {
		t.Fatalf("counter %s at %d Hz, want the TSC at one tick per instruction", rep.Counter, rep.CounterHz)
	}
	if len(rep.Loop) != 4 {
		t.Fatalf("%d loop counts, want 4", len(rep.Loop))
	}
	for i, l := range rep.Loop {
		if l.PerIter != 2 {
			t.Fatalf("loop %d: %d instructions per iteration, the assembly has 2", i, l.PerIter)
		}
		// The same constant outside the loop every time: a handful of instructions.
		if off := int64(l.MinTicks) - int64(2*l.Iters); off != int64(rep.Loop[0].MinTicks)-2000 || off < 0 || off > 16 {
			t.Errorf("%d iterations counted %d: offset %d, want the same small constant as for 1000 (%d)", l.Iters, l.MinTicks, off, int64(rep.Loop[0].MinTicks)-2000)
		}
	}
	if err := rep.LoopExact(); err != nil {
		t.Error(err)
	}
	get := func(m string) float64 {
		p, ok := rep.Path(m, 1)
		if !ok || p.Error != "" {
			t.Fatalf("%s: not measured: %+v", m, p)
		}
		if p.Stat.Samples != 15 || p.Stat.Min > p.Stat.Median || p.Stat.Median > p.Stat.Max {
			t.Errorf("%s: spread %+v", m, p.Stat)
		}
		return Added(p)
	}
	fentry, kprobe, trap := get("fentry"), get("kprobe"), get("kprobe_trap")
	t.Logf("added per hit: fentry %.0f, kprobe %.0f, kprobe_trap %.0f instructions (uninstrumented %.0f)", fentry, kprobe, trap, rep.Baseline.Median)
	// A trampoline's path calls __bpf_prog_enter_recur, the program and the exit: tens of
	// instructions at least.
	if fentry < 30 {
		t.Errorf("fentry adds %.0f instructions: too few for a trampoline, the program and its helpers", fentry)
	}
	if kprobe <= fentry || trap <= fentry {
		t.Errorf("kprobe %.0f, kprobe_trap %.0f instructions per hit: want both longer than fentry's %.0f", kprobe, trap, fentry)
	}
}

func TestCostVerdict(t *testing.T) {
	for _, c := range []struct {
		claim, ours float64
		want        string
	}{{10, 9, "holds"}, {10, 5, "off by 2.0x (overstated)"}, {1, 3, "off by 3.0x (understated)"}, {10, 0, "not measured"}} {
		if _, v := verdict(c.claim, c.ours); v != c.want {
			t.Errorf("verdict(%v, %v) = %q, want %q", c.claim, c.ours, v, c.want)
		}
	}
}

// TestUpdateCostDoc: the generated section is appended once, then replaced in place, and the
// text around it is kept.
func TestUpdateCostDoc(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cost.md")
	if err := os.WriteFile(p, []byte("# head\n\nnative text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &CostReport{Kernel: "6.12", Arch: "amd64", CostResult: wire.CostResult{Counter: "rdtsc",
		Paths: []wire.CostPath{{Mech: "fentry", Progs: 1, Base: 1000, Stat: wire.CostStat{Median: 1131}}}}}
	for range 2 {
		if err := UpdateCostDoc(p, []*CostReport{r}); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(p)
	s := string(b)
	if strings.Count(s, CostDocBegin) != 1 || strings.Count(s, CostDocEnd) != 1 || !strings.HasPrefix(s, "# head\n\nnative text\n\n"+CostDocBegin) {
		t.Fatalf("section not replaced in place:\n%s", s)
	}
	if !strings.Contains(s, "| fentry | 1 | 131 (") {
		t.Errorf("the fentry row does not show 131 added instructions:\n%s", s)
	}
	if err := os.WriteFile(p, []byte(CostDocEnd+"\n"+CostDocBegin+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := UpdateCostDoc(p, []*CostReport{r}); err == nil {
		t.Error("damaged markers: no error")
	}
}
