package kernel

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel/vm"
	"github.com/trampjit/trampjit/kernel/wire"
)

// CorpusCase is one line of testdata/kernel/<kernel>-<arch>/cases.jsonl (issue 3): the gen
// request that reproduces the kernel's image, with the real addresses, plus what the
// kernel produced or said.
type CorpusCase struct {
	ID      string       `json:"id"`
	Request *jit.Request `json:"request"`
	Image   string       `json:"image,omitempty"` // hex of the kernel's code bytes
	Error   string       `json:"error,omitempty"` // the kernel's refusal (load or attach)
	Errno   string       `json:"errno,omitempty"`
	Stage   string       `json:"stage,omitempty"` // load | attach | locate | read | guest
	Log     string       `json:"log,omitempty"`   // verifier log of a refused load
	Run     *wire.Run    `json:"run,omitempty"`
	CPU     *CPU         `json:"cpu,omitempty"`
	Locate  string       `json:"locate,omitempty"` // how the image was found
	Checks  []string     `json:"checks,omitempty"` // cross-checks, for people
	// StructOps is where a struct_ops member's image was found and its map's layout.
	StructOps *wire.StructOpsResult `json:"struct_ops,omitempty"`
}

// CPU is the guest CPU state the image may depend on.
type CPU struct {
	Release         string            `json:"release"`
	Vulnerabilities map[string]string `json:"vulnerabilities,omitempty"`
}

// features derives the request's CPU/config profile from the kernel config and guest CPU:
// x86 IBT needs CONFIG_X86_KERNEL_IBT and the CPU's ibt flag, arm64 BTI needs
// CONFIG_ARM64_BTI_KERNEL and bti; the return thunk is observed in the image itself.
func features(k *vm.KernelImage, info *wire.Info, rethunk bool) jit.Features {
	var f jit.Features
	if info == nil {
		return f
	}
	has := func(flag string) bool {
		for _, x := range info.CPUFlags {
			if x == flag {
				return true
			}
		}
		return false
	}
	switch k.Arch {
	case "amd64":
		f.IBT = k.ConfigValue("CONFIG_X86_KERNEL_IBT") == "y" && has("ibt")
		f.CallDepth = strings.Contains(info.Vulnerabilities["retbleed"], "Stuffing")
		f.Rethunk = rethunk
	case "arm64":
		f.IBT = k.ConfigValue("CONFIG_ARM64_BTI_KERNEL") == "y" && has("bti")
	case "riscv64":
		f.Zbb = k.ConfigValue("CONFIG_RISCV_ISA_ZBB") == "y" && has("zbb") // rvzbb_enabled
	}
	return f
}

// toCorpus turns an agent result into a corpus line.
func toCorpus(k *vm.KernelImage, info *wire.Info, c wire.Case, r wire.CaptureResult, btfPath string) CorpusCase {
	req := &jit.Request{Arch: btfmodel.Arch(k.Arch), Kernel: btfmodel.Kernel(k.Kernel), BTF: btfPath,
		Func: c.Func, Progs: c.Progs}
	if c.StructOps != nil {
		req.Func, req.StructOps = "", &jit.StructOps{Ops: c.StructOps.Ops, Member: c.StructOps.Member}
	}
	if c.Target == "bpf" {
		// The traced function is the agent's own tj_argsN: N u64 arguments, an int return.
		req.BTF, req.Func, req.Target = "", "", "bpf"
		req.Proto = targetProto(c.Func)
	}
	out := CorpusCase{ID: c.ID, Request: req, Error: r.Error, Errno: r.Errno, Stage: r.Stage, Log: r.Log,
		Locate: r.Locate, Checks: r.Checks, Run: r.Run, StructOps: r.StructOps}
	if info != nil {
		out.CPU = &CPU{Release: info.Release, Vulnerabilities: info.Vulnerabilities}
	}
	if len(r.Code) == 0 {
		return out
	}
	out.Image = hex.EncodeToString(r.Code)
	req.Features = features(k, info, usesSymbol(r, "__x86_return_thunk"))
	if c.StructOps != nil && k.ConfigValue("CONFIG_CFI_CLANG") == "y" {
		req.Features.CFI = "kcfi" // Debian builds with GCC: never so far
	}
	a := &jit.Addrs{Image: jit.Addr(r.Image), Func: jit.Addr(r.Addr), IP: jit.Addr(r.IP), IM: jit.Addr(r.IM),
		Helpers: map[string]jit.Addr{}}
	for _, p := range r.Progs {
		a.Progs = append(a.Progs, jit.ProgAddrs{Prog: jit.Addr(p.Prog), BPFFunc: jit.Addr(p.BPFFunc)})
	}
	for n, v := range r.Symbols {
		if !strings.HasPrefix(n, "bpf_func#") {
			a.Helpers[n] = jit.Addr(v)
		}
	}
	req.Addrs = a
	return out
}

// usesSymbol reports whether the image calls or jumps to name (Symbols also lists helpers
// the image does not use).
func usesSymbol(r wire.CaptureResult, name string) bool {
	for _, t := range r.Targets {
		if t == name {
			return true
		}
	}
	return false
}

// targetProto is the C prototype of a BPF-program target tj_argsN (kernel/agent/target.go).
func targetProto(fn string) string {
	n := 0
	fmt.Sscanf(strings.TrimPrefix(fn, "tj_args"), "%d", &n)
	var params []string
	for i := 0; i < n; i++ {
		params = append(params, fmt.Sprintf("unsigned long long a%d", i))
	}
	if len(params) == 0 {
		params = []string{"void"}
	}
	return fmt.Sprintf("int %s(%s)", fn, strings.Join(params, ", "))
}

// CorpusPin is the Debian build a corpus was captured from (its kernel.json), for
// CaptureOptions.Pin: a re-capture boots that build while the archive still has it. A corpus
// without kernel.json gives the zero Pin (the newest build).
func CorpusPin(dir string) (vm.Pin, error) {
	b, err := os.ReadFile(filepath.Join(dir, "kernel.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return vm.Pin{}, nil
	}
	if err != nil {
		return vm.Pin{}, err
	}
	var p vm.Pin
	if err := json.Unmarshal(b, &p); err != nil {
		return vm.Pin{}, fmt.Errorf("%s/kernel.json: %w", dir, err)
	}
	if (p.Package == "") != (p.Version == "") {
		return vm.Pin{}, fmt.Errorf("%s/kernel.json: package %q with version %q: want both or neither", dir, p.Package, p.Version)
	}
	return p, nil
}
