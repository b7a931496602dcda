// Command mutation runs trampjit's mutation tester over its packages (see package mutation).
//
//	go run ./internal/mutation/cmd [-seed N] [-cap N] [-equiv docs/mutation.md] [-o FILE] [PKG ...]
//
// PKG is a directory, optionally with files (emu:oracle.go,check.go) or files left out
// (verifier:-gen.go). Without PKG it runs the
// default set. It prints one line per mutant and, at the end (or into -o), the figures.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/trampjit/trampjit/internal/mutation"
)

// defaults are the packages the mutation run covers; in emu only the oracle and its checks
// are mutated, and the Unicorn tests run against them (the native engine tests compare
// engines, not the oracle).
// The verifier's program generator (gen.go, gen_extra.go) makes inputs for the
// differential run; it is not the model, and no property fixes its output.
var defaults = []string{"btfmodel", "amd64", "arm64", "riscv64", "verifier:-gen.go,-gen_extra.go", "emu:oracle.go,check.go"}

// extraArgs select tests: -short keeps the verifier's long random runs short (no test in
// these packages boots a guest unless given -update or -fuzzcount).
var extraArgs = map[string][]string{
	"verifier": {"-short"},
	"emu":      {"-short", "-skip", "Native"},
}

func main() {
	seed := flag.Uint64("seed", 1, "sampling seed")
	capN := flag.Int("cap", 50, "mutants per package (that compile)")
	equiv := flag.String("equiv", "", "markdown file listing equivalent mutants (\"- `ID` — reason\")")
	out := flag.String("o", "", "write the figures (markdown) to this file as well")
	jsonOut := flag.String("json", "", "write every mutant's outcome (JSON) to this file, for -rerun")
	rerun := flag.String("rerun", "", "a previous -json file: run its survivors again, keep its kills")
	timeout := flag.Duration("timeout", 0, "per-mutant timeout (default: 5x the baseline + 30s)")
	var skips skipFlag
	flag.Var(&skips, "skip", "PKG=REGEXP: go test -skip for that package's runs (tests another engineer's unfinished work fails at baseline); repeatable")
	flag.Parse()
	root, err := os.Getwd()
	if err != nil {
		fatal(err)
	}
	if _, err := os.Stat("go.mod"); err != nil {
		fatal(errors.New("run from the module root (go.mod not found)"))
	}
	eq := map[string]string{}
	if *equiv != "" {
		if eq, err = mutation.ReadEquivalents(*equiv); err != nil {
			fatal(err)
		}
	}
	if *capN <= 0 {
		fatal(fmt.Errorf("-cap %d: want a positive number of mutants", *capN))
	}
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		pkgs = defaults
	}
	var prev map[string][]mutation.Prior
	if *rerun != "" {
		data, err := os.ReadFile(*rerun)
		if err != nil {
			fatal(err)
		}
		if err := json.Unmarshal(data, &prev); err != nil {
			fatal(fmt.Errorf("%s: %v", *rerun, err))
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	o := mutation.Options{Root: root, Seed: *seed, Cap: *capN, Timeout: *timeout, Equiv: eq, Log: os.Stdout, Prev: prev}
	var tallies []mutation.Tally
	results := map[string][]mutation.Result{}
	start := time.Now()
	for _, p := range pkgs {
		dir, files, _ := strings.Cut(p, ":")
		t := mutation.Target{Dir: strings.TrimSuffix(dir, "/"), Args: withSkip(extraArgs[dir], skips[dir])}
		if files != "" {
			t.Files = strings.Split(files, ",")
		}
		rs, err := mutation.Run(ctx, t, o)
		if err != nil {
			fatal(err)
		}
		results[t.Dir] = rs
		tallies = append(tallies, mutation.Count(t.Dir, rs))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, cap %d per package, %s\n\n", *seed, *capN, time.Since(start).Round(time.Second))
	mutation.WriteMarkdown(&b, tallies, results)
	fmt.Print("\n" + b.String())
	if *jsonOut != "" {
		all := map[string][]mutation.Prior{}
		for dir, rs := range results {
			for _, r := range rs {
				o := r.Outcome
				if o == mutation.Equivalent {
					o = mutation.Survived
				}
				all[dir] = append(all[dir], mutation.Prior{ID: r.Mutant.ID(), Outcome: o})
			}
		}
		data, _ := json.MarshalIndent(all, "", " ")
		if err := os.WriteFile(*jsonOut, append(data, '\n'), 0o644); err != nil {
			fatal(err)
		}
	}
	if *out != "" {
		if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
			fatal(err)
		}
	}
}

// skipFlag maps a package directory to the tests left out of its runs.
type skipFlag map[string]string

func (s *skipFlag) String() string { return fmt.Sprint(map[string]string(*s)) }
func (s *skipFlag) Set(v string) error {
	dir, re, ok := strings.Cut(v, "=")
	if !ok || dir == "" || re == "" {
		return fmt.Errorf("%q: want PKG=REGEXP", v)
	}
	if *s == nil {
		*s = skipFlag{}
	}
	(*s)[dir] = re
	return nil
}

// withSkip adds -skip re to args; a package that already skips (emu) gets both, joined
// with | (go test matches them level by level, split at /).
func withSkip(args []string, re string) []string {
	if re == "" {
		return args
	}
	out := append([]string(nil), args...)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "-skip" {
			out[i+1] += "|" + re
			return out
		}
	}
	return append(out, "-skip", re)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "mutation:", err)
	os.Exit(1)
}
