package kernel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/trampjit/trampjit/kernel/vm"
	"github.com/trampjit/trampjit/kernel/wire"
)

// ErrHostNotPermitted is returned by CaptureHost when the running kernel refuses BPF to
// this process (EPERM: not root, missing CAP_BPF/CAP_PERFMON, or a sandbox): callers skip.
var ErrHostNotPermitted = errors.New("the running kernel does not permit BPF here (EPERM)")

// CaptureHost runs the agent on the running kernel instead of a guest (it needs root). The
// report's Kernel names the running kernel; its Kernel.Kernel is the profile given.
func CaptureHost(ctx context.Context, profile string, cases []Case, progress io.Writer) (*CaptureReport, error) {
	if progress == nil {
		progress = io.Discard
	}
	dir, err := os.MkdirTemp("", "trampjit-host-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	agent, err := vm.BuildAgent(ctx, runtime.GOARCH, dir)
	if err != nil {
		return nil, err
	}
	req := wire.Request{Kernel: profile, Arch: runtime.GOARCH, Info: true, Cases: cases}
	rj, _ := json.Marshal(req)
	reqPath := filepath.Join(dir, "request.json")
	if err := os.WriteFile(reqPath, rj, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, agent, "-request", reqPath)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	rep := &CaptureReport{}
	results := map[string]wire.CaptureResult{}
	var fatal string
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		f, ok, err := wire.Decode(sc.Text())
		if !ok {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("host agent output: %w", err)
		}
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
		case wire.KindFatal:
			_ = json.Unmarshal(f.JSON, &fatal)
		case wire.KindLog:
			var s string
			_ = json.Unmarshal(f.JSON, &s)
			fmt.Fprintf(progress, "host: agent: %s\n", s)
		}
	}
	if fatal != "" {
		if strings.Contains(fatal, "operation not permitted") || strings.Contains(fatal, "EPERM") {
			return rep, fmt.Errorf("%w: %s", ErrHostNotPermitted, fatal)
		}
		return rep, fmt.Errorf("host agent: %s", fatal)
	}
	if runErr != nil {
		return rep, fmt.Errorf("host agent: %v: %s", runErr, strings.TrimSpace(stderr.String()))
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
