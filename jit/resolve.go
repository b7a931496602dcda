package jit

import (
	"fmt"

	"github.com/trampjit/trampjit/btfmodel"
)

// DeriveFlags computes the BPF_TRAMP_F_* flags bpf_trampoline_update (kernel/bpf/trampoline.c)
// sets for a trampoline function on arch under kernel k: CALL_ORIG|SKIP_FRAME when the fexit
// or fmod_ret list is not empty (LSM programs count as fmod_ret, or fexit on a void hook; an
// fsession program has a node in the fexit list), RESTORE_REGS otherwise, and IP_ARG when
// any program calls bpf_get_func_ip. In jmp mode (btfmodel.CapX86JmpMode) the trampoline is
// entered by a jump, so there is no return address of the traced function to skip and
// SKIP_FRAME is cleared again.
func DeriveFlags(arch btfmodel.Arch, k btfmodel.Kernel, progs []Prog) Flags {
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
	switch {
	case !calls:
		f |= FlagRestoreRegs
	case JmpMode(arch, k):
		f |= FlagCallOrig
	default:
		f |= FlagCallOrig | FlagSkipFrame
	}
	return f
}

// JmpMode reports whether kernel k on arch enters a trampoline that calls the original by a
// jump (CONFIG_DYNAMIC_FTRACE_WITH_JMP, which only x86_64 selects).
func JmpMode(arch btfmodel.Arch, k btfmodel.Kernel) bool {
	return arch == btfmodel.AMD64 && k.Has(btfmodel.CapX86JmpMode)
}

// trampKind maps an attach type to the trampoline list it joins (bpf_attach_type_to_tramp):
// an LSM program modifies the return value unless its hook returns void. An fsession
// program joins the fentry list here; Resolve adds its fexit node.
func trampKind(k Kind, m *btfmodel.FuncModel) Kind {
	switch k {
	case LSM:
		if m.IsVoid() {
			return Fexit
		}
		return ModRet
	case Fsession:
		return Fentry
	}
	return k
}

// TrampNodes is how many of the trampoline's BPF_MAX_TRAMP_LINKS slots progs take: one per
// program, two per fsession program (its fentry and its fexit node).
func TrampNodes(progs []Prog) int {
	n := len(progs)
	for _, p := range progs {
		if p.Kind == Fsession {
			n++
		}
	}
	return n
}

// Resolve turns a validated request and its function model into a Tramp: flags, program lists
// in emission order, and every address (the request's, or the synthetic layout's).
func Resolve(req *Request, m *btfmodel.FuncModel) (*Tramp, error) {
	// Every request, from flags, a file or a corpus, passes the same validation before
	// anything indexes its lists.
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if n, max := TrampNodes(req.Progs), btfmodel.LimitsFor(req.Arch, req.Kernel).MaxTrampLinks; n > max {
		// bpf_trampoline_link_prog counts nodes over all kinds.
		return nil, Reject(E2BIG, "%d programs take %d trampoline nodes (an fsession program takes two), at most %d (BPF_MAX_TRAMP_LINKS)", len(req.Progs), n, max)
	}
	t := &Tramp{Arch: req.Arch, Kernel: req.Kernel, Model: m, Features: req.Features, ProgTarget: req.Target == "bpf"}
	switch {
	case req.Flags != nil:
		t.Flags = Flags(*req.Flags)
	case req.StructOps != nil:
		t.Flags = Flags(btfmodel.StructOpsFlags(m, req.Kernel))
	default:
		t.Flags = DeriveFlags(req.Arch, req.Kernel, req.Progs)
	}
	addrs := req.Addrs
	if addrs == nil {
		addrs = Synthetic(req.Arch, req.Kernel, len(req.Progs))
		if req.StructOps != nil {
			addrs.Func, addrs.IP, addrs.IM = 0, 0, 0
		}
	}
	if req.StructOps != nil {
		so := *req.StructOps
		t.StructOps = &so
	}
	t.Image, t.Func, t.IP, t.IM = uint64(addrs.Image), uint64(addrs.Func), uint64(addrs.IP), uint64(addrs.IM)
	t.Helpers = make(map[string]uint64, len(addrs.Helpers))
	for name, a := range addrs.Helpers {
		t.Helpers[name] = uint64(a)
	}
	// Within a kind the newest link is emitted first: bpf_trampoline_link_prog adds at the head
	// of the kind's hlist and bpf_trampoline_get_progs walks it from the head. An fsession
	// program's two nodes go to the heads of the fentry and the fexit list.
	for i := len(req.Progs) - 1; i >= 0; i-- {
		p := req.Progs[i]
		ref := ProgRef{Prog: p, Index: i + 1, Addr: uint64(addrs.Progs[i].Prog), BPFFunc: uint64(addrs.Progs[i].BPFFunc), CookieSlot: -1}
		if p.Kind == Fsession {
			t.Fsessions++
			if p.SessionCookie {
				// Slots are numbered in emission order, which both lists share.
				ref.CookieSlot = t.CookieSlots
				t.CookieSlots++
			}
		}
		switch trampKind(p.Kind, m) {
		case Fentry, StructOpsProg: // bpf_struct_ops_prepare_trampoline's one FENTRY link
			t.Fentry = append(t.Fentry, ref)
			if p.Kind == Fsession {
				t.Fexit = append(t.Fexit, ref)
			}
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
