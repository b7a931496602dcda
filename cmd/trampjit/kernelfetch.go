package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/kernel/vm"
)

func runKernelFetch(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("kernel fetch", stderr)
	p := profileFlags{fetchable: true}
	var all bool
	var debian, suite string
	var out output
	p.register(fs.StringVar)
	fs.BoolVar(&all, "all", false, "fetch "+strings.Join(kernelStrings(), " and ")+" on every architecture Debian ships each for (amd64, arm64; riscv64 from 6.12)")
	fs.StringVar(&debian, "debian", "", "fetch the newest build of this Debian package or glob (e.g. 'linux-image-7.3.*-cloud-amd64'), whatever its version; no profile need exist for it")
	fs.StringVar(&suite, "suite", "", "with --debian: the Debian suite to search (default: the machine's own release's backports)")
	out.register(fs, "text or json")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := out.check("text", "json"); err != nil {
		return err
	}
	if debian != "" {
		if err := refuseFlags(fs, "with --debian (the package names the kernel)", "kernel", "all"); err != nil {
			return err
		}
		return fetchDebian(debian, suite, p.arch, out, stdout, stderr)
	}
	if suite != "" {
		return usageErr("--suite applies with --debian only (a profile's suite is fixed)")
	}
	targets := [][2]string{{p.kernel, p.arch}}
	if all {
		targets = nil
		for _, k := range btfmodel.Kernels {
			for _, a := range btfmodel.Arches {
				if btfmodel.ProfileFor(k).Debian.Ships(a) { // bookworm (6.1) has no riscv64 port
					targets = append(targets, [2]string{string(k), string(a)})
				}
			}
		}
	} else if err := p.check(); err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	var got []any
	for _, t := range targets {
		k, err := kernel.Fetch(ctx, t[0], t[1], stderr)
		if err != nil {
			return asInterrupt(ctx, err)
		}
		got = append(got, k)
		if out.format == "text" {
			fmt.Fprintf(stdout, "%s-%s: %s %s (%s)\n  vmlinuz %s\n", t[0], t[1], k.Package, k.Version, k.Suite, k.Path)
		}
	}
	if out.format == "json" {
		return json.NewEncoder(stdout).Encode(got)
	}
	return nil
}

// fetchDebian is `kernel fetch --debian PACKAGE`: any Debian kernel, cached under
// kernels/debian/, printed with the capture command that boots it.
func fetchDebian(pkg, suite, arch string, out output, stdout, stderr io.Writer) error {
	a, err := btfmodel.ParseArch(arch)
	if err != nil {
		return usageErr("--arch: %v", err)
	}
	ctx, stop := interruptible()
	defer stop()
	k, err := vm.FetchDebian(ctx, suite, pkg, string(a), stderr)
	if err != nil {
		return asInterrupt(ctx, err)
	}
	if out.format == "json" {
		return json.NewEncoder(stdout).Encode([]any{k})
	}
	fmt.Fprintf(stdout, "%s %s (%s, %s): Linux %s\n  vmlinuz %s\n  config  %s\n", k.Package, k.Version, k.Suite, k.Arch, k.Release, k.Path, k.Config)
	if k.Note != "" {
		fmt.Fprintf(stdout, "  note    %s\n", k.Note)
	}
	fmt.Fprintf(stdout, "capture it with: trampjit kernel capture --vmlinuz %s --config %s\n", k.Path, k.Config)
	return nil
}
