package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/verifier"
)

// verifyJSON is `trampjit verify --format json`, a public contract.
type verifyJSON struct {
	Programs []verifyProgJSON `json:"programs"`
}

type verifyProgJSON struct {
	Name     string   `json:"name"`
	Section  string   `json:"section"`
	File     string   `json:"file"`
	Accepted bool     `json:"accepted"`
	Error    string   `json:"error"`
	Errno    string   `json:"errno,omitempty"`
	Log      []string `json:"log"`
	Loads    []string `json:"loads"`
	Notes    []string `json:"notes,omitempty"`
}

func runVerify(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", stderr)
	var btfPath, kernel, arch string
	var showLog bool
	var out output
	fs.StringVar(&btfPath, "btf", "", "kernel BTF for attach targets and CO-RE (default /sys/kernel/btf/vmlinux)")
	fs.StringVar(&kernel, "kernel", "6.12", "kernel profile: 6.1 or 6.12")
	fs.StringVar(&arch, "arch", "amd64", "architecture: amd64 or arm64")
	fs.BoolVar(&showLog, "log", false, "print the whole verifier log of every program")
	out.register(fs, "text or json")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: trampjit verify [flags] PROG.o|PROGS.json ...")
		fs.PrintDefaults()
	}
	// Files may come before or after the flags.
	var files []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return parseFlags(fs, args)
		}
		args = fs.Args()
		if len(args) > 0 {
			files = append(files, args[0])
			args = args[1:]
		}
	}
	if err := out.check("text", "json"); err != nil {
		return err
	}
	if len(files) == 0 {
		return usageErr("no programs: give ELF objects (.o) or JSON instruction lists (.json)")
	}
	k, err := btfmodel.ParseKernel(kernel)
	if err != nil {
		return usageErr("--kernel: %v", err)
	}
	a, err := btfmodel.ParseArch(arch)
	if err != nil {
		return usageErr("--arch: %v", err)
	}
	if btfPath == "" {
		btfPath = "/sys/kernel/btf/vmlinux"
	}
	spec, err := btfmodel.LoadFile(btfPath, nil)
	if err != nil {
		return err
	}
	env := verifier.Env{Kernel: k, Arch: a, BTF: spec}
	var res verifyJSON
	for _, f := range files {
		progs, err := readPrograms(f, env)
		if err != nil {
			return err
		}
		for _, p := range progs {
			r := verifier.Check(p, env)
			j := verifyProgJSON{Name: p.Name, Section: p.Section, File: f, Accepted: r.Accepted, Error: r.Error,
				Errno: r.Errno, Log: r.Log, Loads: []string{}, Notes: r.Notes}
			if j.Log == nil {
				j.Log = []string{}
			}
			for _, l := range r.Loads {
				j.Loads = append(j.Loads, l.String())
			}
			res.Programs = append(res.Programs, j)
		}
	}
	if out.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	p := palette(out.colorful(stdout))
	rejected := 0
	for _, r := range res.Programs {
		verdict := p.green("accepted")
		if !r.Accepted {
			rejected++
			verdict = p.red("rejected")
			if r.Errno != "" {
				verdict += " (" + r.Errno + ")"
			}
		}
		fmt.Fprintf(stdout, "%s %s  %s\n", p.bold(r.Name), p.dim(r.Section), verdict)
		if !r.Accepted {
			msg := r.Error
			if msg == "" {
				msg = "(the kernel prints no message)"
			}
			fmt.Fprintf(stdout, "  %s\n", msg)
		}
		for _, l := range r.Loads {
			fmt.Fprintf(stdout, "  %s\n", l)
		}
		for _, n := range r.Notes {
			fmt.Fprintf(stdout, "  %s\n", p.dim("note: "+n))
		}
		if showLog {
			for _, l := range r.Log {
				fmt.Fprintf(stdout, "    %s\n", p.dim(l))
			}
		}
	}
	fmt.Fprintf(stdout, "%d programs: %d accepted, %d rejected\n", len(res.Programs), len(res.Programs)-rejected, rejected)
	return nil
}

// readPrograms reads an ELF object or a JSON instruction list.
func readPrograms(path string, env verifier.Env) ([]verifier.Program, error) {
	if strings.EqualFold(filepath.Ext(path), ".json") {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		progs, err := verifier.ParseJSON(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return progs, nil
	}
	progs, err := verifier.LoadELF(path, env.BTF)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return progs, nil
}
