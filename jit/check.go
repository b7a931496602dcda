package jit

import (
	"fmt"

	"github.com/trampjit/trampjit/btfmodel"
)

// AttachError is a program the kernel refuses to load or attach, with its reason.
type AttachError struct {
	Prog    int // 1-based attach index
	Verdict btfmodel.Verdict
}

func (e *AttachError) Error() string {
	v := e.Verdict
	s := fmt.Sprintf("prog#%d (%s): the kernel refuses it at %s with %s: %s", e.Prog, v.Type, v.Stage, v.Errno, v.Msg)
	if v.Note != "" {
		s += " (" + v.Note + ")"
	}
	return s
}

// StructOpsError is the kernel's refusal of a struct_ops member: at load (the verifier's
// check_struct_ops_btf_id) or at the map update that would build its image.
type StructOpsError struct {
	StructOps StructOps
	Verdict   btfmodel.Verdict
}

func (e *StructOpsError) Error() string {
	return fmt.Sprintf("%s: %s (%s, %s)", e.StructOps, e.Verdict.Msg, e.Verdict.Stage, e.Verdict.Errno)
}

// CheckAttach applies the kernel's load-time attach checks (btfmodel.CheckAttach) to every
// program of a request on a BTF function. Prototype requests describe no kernel function, so
// only the model's own rules (distill) and the backend's limits apply to them. errInj is the
// kernel's error-injection list, or nil when unknown.
func CheckAttach(req *Request, m *btfmodel.FuncModel, errInj map[string]bool) error {
	if req.Target == "bpf" {
		return checkProgTarget(req, m)
	}
	if req.Proto != "" {
		return nil
	}
	for i, p := range req.Progs {
		env := btfmodel.AttachEnv{Kernel: req.Kernel, Arch: req.Arch, Sleepable: p.Sleepable, ErrorInjection: errInj, BTFID: m.BTFID, FuncIP: p.FuncIP}
		v := btfmodel.CheckAttach(m.Name, m, nil, p.Kind, env)
		if !v.OK && v.Stage == btfmodel.StageLoad {
			return &AttachError{Prog: i + 1, Verdict: v}
		}
	}
	return nil
}

// checkProgTarget is bpf_check_attach_target for a BPF-program target: a program's function
// is never sleepable (it is neither error-injectable nor in an fmod_ret set; captured as
// "tj_args5 is not sleepable"), and its return code cannot be modified.
func checkProgTarget(req *Request, m *btfmodel.FuncModel) error {
	for i, p := range req.Progs {
		v := btfmodel.Verdict{Type: p.Kind, Stage: btfmodel.StageLoad, Errno: "EINVAL", KernelMsg: true}
		switch {
		case p.Sleepable:
			v.Msg = m.Name + " is not sleepable"
		case p.Kind == ModRet:
			v.Msg = "can't modify return codes of BPF programs"
		default:
			continue
		}
		return &AttachError{Prog: i + 1, Verdict: v}
	}
	return nil
}
