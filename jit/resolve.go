package jit

import (
	"fmt"

	"github.com/trampjit/trampjit/btfmodel"
)

// DeriveFlags computes the BPF_TRAMP_F_* flags bpf_trampoline_update (kernel/bpf/trampoline.c)
// sets for a trampoline function: CALL_ORIG|SKIP_FRAME when any fexit or fmod_ret program is
// attached (LSM programs count as fmod_ret, or fexit on a void hook), RESTORE_REGS otherwise,
// and IP_ARG when any program calls bpf_get_func_ip.
func DeriveFlags(progs []Prog) Flags {
	var f Flags
	calls := false
	for _, p := range progs {
		if p.Kind != Fentry {
			calls = true
		}
		if p.FuncIP {
			f |= FlagIPArg
		}
	}
	if calls {
		f |= FlagCallOrig | FlagSkipFrame
	} else {
		f |= FlagRestoreRegs
	}
	return f
}

// trampKind maps an attach type to the trampoline list it joins (bpf_attach_type_to_tramp):
// an LSM program modifies the return value unless its hook returns void.
func trampKind(k Kind, m *btfmodel.FuncModel) Kind {
	if k == LSM {
		if m.IsVoid() {
			return Fexit
		}
		return ModRet
	}
	return k
}

// Resolve turns a validated request and its function model into a Tramp: flags, program lists
// in emission order, and every address (the request's, or the synthetic layout's).
func Resolve(req *Request, m *btfmodel.FuncModel) (*Tramp, error) {
	// Every request, from flags, a file or a corpus, passes the same validation before
	// anything indexes its lists.
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if n, max := len(req.Progs), btfmodel.LimitsFor(req.Arch, req.Kernel).MaxTrampLinks; n > max {
		// bpf_trampoline_link_prog counts links over all kinds.
		return nil, Reject(E2BIG, "%d programs on one trampoline, at most %d (BPF_MAX_TRAMP_LINKS)", n, max)
	}
	t := &Tramp{Arch: req.Arch, Kernel: req.Kernel, Model: m, Features: req.Features, ProgTarget: req.Target == "bpf"}
	if req.Flags != nil {
		t.Flags = Flags(*req.Flags)
	} else {
		t.Flags = DeriveFlags(req.Progs)
	}
	addrs := req.Addrs
	if addrs == nil {
		addrs = Synthetic(req.Arch, req.Kernel, len(req.Progs))
	}
	t.Image, t.Func, t.IP, t.IM = uint64(addrs.Image), uint64(addrs.Func), uint64(addrs.IP), uint64(addrs.IM)
	t.Helpers = make(map[string]uint64, len(addrs.Helpers))
	for name, a := range addrs.Helpers {
		t.Helpers[name] = uint64(a)
	}
	// Within a kind the newest link is emitted first: bpf_trampoline_link_prog adds at the head
	// of the kind's hlist and bpf_trampoline_get_progs walks it from the head.
	for i := len(req.Progs) - 1; i >= 0; i-- {
		p := req.Progs[i]
		ref := ProgRef{Prog: p, Index: i + 1, Addr: uint64(addrs.Progs[i].Prog), BPFFunc: uint64(addrs.Progs[i].BPFFunc)}
		switch trampKind(p.Kind, m) {
		case Fentry:
			t.Fentry = append(t.Fentry, ref)
		case Fexit:
			t.Fexit = append(t.Fexit, ref)
		case ModRet:
			t.ModRet = append(t.ModRet, ref)
		default:
			return nil, fmt.Errorf("progs[%d]: unknown kind %q", i, p.Kind)
		}
	}
	return t, nil
}
