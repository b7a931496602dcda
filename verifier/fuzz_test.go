package verifier_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/kernel/wire"
	"github.com/trampjit/trampjit/verifier"
)

// The differential run (`make verifier-fuzz`): generated programs go to the model and, in
// batches (one guest boot each), to the real verifier; every disagreement is reported,
// grouped by kind. Kinds explained in KNOWN_GAPS.md (fuzzKnown) are counted apart; any
// other fails the test.

var (
	fuzzCount   = flag.Int("fuzzcount", 0, "programs for TestDifferentialFuzz (0: skip; it boots a kernel)")
	fuzzProfile = flag.String("fuzzprofile", "6.12-amd64", "kernel profile for TestDifferentialFuzz")
	fuzzSeed    = flag.Int64("fuzzseed", 1, "generator seed")
	fuzzBatch   = flag.Int("fuzzbatch", 1000, "programs per guest boot")
	fuzzOut     = flag.String("fuzzout", "", "write every disagreeing program and both answers to this file")
)

// fuzzKnown are disagreement kinds (matched against the kind string) that KNOWN_GAPS.md
// lists and explains.
var fuzzKnown = []*regexp.Regexp{
	// KNOWN_GAPS.md "Differential runs": same-register comparisons on 6.12
	regexp.MustCompile(`^first line: kernel "REG INVARIANTS VIOLATION`),
}

func TestDifferentialFuzz(t *testing.T) {
	if *fuzzCount <= 0 {
		t.Skip("differential run against a guest kernel: set -fuzzcount N (make verifier-fuzz)")
	}
	env := profileEnv(t, *fuzzProfile)
	gen := verifier.NewGenerator(env, *fuzzSeed)
	type disagreement struct {
		prog    verifier.Program
		model   verifier.Result
		kern    kernel.VerifyResult
		kind    string
		explain bool
	}
	var all []disagreement
	agree, total, kernelAccepted := 0, 0, 0
	for done := 0; done < *fuzzCount; {
		n := min(*fuzzBatch, *fuzzCount-done)
		progs := make([]verifier.Program, n)
		wps := make([]wire.VerifyProgram, n)
		for i := range progs {
			progs[i] = gen.Program(fmt.Sprintf("g%d", done+i))
			wp, err := wireFromJSON(progs[i])
			if err != nil {
				t.Fatalf("%s: %v", progs[i].Name, err)
			}
			wps[i] = wp
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		res, err := kernel.Verify(ctx, kernel.VerifyOptions{Kernel: string(env.Kernel), Arch: string(env.Arch), Programs: wps, Progress: os.Stderr})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.Stage == "guest" || r.Stage == "agent" || r.Stage == "request" {
				t.Logf("%s: not verified (%s): %s", progs[i].Name, r.Stage, r.Error)
				continue
			}
			total++
			if r.Accepted {
				kernelAccepted++
			}
			got := verifier.Check(progs[i], env)
			kind := fuzzKind(r, got)
			if kind == "" {
				agree++
				continue
			}
			d := disagreement{prog: progs[i], model: got, kern: r, kind: kind}
			for _, re := range fuzzKnown {
				if re.MatchString(kind) {
					d.explain = true
				}
			}
			all = append(all, d)
		}
		done += n
	}
	byKind := map[string][]int{}
	explained, unexplained := 0, 0
	for i, d := range all {
		byKind[d.kind] = append(byKind[d.kind], i)
		if d.explain {
			explained++
		} else {
			unexplained++
		}
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return len(byKind[kinds[i]]) > len(byKind[kinds[j]]) })
	var report strings.Builder
	fmt.Fprintf(&report, "%s: %d programs verified (%d accepted by the kernel), %d agree, %d disagree (%d explained in KNOWN_GAPS.md, %d unexplained)\n",
		*fuzzProfile, total, kernelAccepted, agree, len(all), explained, unexplained)
	for _, k := range kinds {
		d := all[byKind[k][0]]
		mark := "UNEXPLAINED"
		if d.explain {
			mark = "known"
		}
		fmt.Fprintf(&report, "  %5d  %s  %s  (e.g. %s %s)\n", len(byKind[k]), mark, k, d.prog.Name, d.prog.Section)
	}
	t.Log("\n" + report.String())
	if *fuzzOut != "" {
		var b strings.Builder
		b.WriteString(report.String())
		for _, k := range kinds {
			for _, i := range byKind[k][:min(3, len(byKind[k]))] {
				d := all[i]
				fmt.Fprintf(&b, "\n== %s %s  [%s]\nkernel: accepted=%v %s %q\nmodel:  accepted=%v %s %q\n", d.prog.Name, d.prog.Section, k,
					d.kern.Accepted, d.kern.Errno, d.kern.Error, d.model.Accepted, d.model.Errno, d.model.Error)
				for _, ins := range d.prog.Instructions {
					fmt.Fprintf(&b, "    %v\n", ins)
				}
				fmt.Fprintf(&b, "kernel log:\n    %s\n", strings.Join(d.kern.Log, "\n    "))
			}
		}
		if err := os.WriteFile(*fuzzOut, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if unexplained > 0 {
		t.Errorf("%d disagreements not explained in KNOWN_GAPS.md", unexplained)
	}
}

// fuzzKind classifies a disagreement ("" when model and kernel agree): the verdicts, the
// last lines and, for rejected programs, the first message lines, numbers set aside.
func fuzzKind(k kernel.VerifyResult, m verifier.Result) string {
	switch {
	case k.Accepted && m.Accepted:
		return ""
	case k.Accepted:
		return "kernel accepts, model rejects: " + NormalizeLine(m.Error)
	case m.Accepted:
		return "kernel rejects, model accepts: " + NormalizeLine(k.Error)
	case NormalizeLine(k.Error) != NormalizeLine(m.Error):
		return fmt.Sprintf("message: kernel %q, model %q", NormalizeLine(k.Error), NormalizeLine(m.Error))
	}
	if kf, mf := firstMessage(k.Log), firstMessage(m.Log); kf != "" && NormalizeLine(kf) != NormalizeLine(mf) {
		return fmt.Sprintf("first line: kernel %q, model %q", NormalizeLine(kf), NormalizeLine(mf))
	}
	return ""
}
