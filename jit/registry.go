package jit

import (
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
