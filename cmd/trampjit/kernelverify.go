package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/kernel/wire"
	"github.com/trampjit/trampjit/verifier"
)

// bpfFRdonlyProg is BPF_F_RDONLY_PROG (include/uapi/linux/bpf.h): programs may only read.
const bpfFRdonlyProg = 1 << 7

// defaultBTF is the BTF of the kernel a profile boots: the corpus's copy when trampjit runs
// from its source tree, else the running kernel's.
func defaultBTF(k, arch string) string {
	p := filepath.Join("testdata", "kernel", k+"-"+arch, "vmlinux.btf.xz")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return "/sys/kernel/btf/vmlinux"
}

// kernelPrograms converts ELF objects and JSON instruction lists into the guest transport;
// the programs of an object it does not load (kprobes, iterators, ...) are named on notes.
func kernelPrograms(files []string, spec *btf.Spec, profile string, notes io.Writer) ([]wire.VerifyProgram, error) {
	var out []wire.VerifyProgram
	for _, f := range files {
		if strings.EqualFold(filepath.Ext(f), ".json") {
			data, err := kernel.ReadFileLimit(f, "JSON instruction list", kernel.MaxVerifyFileSize)
			if err != nil {
				return nil, err
			}
			progs, err := verifier.ParseJSON(data)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			for _, p := range progs {
				wp, err := kernel.ProgramForSection(p.Name, p.Section)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %w", f, p.Name, err)
				}
				wp.License = p.License
				for _, m := range p.Maps {
					vm := wire.VerifyMap{Name: m.Name, Type: m.Type, KeySize: m.KeySize, ValueSize: m.ValueSize, MaxEntries: m.MaxEntries}
					if m.ReadOnly {
						vm.Flags = bpfFRdonlyProg
					}
					wp.Maps = append(wp.Maps, vm)
				}
				if wp, err = kernel.ProgramFromInstructions(wp, p.Instructions); err != nil {
					return nil, fmt.Errorf("%s: %s: %w", f, p.Name, err)
				}
				out = append(out, wp)
			}
			continue
		}
		progs, skipped, err := kernel.ProgramsFromELFSkipped(f, kernel.ELFOptions{KernelBTF: spec, Profile: profile})
		if err != nil {
			return nil, err
		}
		for _, s := range skipped {
			fmt.Fprintf(notes, "%s: %s (%s) skipped: %s\n", f, s.Name, s.Section, s.Reason)
		}
		out = append(out, progs...)
	}
	return out, nil
}

// splitArgs separates file operands from flags, so files may stand anywhere.
func splitArgs(fs interface {
	Parse([]string) error
	Args() []string
}, args []string) ([]string, error) {
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return files, nil
		}
		files = append(files, args[0])
		args = args[1:]
	}
}

func runKernelVerify(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("kernel verify", stderr)
	var p profileFlags
	var btfPath string
	var level uint
	var host bool
	var out output
	p.register(fs.StringVar)
	fs.StringVar(&btfPath, "btf", "", "the guest kernel's BTF, for CO-RE (default: testdata/kernel/<kernel>-<arch>/vmlinux.btf.xz)")
	fs.UintVar(&level, "log-level", 1, "BPF_PROG_LOAD log level: 1, or 2 for every instruction's state")
	fs.BoolVar(&host, "host", false, "load on the running kernel instead of a guest (root; skips where the kernel refuses)")
	out.register(fs, "text or json")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: trampjit kernel verify PROG.o|PROGS.json ... [flags]\n\n"+
			"A JSON instruction list may hold %d MiB; a run at most %d programs of %d instructions\n"+
			"(BPF_COMPLEXITY_LIMIT_INSNS).\n\n%s\n", kernel.MaxVerifyFileSize>>20, kernel.MaxVerifyPrograms, kernel.MaxProgramInsns, kernelExitStatus)
		fs.PrintDefaults()
	}
	files, err := splitArgs(fs, args)
	if err != nil {
		return parseFlags(fs, args)
	}
	if err := out.check("text", "json"); err != nil {
		return err
	}
	if err := p.check(); err != nil {
		return err
	}
	if len(files) == 0 {
		return usageErr("no programs: give ELF objects (.o) or JSON instruction lists (.json)")
	}
	if btfPath == "" {
		btfPath = defaultBTF(p.kernel, p.arch)
	}
	spec, err := btfmodel.LoadFile(btfPath, nil)
	if err != nil {
		return err
	}
	progs, err := kernelPrograms(files, spec, p.kernel+"-"+p.arch, stderr)
	if err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	opts := kernel.VerifyOptions{Kernel: p.kernel, Arch: p.arch, Programs: progs, LogLevel: uint32(level), Progress: stderr}
	var res []kernel.VerifyResult
	if host {
		res, err = kernel.VerifyHost(ctx, opts)
		if errors.Is(err, kernel.ErrHostNotPermitted) {
			fmt.Fprintf(stderr, "trampjit kernel verify --host: skipped: %v\n", err)
			return nil
		}
	} else {
		res, err = kernel.Verify(ctx, opts)
	}
	if err != nil {
		return asInterrupt(ctx, err)
	}
	if out.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"programs": res})
	}
	pal := palette(out.colorful(stdout))
	for _, r := range res {
		if r.Accepted {
			fmt.Fprintf(stdout, "%s  %s\n", pal.bold(r.Name), pal.green("accepted"))
			continue
		}
		msg := r.Error
		if msg == "" {
			msg = "(the kernel printed no reason)"
		}
		fmt.Fprintf(stdout, "%s  %s (%s)\n  %s\n", pal.bold(r.Name), pal.red("rejected"), r.Errno, msg)
	}
	return nil
}
