package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/trampjit/trampjit/kernel"
)

// diffJSON is `trampjit diff --format json`.
type diffJSON struct {
	Corpus  string              `json:"corpus"`
	Cases   []kernel.DiffResult `json:"cases"`
	Images  int                 `json:"images"`    // cases where the kernel built an image
	Same    int                 `json:"identical"` // of those, byte-identical
	Refused int                 `json:"refused"`   // cases the kernel refused
	Agreed  int                 `json:"refused_same_reason"`
	Unmod   int                 `json:"unmodelled"`
}

func runDiff(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("diff", stderr)
	var dir string
	var all bool
	var out output
	fs.StringVar(&dir, "corpus", "", "kernel corpus directory (testdata/kernel/<kernel>-<arch>)")
	fs.BoolVar(&all, "all", false, "list every case, not only the ones that differ")
	out.register(fs, "text or json")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := out.check("text", "json"); err != nil {
		return err
	}
	if dir == "" {
		return usageErr("need --corpus DIR")
	}
	if out.format == "json" {
		if err := refuseFlags(fs, "with --format json (JSON lists every case)", "all"); err != nil {
			return err
		}
	}
	cases, err := kernel.ReadCorpus(dir)
	if err != nil {
		return err
	}
	res := diffJSON{Corpus: dir}
	p := palette(out.colorful(stdout))
	for i := range cases {
		c := &cases[i]
		d := kernel.Diff(c)
		res.Cases = append(res.Cases, d)
		if c.Error == "" {
			res.Images++
			if d.Verdict == kernel.Match {
				res.Same++
			}
		} else {
			res.Refused++
			switch d.Verdict {
			case kernel.Match:
				res.Agreed++
			case kernel.Unmodelled:
				res.Unmod++
			}
		}
		if out.format == "json" || (d.Verdict == kernel.Match && !all) {
			continue
		}
		verdict := p.green(d.Verdict)
		if d.Verdict != kernel.Match && d.Verdict != kernel.Unmodelled {
			verdict = p.red(d.Verdict)
		}
		fmt.Fprintf(stdout, "%-55s %s", d.ID, verdict)
		if d.Verdict == kernel.Differ && d.Model != "" {
			fmt.Fprintf(stdout, " at %#x\n    model:  %s\n    kernel: %s", d.Offset, d.Model, d.Kernel)
		}
		if d.Note != "" {
			fmt.Fprintf(stdout, "\n    %s", p.dim(d.Note))
		}
		fmt.Fprintln(stdout)
	}
	if out.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "%d/%d byte-identical\n", res.Same, res.Images)
		fmt.Fprintf(stdout, "%d/%d refusals with the kernel's reason", res.Agreed, res.Refused-res.Unmod)
		if res.Unmod > 0 {
			fmt.Fprintf(stdout, " (and %d the model cannot predict: functions the kernel cannot patch)", res.Unmod)
		}
		fmt.Fprintln(stdout)
	}
	if res.Same != res.Images || res.Agreed != res.Refused-res.Unmod {
		return &exitError{code: exitDisagree, err: errReported}
	}
	return nil
}
