package main

import (
	"errors"

	"github.com/cilium/ebpf/btf"
)

// funcByName finds a kernel function as the kernel and libbpf do (btf_find_by_name_kind):
// the FUNC of exactly that name, the lowest id of several. cilium/ebpf's TypeByName also
// matches CO-RE flavours (name___v2: 7.2 has scx_bpf_dsq_move_to_local___v2 beside
// scx_bpf_dsq_move_to_local) and then fails with "multiple matching types".
func funcByName(spec *btf.Spec, name string) (*btf.Func, error) {
	types, err := spec.AnyTypesByName(name)
	if errors.Is(err, btf.ErrNotFound) {
		return nil, btf.ErrNotFound // as TypeByName says it: "kfunc bpf_session_cookie: not found"
	}
	if err != nil {
		return nil, err
	}
	var best *btf.Func
	var bestID btf.TypeID
	for _, t := range types {
		f, ok := t.(*btf.Func)
		if !ok || f.Name != name {
			continue
		}
		id, err := spec.TypeID(f)
		if err != nil {
			return nil, err
		}
		if best == nil || id < bestID {
			best, bestID = f, id
		}
	}
	if best == nil {
		return nil, btf.ErrNotFound
	}
	return best, nil
}

// ciliumLookupFails reports whether cilium/ebpf's own lookup of a program's AttachTo
// (TypeByName) fails on fn with "multiple matching types", as it does where CO-RE flavours
// share fn's essential name: such a target is loaded with BPF_PROG_LOAD directly.
func ciliumLookupFails(spec *btf.Spec, fn string) bool {
	var f *btf.Func
	return spec != nil && errors.Is(spec.TypeByName(fn, &f), btf.ErrMultipleMatches)
}
