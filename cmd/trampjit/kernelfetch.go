package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/kernel"
)

func runKernelFetch(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("kernel fetch", stderr)
	p := profileFlags{fetchable: true}
	var all bool
	var out output
	p.register(fs.StringVar)
	fs.BoolVar(&all, "all", false, "fetch "+strings.Join(kernelStrings(), " and ")+" for amd64 and arm64")
	out.register(fs, "text or json")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := out.check("text", "json"); err != nil {
		return err
	}
	targets := [][2]string{{p.kernel, p.arch}}
	if all {
		targets = nil
		for _, k := range btfmodel.Kernels {
			for _, a := range btfmodel.Arches {
				targets = append(targets, [2]string{string(k), string(a)})
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
