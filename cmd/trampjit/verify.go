package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/verifier"
)

// verifyJSON is `trampjit verify --format json`, a public contract.
type verifyJSON struct {
	Programs []verifyProgJSON `json:"programs"`
	// Skipped are the programs of the objects that are not verified (kprobes, iterators,
	// ...), each with the reason.
	Skipped []skippedJSON `json:"skipped,omitempty"`
}

type skippedJSON struct {
	verifier.Skipped
	File string `json:"file"`
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
	// Kernel is the real verifier's answer, with --against-kernel.
	Kernel *kernelVerdict `json:"kernel,omitempty"`
}

// kernelVerdict is what the real kernel said, and whether the model agrees: same verdict,
// and the same last error line once instruction and register numbers are set aside.
type kernelVerdict struct {
	Accepted bool     `json:"accepted"`
	Error    string   `json:"error"`
	Errno    string   `json:"errno,omitempty"`
	Log      []string `json:"log,omitempty"`
	Agree    bool     `json:"agree"`
}

func runVerify(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", stderr)
	var btfPath, kernel, arch string
	var showLog, against bool
	var out output
	fs.StringVar(&btfPath, "btf", "", "kernel BTF for attach targets and CO-RE (default /sys/kernel/btf/vmlinux)")
	fs.StringVar(&kernel, "kernel", string(btfmodel.DefaultKernel), "kernel profile: "+btfmodel.KernelNames())
	fs.StringVar(&arch, "arch", "amd64", "architecture: amd64, arm64 or riscv64")
	fs.BoolVar(&showLog, "log", false, "print the whole verifier log of every program")
	fs.BoolVar(&against, "against-kernel", false, "also load the programs through the real kernel of the profile (qemu guest) and compare")
	out.register(fs, "text or json")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: trampjit verify [flags] PROG.o|PROGS.json ...")
		fs.PrintDefaults()
	}
	// Files may come before or after the flags.
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := out.check("text", "json"); err != nil {
		return err
	}
	if len(files) == 0 {
		return usageErr("no programs: give ELF objects (.o) or JSON instruction lists (.json)")
	}
	if out.format == "json" {
		if err := refuseFlags(fs, "with --format json (JSON always has the whole log)", "log"); err != nil {
			return err
		}
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
		progs, skipped, err := readPrograms(f, env)
		if err != nil {
			return err
		}
		for _, sk := range skipped {
			res.Skipped = append(res.Skipped, skippedJSON{Skipped: sk, File: f})
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
	disagree := 0
	if against {
		if err := compareWithKernel(files, spec, k, a, res.Programs, stderr); err != nil {
			return err
		}
		for _, r := range res.Programs {
			if r.Kernel != nil && !r.Kernel.Agree {
				disagree++
			}
		}
	}
	if out.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
		if disagree > 0 {
			return &exitError{code: exitDisagree, err: errReported}
		}
		return nil
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
		if kv := r.Kernel; kv != nil {
			said := "accepted"
			if !kv.Accepted {
				said = "rejected: " + firstOf(kv.Error, kv.Errno)
			}
			mark := p.green("kernel agrees")
			if !kv.Agree {
				mark = p.red("kernel disagrees")
			}
			fmt.Fprintf(stdout, "  %s (%s)\n", mark, said)
		}
	}
	for _, sk := range res.Skipped {
		fmt.Fprintf(stdout, "%s %s  %s\n", p.bold(sk.Name), p.dim(sk.Section), p.dim("skipped: "+sk.Reason))
	}
	fmt.Fprintf(stdout, "%d programs: %d accepted, %d rejected", len(res.Programs), len(res.Programs)-rejected, rejected)
	if len(res.Skipped) > 0 {
		fmt.Fprintf(stdout, ", %d skipped", len(res.Skipped))
	}
	fmt.Fprintln(stdout)
	if against {
		fmt.Fprintf(stdout, "%d/%d agree with the kernel\n", len(res.Programs)-disagree, len(res.Programs))
		if disagree > 0 {
			return &exitError{code: exitDisagree, err: errReported}
		}
	}
	return nil
}

// compareWithKernel loads the same programs through the profile's kernel and records, per
// program, what it said and whether the model agrees.
func compareWithKernel(files []string, spec *btf.Spec, k btfmodel.Kernel, a btfmodel.Arch, progs []verifyProgJSON, progress io.Writer) error {
	wp, err := kernelPrograms(files, spec, string(k)+"-"+string(a), io.Discard) // the model's skipped list says it already
	if err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	res, err := kernel.Verify(ctx, kernel.VerifyOptions{Kernel: string(k), Arch: string(a), Programs: wp, Progress: progress})
	if err != nil {
		return err
	}
	byName := map[string]kernel.VerifyResult{}
	for _, r := range res {
		byName[r.Name] = r
	}
	for i := range progs {
		r, ok := byName[progs[i].Name]
		if !ok {
			continue
		}
		if r.BTFDropped != "" {
			progs[i].Notes = append(progs[i].Notes, "kernel: the program's BTF was refused ("+r.BTFDropped+"); loaded without BTF, func and line info, as libbpf does")
		}
		progs[i].Kernel = &kernelVerdict{Accepted: r.Accepted, Error: r.Error, Errno: r.Errno, Log: r.Log,
			Agree: r.Accepted == progs[i].Accepted && verifier.NormalizeLine(r.Error) == verifier.NormalizeLine(progs[i].Error)}
	}
	return nil
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// readPrograms reads an ELF object or a JSON instruction list, and names the object's
// programs that are not verified.
func readPrograms(path string, env verifier.Env) ([]verifier.Program, []verifier.Skipped, error) {
	if strings.EqualFold(filepath.Ext(path), ".json") {
		data, err := readLimited(path, verifier.MaxJSONSize)
		if err != nil {
			return nil, nil, err
		}
		progs, err := verifier.ParseJSON(data)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		return progs, nil, nil
	}
	// .kconfig as the kernel backend fills it (the profile's config from the kernel
	// cache); without one its contents stay unknown to the model
	var o verifier.ELFOptions
	if v, cfg, err := kernel.KconfigFor(string(env.Kernel) + "-" + string(env.Arch)); err == nil {
		o = verifier.ELFOptions{Kconfig: cfg, Version: v}
	}
	progs, skipped, err := verifier.LoadELFWith(path, env.BTF, o)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return progs, skipped, nil
}
