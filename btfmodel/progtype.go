package btfmodel

import (
	"fmt"

	"github.com/cilium/ebpf"
)

// SkipReason says why a program of an object is neither modelled nor loaded by the kernel
// backend ("" when it is): TRACING programs attached by fentry, fexit, fmod_ret and tp_btf,
// and LSM programs (BPF_LSM_MAC), are; other types are skipped, not refused with the object
// (libbpf loads them with their own rules: kprobes, tracepoints, iterators, ...). The model
// (verifier.Unverifiable) and the backend (kernel.ProgramsFromELFSkipped) give the same words.
func SkipReason(ps *ebpf.ProgramSpec) string {
	switch ps.Type {
	case ebpf.Tracing:
		switch ps.AttachType {
		case ebpf.AttachTraceFEntry, ebpf.AttachTraceFExit, ebpf.AttachModifyReturn, ebpf.AttachTraceRawTp:
			return ""
		case ebpf.AttachTraceIter:
			return "iterator programs (BPF_TRACE_ITER) are not modelled"
		}
		return fmt.Sprintf("tracing programs attached as %s are not modelled", ps.AttachType)
	case ebpf.LSM:
		if ps.AttachType == ebpf.AttachLSMMac {
			return ""
		}
		return fmt.Sprintf("LSM programs attached as %s are not modelled", ps.AttachType)
	case ebpf.StructOps:
		if ps.AttachTo == "" {
			return "no .struct_ops map refers to this struct_ops program, so its member is unknown: not modelled (libbpf does not load it either)"
		}
		return ""
	case ebpf.UnspecifiedProgram:
		return "libbpf knows no program type for this section"
	}
	return fmt.Sprintf("%s programs are not modelled (only fentry, fexit, fmod_ret, lsm, tp_btf and struct_ops)", ps.Type)
}
