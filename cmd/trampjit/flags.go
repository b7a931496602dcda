package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/trampjit/trampjit/internal/suggest"
)

// newFlags makes a subcommand's flag set that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("trampjit "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses and maps flag's errors to trampjit's exit statuses: -h prints the flags
// and exits 0; a bad flag is one line naming it (with the nearest real flag), exit 2, not the
// whole flag list.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := quietParse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// parseInterleaved parses flags that may stand before, between or after positional
// arguments (files), and returns the positional ones in order.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		if err := quietParse(fs, args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) > 0 {
			pos = append(pos, args[0])
			args = args[1:]
		}
	}
	return pos, nil
}

// quietParse runs fs.Parse without letting package flag print; it prints the flags itself
// for -h and turns any other failure into one usage error.
func quietParse(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	if err == nil {
		return nil
	}
	if errors.Is(err, flag.ErrHelp) {
		if usage != nil {
			usage()
		} else {
			fmt.Fprintf(out, "usage: %s [flags]\n", fs.Name())
			fs.PrintDefaults()
		}
		return errHelp
	}
	msg := err.Error()
	const undefined = "flag provided but not defined: -"
	if strings.HasPrefix(msg, undefined) {
		name := strings.TrimPrefix(msg, undefined)
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		msg = fmt.Sprintf("unknown flag --%s%s", strings.TrimLeft(name, "-"), suggest.Hint(strings.TrimLeft(name, "-"), names, "--"))
	}
	return usageErr("%s; run '%s -h' for its flags", msg, fs.Name())
}

// refuseFlags fails when any of the named flags was set: they do not apply with why.
func refuseFlags(fs *flag.FlagSet, why string, names ...string) error {
	var set []string
	fs.Visit(func(f *flag.Flag) {
		for _, n := range names {
			if f.Name == n {
				set = append(set, "--"+n)
			}
		}
	})
	switch len(set) {
	case 0:
		return nil
	case 1:
		return usageErr("%s does not apply %s", set[0], why)
	}
	return usageErr("%s do not apply %s", strings.Join(set, ", "), why)
}

// output is the --format and --color choice shared by every command.
type output struct {
	format string
	color  string
	cmd    string // "trampjit gen", for errors
}

func commandOf(o *output) string {
	if o.cmd == "" {
		return "this command"
	}
	return o.cmd
}

// orList joins formats as "text, json or html".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

func (o *output) register(fs *flag.FlagSet, formats string) {
	o.cmd = fs.Name()
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
	return usageErr("unknown --format %q: %s makes %s", o.format, commandOf(o), orList(allowed))
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
	f, ok := w.(interface{ Fd() uintptr })
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
