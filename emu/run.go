package emu

import (
	"fmt"
	"sync"

	_ "github.com/trampjit/trampjit/amd64" // registers the x86_64 backend
	_ "github.com/trampjit/trampjit/arm64" // registers the arm64 backend
	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	_ "github.com/trampjit/trampjit/riscv64" // registers the riscv64 backend
)

// One engine per arch, shared by Run and RunImage.
var shared struct {
	sync.Mutex
	h map[btfmodel.Arch]*Harness
}

func harnessFor(a btfmodel.Arch) (*Harness, error) {
	if shared.h == nil {
		shared.h = map[btfmodel.Arch]*Harness{}
	}
	if h := shared.h[a]; h != nil {
		return h, nil
	}
	h, err := NewHarness(a)
	if err != nil {
		return nil, err
	}
	shared.h[a] = h
	return h, nil
}

// Addrs are the addresses a request's image runs at: its own, or the synthetic layout.
func Addrs(req *jit.Request) *jit.Addrs {
	if req.Addrs != nil {
		return req.Addrs
	}
	a := jit.Synthetic(req.Arch, req.Kernel, len(req.Progs))
	if req.StructOps != nil {
		a.Func, a.IP, a.IM = 0, 0, 0 // as jit.Resolve lays a struct_ops image out
	}
	return a
}

// Generate builds trampjit's image for req (jit.Generate, with the model it used).
func Generate(req *jit.Request) (*jit.Image, *btfmodel.FuncModel, error) {
	t, img, err := jit.Generate(req)
	if err != nil {
		return nil, nil, err
	}
	return img, t.Model, nil
}

// Run generates trampjit's image for req and calls it under the emulator (or natively,
// Options.Engine; a request without addrs then gets NativeAddrs), opts.Count times,
// checking every call against the oracle.
func Run(req *jit.Request, opts Options) (*Report, error) {
	if opts.Engine == EngineNative {
		if err := checkNative(nativeRequest(req)); err != nil {
			return nil, err
		}
		req = nativeRequest(req)
	}
	img, m, err := Generate(req)
	if err != nil {
		return nil, err
	}
	return run(req, m, img.Code, opts)
}

// RunImage calls the given image bytes, for example a kernel's own capture (a corpus
// case's image with its request, which carries the kernel's addresses).
func RunImage(req *jit.Request, code []byte, opts Options) (*Report, error) {
	if err := checkUntrusted(req, opts); err != nil {
		return nil, err
	}
	m, err := req.Model()
	if err != nil {
		return nil, err
	}
	return run(req, m, code, opts)
}

func run(req *jit.Request, m *btfmodel.FuncModel, code []byte, opts Options) (*Report, error) {
	if opts.Engine != "" && opts.Engine != EngineUnicorn && opts.Engine != EngineNative {
		return nil, fmt.Errorf("emu: engine %q: unicorn or native", opts.Engine)
	}
	shared.Lock()
	defer shared.Unlock()
	if opts.Engine == EngineNative {
		return runNative(req, m, code, opts)
	}
	h, err := harnessFor(req.Arch)
	if err != nil {
		return nil, err
	}
	l, err := h.Load(req, m, Addrs(req), code, opts)
	if err != nil {
		return nil, err
	}
	return l.Call(opts.Count)
}
