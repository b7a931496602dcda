package main

import (
	"errors"
	"flag"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// newFlags makes a subcommand's flag set that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("trampjit "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses and maps flag's errors to trampjit's exit statuses.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return &exitError{code: 2, err: errReported}
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// output is the --format and --color choice shared by every command.
type output struct {
	format string
	color  string
}

func (o *output) register(fs *flag.FlagSet, formats string) {
	fs.StringVar(&o.format, "format", "text", "output format: "+formats)
	fs.StringVar(&o.color, "color", "auto", "color: auto, always or never")
}

func (o *output) check(allowed ...string) error {
	for _, a := range allowed {
		if o.format == a {
			switch o.color {
			case "auto", "always", "never":
				return nil
			}
			return usageErr("--color must be auto, always or never, not %q", o.color)
		}
	}
	return usageErr("unknown --format %q", o.format)
}

// colorful reports whether w should get ANSI colors: a terminal, and NO_COLOR unset.
func (o *output) colorful(w io.Writer) bool {
	switch o.color {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

// palette wraps text in ANSI colors, or not at all.
type palette bool

func (p palette) wrap(code, s string) string {
	if !p {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p palette) bold(s string) string  { return p.wrap("1", s) }
func (p palette) dim(s string) string   { return p.wrap("2", s) }
func (p palette) green(s string) string { return p.wrap("32", s) }
func (p palette) red(s string) string   { return p.wrap("31", s) }
func (p palette) cyan(s string) string  { return p.wrap("36", s) }
