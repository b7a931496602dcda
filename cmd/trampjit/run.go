package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
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

// maxCount bounds --count, so that a run ends in bounded time on either engine. Under
// unicorn the instruction budget is count times the per-call budget (100,000): a looping
// image at the bound runs 1e10 instructions, ~25 s at the ~400 M/s unicorn manages on a
// tight loop, and a correct 38-program image takes ~10 s (~10 k calls/s). Natively each
// call has its own budget and the child's deadline at the bound is 3.5 s.
const maxCount = 100000

// requestFlagNames are the flags that build a request (requestFlags.register).
func requestFlagNames() map[string]bool {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	var rf requestFlags
	rf.register(fs)
	names := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
	return names
}

func runRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	var rf requestFlags
	var out output
	var argList, retList, missList, engine, corpus, caseID string
	var count int
	var clobber, trace, untrusted bool
	rf.register(fs)
	out.register(fs, "text or json")
	fs.StringVar(&argList, "args", "", "argument words, one per ctx slot (a 16-byte struct takes two), e.g. 1,2,3")
	fs.StringVar(&retList, "ret-values", "", "what each fmod_ret program returns, in attach order, e.g. 0,7 (with --struct-ops: what the one program returns)")
	fs.StringVar(&missList, "miss", "", "attach indexes (0-based) whose enter helper reports a recursion miss")
	fs.StringVar(&engine, "engine", "unicorn", "execution engine: unicorn, or native (x86_64 hosts: trampjit's image at user-space addresses, on the CPU, in a confined child)")
	fs.IntVar(&count, "count", 1, fmt.Sprintf("calls (1..%d); above 1 the caller loops inside the generated code and every call is checked", maxCount))
	fs.BoolVar(&clobber, "clobber", false, "stubs clobber every caller-saved register")
	fs.BoolVar(&trace, "trace", false, "check every call with Go hooks (slower, same verdicts)")
	fs.StringVar(&corpus, "corpus", "", "run the kernel's own image of a corpus case: the corpus directory")
	fs.StringVar(&caseID, "case", "", "with --corpus: the case id")
	fs.BoolVar(&untrusted, "untrusted-native", false, "with --corpus and --engine native: run the case's bytes, which trampjit did not generate, on this CPU "+
		"(in a child with no descriptors, no capabilities, rlimits and a seccomp filter that refuses every system call; still foreign code on your CPU)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if corpus != "" {
		// The case carries its request: request flags would be silently ignored.
		var drop []string
		reqFlags := requestFlagNames()
		fs.Visit(func(f *flag.Flag) {
			if reqFlags[f.Name] {
				drop = append(drop, "--"+f.Name)
			}
		})
		if len(drop) > 0 {
			return usageErr("--corpus runs the case's own request; drop %s", strings.Join(drop, ", "))
		}
		if caseID == "" {
			return usageErr("--corpus needs --case ID")
		}
	} else if set["case"] {
		return usageErr("--case needs --corpus DIR")
	}
	if untrusted && (corpus == "" || engine != emu.EngineNative) {
		return usageErr("--untrusted-native applies to --corpus with --engine native only (trampjit's own images need no such flag)")
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
	if count < 1 || count > maxCount {
		return usageErr("--count must be 1..%d, not %d", maxCount, count)
	}
	opts := emu.Options{Count: count, Clobber: clobber, Trace: trace, Engine: engine, UntrustedNative: untrusted}
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
		rep, err = runCorpusCase(corpus, caseID, opts)
		if errors.Is(err, emu.ErrUntrustedNative) {
			return usageErr("%v", err)
		}
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
