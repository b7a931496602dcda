package jit

import (
	"errors"
	"fmt"
	"sync"

	"github.com/trampjit/trampjit/btfmodel"
)

// The architecture packages register themselves (amd64 and arm64 call Register from init), so
// that packages above them can generate for any architecture by name without a switch of
// their own: import them for effect, as database/sql drivers are.
var (
	regMu    sync.RWMutex
	backends = map[btfmodel.Arch]Backend{}
	disasms  = map[btfmodel.Arch]Disassembler{}
)

// Register makes an architecture's backend and disassembler available to Lookup.
func Register(b Backend, d Disassembler) {
	regMu.Lock()
	defer regMu.Unlock()
	backends[b.Arch()] = b
	disasms[b.Arch()] = d
}

// Lookup returns an architecture's backend and disassembler.
func Lookup(arch btfmodel.Arch) (Backend, Disassembler, error) {
	regMu.RLock()
	defer regMu.RUnlock()
	b, ok := backends[arch]
	if !ok {
		return nil, nil, fmt.Errorf("no backend for %q is linked in (import trampjit's amd64 and arm64 packages)", arch)
	}
	return b, disasms[arch], nil
}

// Generate takes a request through everything the kernel does before it writes an image:
// the function model, the load-time attach checks, flags and program order, and the arch JIT.
func Generate(req *Request) (*Tramp, *Image, error) {
	be, _, err := Lookup(req.Arch)
	if err != nil {
		return nil, nil, err
	}
	m, err := req.Model() // for struct_ops: the member's model, or the kernel's refusal
	if err != nil {
		return nil, nil, err
	}
	if req.StructOps == nil {
		if err := CheckAttach(req, m, nil); err != nil {
			return nil, nil, err
		}
	}
	if err := refusedBeforeLinkLimit(be, req, m); err != nil {
		return nil, nil, err
	}
	tr, err := Resolve(req, m)
	if err != nil {
		return nil, nil, err
	}
	img, err := be.Generate(tr)
	if err != nil {
		return nil, nil, err
	}
	return tr, img, nil
}

// refusedBeforeLinkLimit is the kernel's answer to a set over BPF_MAX_TRAMP_LINKS when an
// earlier attach fails: the kernel links the programs one at a time and each link rebuilds
// the image with the programs so far, so the arch can refuse an image (one over its page:
// arm64 6.1 -EFBIG, x86 -EFAULT) before the link limit's -E2BIG. It is the first attach whose
// image the arch refuses, or nil when the largest set within the limit builds.
func refusedBeforeLinkLimit(be Backend, req *Request, m *btfmodel.FuncModel) error {
	max := btfmodel.LimitsFor(req.Arch, req.Kernel).MaxTrampLinks
	if req.StructOps != nil || TrampNodes(req.Progs) <= max {
		return nil
	}
	build := func(n int) error {
		r := *req
		r.Progs = req.Progs[:n]
		if req.Addrs != nil && len(req.Addrs.Progs) > n {
			a := *req.Addrs
			a.Progs = a.Progs[:n]
			r.Addrs = &a
		}
		tr, err := Resolve(&r, m)
		if err == nil {
			_, err = be.Generate(tr)
		}
		return err
	}
	hi := len(req.Progs)
	for TrampNodes(req.Progs[:hi]) > max {
		hi--
	}
	err := build(hi)
	if err == nil {
		return nil
	}
	// The image grows with every program: the first refused attach is the least n refused.
	for lo := 1; lo < hi; {
		mid := (lo + hi) / 2
		if e := build(mid); e != nil {
			hi, err = mid, e
		} else {
			lo = mid + 1
		}
	}
	errno := "an error"
	var e Errno
	if errors.As(err, &e) {
		errno = e.Name()
	}
	return fmt.Errorf("prog#%d (%s): the kernel refuses it at attach with %s, building the trampoline of programs 1-%d (before the link limit): %w",
		hi, req.Progs[hi-1].Kind, errno, hi, err)
}
