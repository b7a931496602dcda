package mutation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Target is one package to mutate: its directory (relative to the module root), the files
// to mutate (all non-test .go files but doc.go when empty; "-name" entries exclude files
// from that set instead) and the go test arguments that select its tests (-short, -run).
type Target struct {
	Dir   string
	Files []string
	Args  []string
}

// Outcome is what the tests said about one mutant.
type Outcome string

const (
	Killed     Outcome = "killed"
	Survived   Outcome = "survived"
	TimedOut   Outcome = "timed out"
	NoCompile  Outcome = "does not compile"
	Equivalent Outcome = "equivalent" // survived, and listed as equivalent with a reason
	Gone       Outcome = "gone"       // in a -rerun: the mutated line changed since
)

// Result is one mutant's outcome.
type Result struct {
	Mutant  Mutant
	Outcome Outcome
	Reason  string // the equivalence reason
	Elapsed time.Duration
}

// Options drive a run.
type Options struct {
	Root    string        // module root
	Seed    uint64        // sampling seed
	Cap     int           // mutants per package (after dropping those that do not compile)
	Timeout time.Duration // per mutant; 0 means 5x the baseline run plus 30s
	Equiv   map[string]string
	Log     io.Writer
	// Prev is a previous run's outcomes per package, in its order; when set, only its
	// survivors are run again.
	Prev map[string][]Prior
}

// Prior is one mutant's outcome in a previous run.
type Prior struct {
	ID      string  `json:"id"`
	Outcome Outcome `json:"outcome"`
}

// again orders muts as prev did, keeping the killed outcomes and dropping mutants prev did
// not try. A previous mutant no longer generated (its line moved) is reported missing.
func again(muts []Mutant, prev []Prior) ([]Mutant, map[string]Outcome) {
	byID := map[string]Mutant{}
	for _, m := range muts {
		byID[m.ID()] = m
	}
	kept := map[string]Outcome{}
	var out []Mutant
	for _, p := range prev {
		m, ok := byID[p.ID]
		if !ok {
			m, ok = moved(muts, p.ID)
		}
		if ok && m.ID() != p.ID && (p.Outcome == Killed || p.Outcome == TimedOut) {
			kept[m.ID()] = p.Outcome
		}
		if !ok {
			m = Mutant{File: p.ID, Desc: "no longer generated: the file changed"}
			kept[m.ID()] = Gone
		} else if m.ID() == p.ID && (p.Outcome == Killed || p.Outcome == TimedOut) {
			kept[p.ID] = p.Outcome
		}
		out = append(out, m)
	}
	return out, kept
}

// Sample lists a target's mutants in a seed-determined order.
func Sample(root string, t Target, seed uint64) ([]Mutant, map[string][]byte, error) {
	files, skip := t.Files, map[string]bool{}
	if len(files) > 0 && strings.HasPrefix(files[0], "-") {
		for _, f := range files {
			skip[strings.TrimPrefix(f, "-")] = true
		}
		files = nil
	}
	if len(files) == 0 {
		ents, err := os.ReadDir(filepath.Join(root, t.Dir))
		if err != nil {
			return nil, nil, err
		}
		for _, e := range ents {
			n := e.Name()
			if strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") && n != "doc.go" && !skip[n] {
				files = append(files, n)
			}
		}
	}
	sort.Strings(files)
	srcs := map[string][]byte{}
	var all []Mutant
	for _, f := range files {
		rel := filepath.Join(t.Dir, f)
		src, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return nil, nil, err
		}
		ms, err := Generate(rel, src)
		if err != nil {
			return nil, nil, err
		}
		srcs[rel] = src
		all = append(all, ms...)
	}
	r := rand.New(rand.NewPCG(seed, 0x6d7574))
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return all, srcs, nil
}

// Run mutates one target and returns the outcome of each mutant tried: up to Cap that
// compile.
func Run(ctx context.Context, t Target, o Options) ([]Result, error) {
	muts, srcs, err := Sample(o.Root, t, o.Seed)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "mutation-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	if out, outcome := goTest(ctx, o.Root, t, "", 30*time.Minute); outcome != Survived {
		return nil, fmt.Errorf("%s: the tests do not pass without mutation (%s):\n%s", t.Dir, outcome, tail(out))
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 5*time.Since(start) + 30*time.Second
	}
	fmt.Fprintf(o.Log, "== %s: %d mutants, baseline %s, timeout %s\n", t.Dir, len(muts), time.Since(start).Round(time.Second), timeout)
	var res []Result
	compiled := 0
	var prevOK map[string]Outcome
	if o.Prev != nil {
		// Re-run only what survived last time, in last time's order; what was killed stays
		// killed (tests are only added between runs).
		muts, prevOK = again(muts, o.Prev[t.Dir])
	}
	for i, m := range muts {
		if was, ok := prevOK[m.ID()]; ok {
			res = append(res, Result{Mutant: m, Outcome: was})
			compiled++
			continue
		}
		if compiled >= o.Cap {
			break
		}
		mutated := filepath.Join(tmp, fmt.Sprintf("m%d.go", i))
		if err := os.WriteFile(mutated, m.Apply(srcs[m.File]), 0o644); err != nil {
			return nil, err
		}
		ov := filepath.Join(tmp, "overlay.json")
		data, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(o.Root, m.File): mutated}})
		if err := os.WriteFile(ov, data, 0o644); err != nil {
			return nil, err
		}
		t0 := time.Now()
		_, outcome := goTest(ctx, o.Root, t, ov, timeout)
		os.Remove(mutated)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		r := Result{Mutant: m, Outcome: outcome, Elapsed: time.Since(t0)}
		if outcome == NoCompile {
			continue
		}
		compiled++
		if why, ok := o.Equiv[m.ID()]; ok && outcome == Survived {
			r.Outcome, r.Reason = Equivalent, why
		}
		fmt.Fprintf(o.Log, "%3d %-10s %s (%s)\n", compiled, r.Outcome, m.ID(), r.Elapsed.Round(100*time.Millisecond))
		res = append(res, r)
	}
	return res, nil
}

// goTest runs the target's tests, with the overlay when ov is not empty, on one core.
func goTest(ctx context.Context, root string, t Target, ov string, timeout time.Duration) ([]byte, Outcome) {
	args := []string{"test", "-count=1", "-vet=off", "-p", "1", "-timeout", timeout.String()}
	if ov != "" {
		args = append(args, "-overlay", ov)
	}
	args = append(args, t.Args...)
	args = append(args, "./"+t.Dir+"/")
	ctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1", "GOFLAGS=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Kill the whole group: go test's child test binary must not outlive a timeout.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	b := out.Bytes()
	switch {
	case err == nil:
		return b, Survived
	case bytes.Contains(b, []byte("[build failed]")) || bytes.Contains(b, []byte("[setup failed]")):
		return b, NoCompile
	case ctx.Err() != nil || bytes.Contains(b, []byte("panic: test timed out")):
		return b, TimedOut
	}
	return b, Killed
}

func tail(b []byte) string {
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// moved finds the mutant id named before its file gained or lost a few lines: the same
// file, column and change within five lines.
func moved(muts []Mutant, id string) (Mutant, bool) {
	var file, desc string
	var line, col int
	head, rest, ok := strings.Cut(id, ": ")
	if !ok {
		return Mutant{}, false
	}
	desc = rest
	parts := strings.Split(head, ":")
	if len(parts) != 3 {
		return Mutant{}, false
	}
	file = parts[0]
	fmt.Sscan(parts[1], &line)
	fmt.Sscan(parts[2], &col)
	best, found := Mutant{}, false
	for _, m := range muts {
		if m.File == file && m.Col == col && m.Desc == desc && m.Line-line <= 5 && line-m.Line <= 5 {
			if !found || abs(m.Line-line) < abs(best.Line-line) {
				best, found = m, true
			}
		}
	}
	return best, found
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
