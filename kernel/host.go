package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"

	"github.com/trampjit/trampjit/kernel/vm"
	"github.com/trampjit/trampjit/kernel/wire"
)

// CaptureHost runs the agent on the running kernel instead of a guest (it needs root). The
// report's Kernel names the running kernel; its Kernel.Kernel is the profile given.
func CaptureHost(ctx context.Context, profile string, cases []Case, progress io.Writer) (*CaptureReport, error) {
	rep := &CaptureReport{}
	results := map[string]wire.CaptureResult{}
	req := wire.Request{Kernel: profile, Arch: runtime.GOARCH, Info: true, Cases: cases}
	err := runHostAgent(ctx, req, progress, func(f wire.Frame) {
		switch f.Kind {
		case wire.KindInfo:
			var in wire.Info
			if json.Unmarshal(f.JSON, &in) == nil {
				rep.Info = &in
			}
		case wire.KindCapture:
			var c wire.CaptureResult
			if json.Unmarshal(f.JSON, &c) == nil {
				results[c.ID] = c
			}
		}
	})
	if err != nil {
		return rep, err
	}
	rep.Kernel = &vm.KernelImage{Kernel: profile, Arch: runtime.GOARCH}
	if rep.Info != nil {
		rep.Kernel.Release = rep.Info.Release
	}
	eperm := 0
	for _, c := range cases {
		cc := toCorpus(rep.Kernel, rep.Info, c, results[c.ID], "vmlinux.btf.xz")
		if cc.Errno == "EPERM" {
			eperm++
		}
		rep.Cases = append(rep.Cases, cc)
	}
	if eperm > 0 && eperm == len(cases) {
		return rep, fmt.Errorf("%w: every case was refused, e.g. %s", ErrHostNotPermitted, rep.Cases[0].Error)
	}
	return rep, nil
}
