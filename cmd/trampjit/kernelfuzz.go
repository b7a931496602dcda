package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/trampjit/trampjit/kernel"
)

// runKernelFuzz is `trampjit kernel fuzz`: random attach requests drawn from a profile's
// BTF, captured in guests and compared with the model (docs/image-fuzz.md).
func runKernelFuzz(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("kernel fuzz", stderr)
	p := profileFlags{}
	var count, batch int
	var seed uint64
	var out, corpus, format, profile string
	var noMin, quiet bool
	var rediff, resume, again string
	p.register(fs.StringVar)
	fs.StringVar(&profile, "profile", "", "the same as --kernel")
	fs.IntVar(&count, "count", 100, "requests to draw")
	fs.Uint64Var(&seed, "seed", 1, "seed: the same seed draws the same requests")
	fs.IntVar(&batch, "batch", 250, "requests per guest boot")
	fs.StringVar(&out, "out", "", "write results.jsonl, summary.json, minimised.jsonl (corpus lines) and minimised-cases.json (a --cases file for kernel capture --merge) here")
	fs.StringVar(&corpus, "corpus", "", "the profile's corpus (its vmlinux.btf.xz and kernel.json; default testdata/kernel/<kernel>-<arch>)")
	fs.StringVar(&format, "format", "text", "output: text or json (the summary with every disagreement)")
	fs.BoolVar(&noMin, "no-minimise", false, "report disagreements as drawn, without re-capturing simpler forms")
	fs.StringVar(&rediff, "rediff", "", "compare an earlier campaign's DIR/results.jsonl with the model again, without booting (its profile, unless --kernel, --arch or --corpus say it)")
	fs.StringVar(&resume, "resume", "", "continue the interrupted campaign in DIR: the requests its results.jsonl holds are not captured again, but for those a guest died on (the same --kernel, --arch and --seed)")
	fs.StringVar(&again, "again", "", "with --resume: also capture these requests again (IDs, comma-separated; after a fix to the loader or the guest), in their places")
	fs.BoolVar(&quiet, "quiet", false, "no per-case progress, only the batch lines")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: trampjit kernel fuzz --count N --kernel K --arch A --seed S [--out DIR] [flags]\n\n"+
			"Draws N random attach requests from the kernel's own BTF (functions by prototype shape, weighted\n"+
			"toward shapes the corpus catalogue lacks; program mixes up to the link limit, cookies, func_ip,\n"+
			"sleepable, fsession, BPF-program targets; some refused on purpose), captures them in guests,\n"+
			"compares each with the model and minimises every disagreement.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if profile != "" {
		p.kernel = profile
	}
	if rediff != "" {
		// The campaign says which profile it is; a flag that says otherwise is refused
		// below, by the corpus's kernel.json.
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["kernel"] && !set["profile"] && !set["arch"] && !set["corpus"] {
			k, a, err := kernel.CampaignProfile(rediff)
			if err != nil {
				return fmt.Errorf("kernel fuzz: rediff: %w", err)
			}
			p.kernel, p.arch = k, a
		}
	}
	if err := p.check(); err != nil {
		return err
	}
	if count < 1 || count > kernel.MaxCases {
		return usageErr("--count %d: want 1 to %d", count, kernel.MaxCases)
	}
	if format != "text" && format != "json" {
		return usageErr("unknown --format %q (want text or json)", format)
	}
	if resume != "" {
		if out != "" && out != resume {
			return usageErr("--resume %s with --out %s: the campaign resumed is written where it was", resume, out)
		}
		out = resume
	}
	var againIDs []string
	if again != "" {
		if resume == "" {
			return usageErr("--again needs --resume: it captures again requests of a campaign's results")
		}
		againIDs = strings.Split(again, ",")
	}
	if corpus == "" {
		corpus = filepath.Join("testdata", "kernel", p.kernel+"-"+p.arch)
	}
	if _, err := os.Stat(filepath.Join(corpus, "vmlinux.btf.xz")); err != nil {
		return fmt.Errorf("kernel fuzz: %w (the requests are drawn from the corpus's BTF; give --corpus)", err)
	}
	ctx, stop := interruptible()
	defer stop()
	var progress io.Writer = stderr
	if quiet {
		progress = batchLines{stderr}
	}
	var rep *kernel.FuzzReport
	var err error
	if rediff != "" {
		rep, err = kernel.RediffFuzz(rediff, corpus)
	} else {
		rep, err = kernel.ImageFuzz(ctx, kernel.FuzzOptions{Kernel: p.kernel, Arch: p.arch, Count: count, Seed: seed,
			Corpus: corpus, Batch: batch, Minimise: !noMin, OutDir: out, Resume: resume != "", Again: againIDs, Progress: progress})
	}
	if err != nil {
		return asInterrupt(ctx, err)
	}
	if format == "json" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		rep.Summary(stdout)
	}
	if n := len(rep.Found); n > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d requests disagree with the kernel", n, rep.Requests)}
	}
	return nil
}

// batchLines passes on the fuzzer's own lines and drops the capture's per-case ones.
type batchLines struct{ w io.Writer }

func (b batchLines) Write(p []byte) (int, error) {
	if !containsCaseLine(p) {
		b.w.Write(p)
	}
	return len(p), nil
}

func containsCaseLine(p []byte) bool { return strings.Contains(string(p), ": case ") }
