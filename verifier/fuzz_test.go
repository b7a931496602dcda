package verifier_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/btf"

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
	fuzzJSON    = flag.String("fuzzjson", "", "write every disagreement, grouped by kind, with programs and both answers, as JSON to this file")
	fuzzCache   = flag.String("fuzzcache", "", "keep the kernel's answers in this directory, by program: a program answered before is not booted again")
)

// fuzzKnown are disagreement kinds (matched against the kind string) that KNOWN_GAPS.md
// lists and explains.
var fuzzKnown = []*regexp.Regexp{
	// KNOWN_GAPS.md "Differential runs": same-register comparisons on 6.12
	regexp.MustCompile(`^first line: kernel "REG INVARIANTS VIOLATION`),
	// KNOWN_GAPS.md "Differential fuzz (subprogram and kfunc shapes)", table "Left":
	// 7.2 signed bounds at exit (mul, <<, branch refinement) where the model has none
	regexp.MustCompile(`^message: kernel "At program exit the register R# has s(min|max)=[^"]*", model "At program exit the register R# has unknown scalar value `),
	// 7.2 folds a pointer's constant offset into its var_off
	regexp.MustCompile(`^message: kernel "variable ctx access var_off=\(#x0; #x[0-9a-f]+\) disallowed", model "variable ctx access var_off=\(#x0; #xff\) disallowed"$`),
	// a bpf_loop callback calling a subprogram: the model's infinite-loop check fires
	regexp.MustCompile(`^kernel accepts, model rejects: old state: frame1: `),
	// 7.2's silent 17-frame refusal where the kernel walks (g888)
	regexp.MustCompile(`^message: kernel "invalid bpf_context access off=# size=#", model ""$`),
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
		shape   string
	}
	var all []disagreement
	agree, total, kernelAccepted := 0, 0, 0
	shapes := map[string]*fuzzShapeCount{}
	var kernelTime, modelTime time.Duration
	booted, cached := 0, 0
	cache, err := openFuzzCache(*fuzzCache, *fuzzProfile)
	if err != nil {
		t.Fatal(err)
	}
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
		res := make([]kernel.VerifyResult, n)
		var ask []int // not in the cache
		for i := range wps {
			if r, ok := cache.get(wps[i]); ok {
				res[i] = r
				cached++
			} else {
				ask = append(ask, i)
			}
		}
		if len(ask) > 0 {
			batch := make([]wire.VerifyProgram, len(ask))
			for j, i := range ask {
				batch[j] = wps[i]
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
			start := time.Now()
			got, err := kernel.Verify(ctx, kernel.VerifyOptions{Kernel: string(env.Kernel), Arch: string(env.Arch), Programs: batch, Progress: os.Stderr})
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			kernelTime += took
			booted += len(ask)
			t.Logf("%s: batch of %d in %v (boot included): %.1f programs/s", *fuzzProfile, len(ask), took.Round(time.Second), float64(len(ask))/took.Seconds())
			for j, i := range ask {
				res[i] = got[j]
				cache.put(wps[i], got[j])
			}
			if err := cache.save(); err != nil {
				t.Fatal(err)
			}
		}
		for i, r := range res {
			if r.Stage == "guest" || r.Stage == "agent" || r.Stage == "request" {
				t.Logf("%s: not verified (%s): %s", progs[i].Name, r.Stage, r.Error)
				continue
			}
			total++
			shape := fuzzShape(progs[i])
			sc := shapes[shape]
			if sc == nil {
				sc = &fuzzShapeCount{}
				shapes[shape] = sc
			}
			sc.Total++
			if r.Accepted {
				kernelAccepted++
				sc.KernelAccepted++
			}
			mstart := time.Now()
			got := verifier.Check(progs[i], env)
			modelTime += time.Since(mstart)
			kind := fuzzKind(r, got)
			if kind == "" {
				agree++
				sc.Agree++
				continue
			}
			d := disagreement{prog: progs[i], model: got, kern: r, kind: kind, shape: shape}
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
	fmt.Fprintf(&report, "  kernel: %v for %d programs (%.1f/s, boots included; %d more answered from the cache); model: %v (%.0f/s)\n",
		kernelTime.Round(time.Second), booted, float64(booted)/max(kernelTime.Seconds(), 1e-9), cached, modelTime.Round(time.Millisecond), float64(total)/modelTime.Seconds())
	shapeNames := make([]string, 0, len(shapes))
	for k := range shapes {
		shapeNames = append(shapeNames, k)
	}
	sort.Strings(shapeNames)
	for _, k := range shapeNames {
		c := shapes[k]
		fmt.Fprintf(&report, "  shape %-9s %5d programs, %5d accepted by the kernel, %5d agree\n", k, c.Total, c.KernelAccepted, c.Agree)
	}
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
	if *fuzzJSON != "" {
		out := fuzzReport{Profile: *fuzzProfile, Seed: *fuzzSeed, Programs: total, KernelAccepted: kernelAccepted,
			Agree: agree, Disagree: len(all), Explained: explained, Shapes: shapes}
		for _, k := range kinds {
			fk := fuzzKindReport{Kind: k, Count: len(byKind[k]), Explained: all[byKind[k][0]].explain}
			for _, i := range byKind[k] {
				d := all[i]
				var text []string
				for _, ins := range d.prog.Instructions {
					text = append(text, fmt.Sprint(ins))
				}
				fk.Programs = append(fk.Programs, fuzzProgram{Name: d.prog.Name, Section: d.prog.Section, Shape: d.shape,
					Insns: text, Kernel: fuzzAnswer{Accepted: d.kern.Accepted, Errno: d.kern.Errno, Stage: d.kern.Stage,
						Error: d.kern.Error, First: fuzzFirst(d.kern.Log), Log: d.kern.Log},
					Model: fuzzAnswer{Accepted: d.model.Accepted, Errno: d.model.Errno, Error: d.model.Error,
						First: fuzzFirst(d.model.Log), Log: d.model.Log}})
			}
			out.Kinds = append(out.Kinds, fk)
		}
		data, err := json.MarshalIndent(out, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*fuzzJSON, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if unexplained > 0 {
		t.Errorf("%d disagreements not explained in KNOWN_GAPS.md", unexplained)
	}
}

// The -fuzzjson file: every disagreement, grouped by kind.
type (
	fuzzReport struct {
		Profile        string                     `json:"profile"`
		Seed           int64                      `json:"seed"`
		Programs       int                        `json:"programs"`
		KernelAccepted int                        `json:"kernel_accepted"`
		Agree          int                        `json:"agree"`
		Disagree       int                        `json:"disagree"`
		Explained      int                        `json:"explained"`
		Shapes         map[string]*fuzzShapeCount `json:"shapes"`
		Kinds          []fuzzKindReport           `json:"kinds"`
	}
	fuzzShapeCount struct {
		Total          int `json:"total"`
		KernelAccepted int `json:"kernel_accepted"`
		Agree          int `json:"agree"`
	}
	fuzzKindReport struct {
		Kind      string        `json:"kind"`
		Count     int           `json:"count"`
		Explained bool          `json:"explained"`
		Programs  []fuzzProgram `json:"programs"`
	}
	fuzzProgram struct {
		Name    string     `json:"name"`
		Section string     `json:"section"`
		Shape   string     `json:"shape"`
		Insns   []string   `json:"insns"`
		Kernel  fuzzAnswer `json:"kernel"`
		Model   fuzzAnswer `json:"model"`
	}
	fuzzAnswer struct {
		Accepted bool     `json:"accepted"`
		Errno    string   `json:"errno,omitempty"`
		Stage    string   `json:"stage,omitempty"`
		Error    string   `json:"error,omitempty"`
		First    string   `json:"first,omitempty"`
		Log      []string `json:"log,omitempty"`
	}
)

// fuzzShape names a generated program's shape by its calls: "callback" (a BPF_PSEUDO_FUNC
// ld_imm64), "kfunc", "global" (a global function, from BTF func_info), "subprog"
// (bpf-to-bpf) or "plain".
func fuzzShape(p verifier.Program) string {
	shape := "plain"
	for i := range p.Instructions {
		ins := &p.Instructions[i]
		if fn := btf.FuncMetadata(ins); i > 0 && fn != nil && fn.Linkage == btf.GlobalFunc && shape != "kfunc" {
			shape = "global"
		}
		switch {
		case ins.IsLoadOfFunctionPointer():
			return "callback"
		case ins.IsKfuncCall():
			shape = "kfunc"
		case ins.IsFunctionCall() && shape == "plain":
			shape = "subprog"
		}
	}
	return shape
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
	if kf, mf := fuzzFirst(k.Log), fuzzFirst(m.Log); kf != "" && NormalizeLine(kf) != NormalizeLine(mf) {
		return fmt.Sprintf("first line: kernel %q, model %q", NormalizeLine(kf), NormalizeLine(mf))
	}
	return ""
}

// fuzzAnswers keeps the kernel's answers by program (a hash of its wire form, which the
// kernel sees whole), so that a run after a model change boots only for new programs.
type fuzzAnswers struct {
	path    string
	answers map[string]kernel.VerifyResult
	dirty   bool
}

func openFuzzCache(dir, profile string) (*fuzzAnswers, error) {
	c := &fuzzAnswers{answers: map[string]kernel.VerifyResult{}}
	if dir == "" {
		return c, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c.path = filepath.Join(dir, "kernel-"+profile+".json")
	data, err := os.ReadFile(c.path)
	if os.IsNotExist(err) {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	return c, json.Unmarshal(data, &c.answers)
}

func fuzzKey(wp wire.VerifyProgram) string {
	data, _ := json.Marshal(wp)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func (c *fuzzAnswers) get(wp wire.VerifyProgram) (kernel.VerifyResult, bool) {
	r, ok := c.answers[fuzzKey(wp)]
	return r, ok
}

func (c *fuzzAnswers) put(wp wire.VerifyProgram, r kernel.VerifyResult) {
	if c.path == "" || r.Stage == "guest" || r.Stage == "agent" || r.Stage == "request" {
		return
	}
	c.answers[fuzzKey(wp)] = r
	c.dirty = true
}

func (c *fuzzAnswers) save() error {
	if c.path == "" || !c.dirty {
		return nil
	}
	data, err := json.Marshal(c.answers)
	if err != nil {
		return err
	}
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	c.dirty = false
	return os.Rename(tmp, c.path)
}

// emptyState is an instruction's state line with nothing to show ("4:"), which 7.2 prints
// after a global function's call; firstMessage (truthutil_test.go) would take it for a
// message.
var emptyState = regexp.MustCompile(`^\d+:$`)

// fuzzFirst is firstMessage without empty state lines.
func fuzzFirst(log []string) string {
	var out []string
	for _, l := range log {
		if !emptyState.MatchString(strings.TrimSpace(l)) {
			out = append(out, l)
		}
	}
	return firstMessage(out)
}
