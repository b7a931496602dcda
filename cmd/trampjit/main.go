// Command trampjit generates, runs and checks Linux BPF trampolines: see README.md.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/trampjit/trampjit/internal/suggest"
)

// The exit statuses of every command (README "Exit status").
const (
	exitFailed      = 1   // bad input, or a check failed
	exitUsage       = 2   // bad flags or arguments
	exitDisagree    = 3   // the model and a real kernel disagree
	exitInterrupted = 130 // SIGINT or SIGTERM: stopped, nothing half-written
)

// exitError carries an exit status other than exitFailed.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{
	"model":   {"show a function's trampoline model and whether fentry/fexit/fmod_ret/lsm can attach", runModel},
	"gen":     {"generate a trampoline image (listing, json, hex, bin)", runGen},
	"run":     {"run a trampoline under Unicorn and check what it does", runRun},
	"verify":  {"check BPF programs with the verifier model", runVerify},
	"kernel":  {"capture trampolines, runs and verdicts from real kernels under qemu", runKernel},
	"diff":    {"compare a kernel corpus with the model, or two kernels' corpora", runDiff},
	"compare": {"one request across architectures and profiles, side by side", runCompare},
	"frame":   {"draw the stack frame of a trampoline image (text, json, svg, html)", runFrame},
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: trampjit <command> [flags]\n\ncommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-7s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nRun 'trampjit <command> -h' for a command's flags.\n")
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(stderr, "trampjit: unknown command %q%s; run 'trampjit -h' for the commands\n", args[0], suggest.Hint(args[0], names, ""))
		return exitUsage
	}
	out := &stdoutChecker{w: stdout}
	err := cmd.run(args[1:], out, stderr)
	if err == nil && out.err != nil {
		err = fmt.Errorf("write standard output: %w", out.err)
	}
	if err == nil || errors.Is(err, errHelp) {
		return 0
	}
	code := exitFailed
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if !errors.Is(err, errReported) {
		fmt.Fprintf(stderr, "trampjit %s: %v\n", args[0], err)
	}
	return code
}

// errHelp means -h was given and usage printed; errReported means the command already
// printed its own error (for example as JSON) and only the exit status is left.
var (
	errHelp     = errors.New("help requested")
	errReported = errors.New("already reported")
)
