package verifier

import (
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// Typed __ksym variables (extern const struct rq runqueues __ksym;): libbpf loads them as a
// ld_imm64 with src_reg BPF_PSEUDO_BTF_ID and the VAR's vmlinux BTF id in imm
// (bpf_object__resolve_ksym_var_btf_id, tools/lib/bpf/libbpf.c); the verifier types the
// register in check_pseudo_btf_id (kernel/bpf/verifier.c).

const pseudoBTFID = 3 // BPF_PSEUDO_BTF_ID

// percpuSection is the DATASEC of per-CPU variables in vmlinux BTF.
const percpuSection = ".data..percpu"

// resolveKsym is check_pseudo_btf_id's lookup, at resolve time (the kernel does it in
// resolve_pseudo_ldimm64): the id must name a VAR of the kernel's BTF.
func (c *checker) resolveKsym(in *insn) error {
	t, err := c.env.BTF.TypeByID(btf.TypeID(uint32(in.imm64)))
	if err != nil || uint32(in.imm64) == 0 {
		if in.mapRef != "" {
			// libbpf gives up before BPF_PROG_LOAD
			c.logf("extern (var ksym) '%s': not found in kernel BTF", in.mapRef)
			return reject("ESRCH")
		}
		c.logf("ldimm64 insn specifies invalid btf_id %d.", uint32(in.imm64))
		return reject("EINVAL")
	}
	if _, ok := t.(*btf.Var); !ok {
		c.logf("pseudo btf_id %d in ldimm64 isn't KIND_VAR.", uint32(in.imm64))
		return reject("EINVAL")
	}
	return nil
}

// ksymReg is the register check_pseudo_btf_id gives a VAR: PTR_TO_BTF_ID | MEM_PERCPU for a
// per-CPU variable, PTR_TO_BTF_ID for a struct, PTR_TO_MEM | MEM_RDONLY of the type's size
// otherwise.
func (c *checker) ksymReg(in *insn) reg {
	t, _ := c.env.BTF.TypeByID(btf.TypeID(uint32(in.imm64)))
	v := t.(*btf.Var)
	st := skipMods(v.Type)
	if c.isPercpuVar(v) {
		return reg{typ: ptrToBTFID, flags: flagPercpu, btfType: st, v: constScalar(0), path: v.Name}
	}
	if isStructOrUnion(st) {
		return reg{typ: ptrToBTFID, btfType: st, v: constScalar(0), path: v.Name}
	}
	size, _ := btf.Sizeof(st)
	return reg{typ: ptrToMem, flags: flagRdonly, memSize: size, v: constScalar(0), path: v.Name}
}

// isPercpuVar: the VAR is listed in vmlinux's .data..percpu DATASEC.
func (c *checker) isPercpuVar(v *btf.Var) bool {
	var ds *btf.Datasec
	if c.env.BTF.TypeByName(percpuSection, &ds) != nil {
		return false
	}
	for _, s := range ds.Vars {
		if s.Type == v {
			return true
		}
	}
	return false
}

// linkKsyms does what libbpf does to an object's typed __ksym loads before BPF_PROG_LOAD:
// src_reg BPF_PSEUDO_BTF_ID and the VAR's id in kernel's BTF (0 when the kernel has none;
// resolveKsym then gives libbpf's refusal). typed names the object's typed ksym variables.
func linkKsyms(insns asm.Instructions, typed map[string]bool, kernel *btf.Spec) {
	for i := range insns {
		ins := &insns[i]
		if !ins.OpCode.IsDWordLoad() || ins.IsLoadFromMap() || !typed[ins.Reference()] {
			continue
		}
		ins.Src = asm.Register(pseudoBTFID)
		ins.Constant = 0
		if kernel == nil {
			continue
		}
		types, _ := kernel.AnyTypesByName(ins.Reference())
		best := btf.TypeID(0)
		for _, t := range types {
			if _, ok := t.(*btf.Var); ok && t.TypeName() == ins.Reference() {
				if id, err := kernel.TypeID(t); err == nil && (best == 0 || id < best) {
					best = id
				}
			}
		}
		ins.Constant = int64(best)
	}
}

const (
	helperPerCPUPtr  = 153 // bpf_per_cpu_ptr
	helperThisCPUPtr = 154 // bpf_this_cpu_ptr
)

// percpuPtrCall is check_helper_call for bpf_per_cpu_ptr and bpf_this_cpu_ptr
// (kernel/bpf/helpers.c protos): R1 is ARG_PTR_TO_PERCPU_BTF_ID (a per-CPU __ksym), R2 the
// CPU for bpf_per_cpu_ptr; R0 is RET_PTR_TO_MEM_OR_BTF_ID of the variable's type, MEM_RDONLY
// folded away for a struct (PTR_TO_BTF_ID), PTR_MAYBE_NULL for bpf_per_cpu_ptr (a CPU past
// nr_cpu_ids gives NULL).
func (c *checker) percpuPtrCall(id int32, name string) error {
	if err := c.readReg(1); err != nil {
		return err
	}
	if id == helperPerCPUPtr {
		if err := c.readReg(2); err != nil {
			return err
		}
	}
	r := c.st.regs[1]
	if r.typ != ptrToBTFID || r.flags&flagPercpu == 0 {
		c.logf("R1 type=%s expected=percpu_ptr_", regTypeStr(c.env.Kernel, &r))
		return reject("EACCES")
	}
	c.clobberCallerSaved()
	var ret reg
	if isStructOrUnion(r.btfType) {
		ret = reg{typ: ptrToBTFID, btfType: r.btfType, v: constScalar(0), path: r.path}
	} else {
		size, _ := btf.Sizeof(r.btfType)
		ret = reg{typ: ptrToMem, flags: flagRdonly, memSize: size, v: constScalar(0), path: r.path}
	}
	if id == helperPerCPUPtr {
		ret.flags |= flagMaybeNull
		ret.id = c.newID()
	}
	c.setReg(0, ret)
	return nil
}
