package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel"
)

// parseWords reads "1,2,0x10,-1" as 64-bit words (negative numbers in two's complement).
func parseWords(flagName, s string) ([]uint64, error) {
	if s == "" {
		return nil, nil
	}
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if u, err := strconv.ParseUint(f, 0, 64); err == nil {
			out = append(out, u)
			continue
		}
		i, err := strconv.ParseInt(f, 0, 64)
		if err != nil {
			return nil, usageErr("--%s: %q is not a 64-bit integer", flagName, f)
		}
		out = append(out, uint64(i))
	}
	return out, nil
}

func runRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	var rf requestFlags
	var out output
	var argList, retList, missList, engine, corpus, caseID string
	var count int
	var clobber, trace bool
	rf.register(fs)
	out.register(fs, "text or json")
	fs.StringVar(&argList, "args", "", "argument words, one per ctx slot (a 16-byte struct takes two), e.g. 1,2,3")
	fs.StringVar(&retList, "ret-values", "", "what each fmod_ret program returns, in attach order, e.g. 0,7")
	fs.StringVar(&missList, "miss", "", "attach indexes (0-based) whose enter helper reports a recursion miss")
	fs.StringVar(&engine, "engine", "unicorn", "execution engine: unicorn, or native (x86_64 hosts: trampjit's image at user-space addresses, on the CPU)")
	fs.IntVar(&count, "count", 1, "calls; above 1 the caller loops inside the generated code and every call is checked")
	fs.BoolVar(&clobber, "clobber", false, "stubs clobber every caller-saved register")
	fs.BoolVar(&trace, "trace", false, "check every call with Go hooks (slower, same verdicts)")
	fs.StringVar(&corpus, "corpus", "", "run the kernel's own image of a corpus case: the corpus directory")
	fs.StringVar(&caseID, "case", "", "with --corpus: the case id")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := out.check("text", "json"); err != nil {
		return err
	}
	switch engine {
	case emu.EngineUnicorn:
	case emu.EngineNative:
		// Native runs x86-64 code on the host CPU (in a forked child, emu/native): our
		// images at user-space addresses (emu.NativeAddrs), never a kernel capture.
		if !emu.NativeSupported {
			return &exitError{code: 2, err: fmt.Errorf("--engine native needs an x86_64 Linux host (this is %s/%s); use --engine unicorn", runtime.GOOS, runtime.GOARCH)}
		}
		if trace {
			return usageErr("--trace is unicorn's (Go hooks); a failing native run is replayed traced under unicorn anyway")
		}
	default:
		return usageErr("--engine must be unicorn or native, not %q", engine)
	}
	if count < 1 {
		return usageErr("--count must be at least 1")
	}
	opts := emu.Options{Count: count, Clobber: clobber, Trace: trace, Engine: engine}
	var err error
	if opts.Args, err = parseWords("args", argList); err != nil {
		return err
	}
	if opts.RetValues, err = parseWords("ret-values", retList); err != nil {
		return err
	}
	miss, err := parseWords("miss", missList)
	if err != nil {
		return err
	}
	for _, m := range miss {
		opts.Miss = append(opts.Miss, int(m))
	}
	var rep *emu.Report
	if corpus != "" {
		if caseID == "" {
			return usageErr("--corpus needs --case ID")
		}
		rep, err = runCorpusCase(corpus, caseID, opts)
	} else {
		var req *jit.Request
		if req, err = rf.build(fs); err != nil {
			return err
		}
		rep, err = emu.Run(req, opts)
	}
	if err != nil {
		return err
	}
	if out.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else if err := rep.WriteText(stdout); err != nil {
		return err
	}
	if !rep.OK {
		return &exitError{code: 1, err: errReported}
	}
	return nil
}

// runCorpusCase runs the kernel's own bytes of a corpus case at their kernel addresses.
func runCorpusCase(dir, id string, opts emu.Options) (*emu.Report, error) {
	cases, err := kernel.ReadCorpus(dir)
	if err != nil {
		return nil, err
	}
	for _, c := range cases {
		if c.ID != id {
			continue
		}
		if c.Image == "" {
			return nil, fmt.Errorf("case %s has no image: the kernel refused it (%s)", id, firstOf(c.KernelMessage(), c.Errno, c.Error))
		}
		code, err := hex.DecodeString(c.Image)
		if err != nil {
			return nil, fmt.Errorf("case %s: image: %w", id, err)
		}
		return emu.RunImage(c.Request, code, opts)
	}
	return nil, fmt.Errorf("no case %q in %s", id, dir)
}
