package verifier

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// Special kfuncs and special argument kinds of check_kfunc_call and check_kfunc_args
// (kernel/bpf/verifier.c): the checks the kfunc probe (testdata/verifier/kfunc-probe/)
// showed on calls with zero arguments. The objects behind them (iterator slots, list and
// rbtree nodes, bpf_wq) are not modelled: a well-formed argument passes on unchecked.

// kfuncAddCheck is add_kfunc_call after the FUNC is found: kallsyms_lookup_name (a FUNC the
// BTF keeps whose symbol the kernel lacks) and bpf_dev_bound_kfunc_check (the XDP metadata
// kfuncs, include/net/xdp.h XDP_METADATA_KFUNC_xxx, need a device-bound program).
func (c *checker) kfuncAddCheck(d *kfuncDesc) error {
	if !btfmodel.KfuncHasSymbol(c.env.Kernel, d.name) {
		c.logf("cannot find address for kernel function %s", d.name)
		return reject("EINVAL")
	}
	if strings.HasPrefix(d.name, "bpf_xdp_metadata_rx_") {
		c.logf("metadata kfuncs require device-bound program")
		return reject("EINVAL")
	}
	return nil
}

// kfuncSpecialArg classifies argument i as get_kfunc_ptr_arg_type does for the kinds that
// are not memory or a kernel object, and refuses a register that cannot be one. handled:
// the argument is one of those kinds (and passed).
func (c *checker) kfuncSpecialArg(d *kfuncDesc, i int, r *reg, ref btf.Type) (handled bool, err error) {
	name := ""
	if isStructOrUnion(ref) {
		name = btfName(ref)
	}
	switch {
	case d.name == "bpf_cast_to_kern_ctx" && i == 0: // KF_ARG_PTR_TO_CTX
		if r.typ != ptrToCtx {
			c.logf("arg#%d expected pointer to ctx, but got %s", i, regTypeStr(c.env.Kernel, r))
			return true, reject("EINVAL")
		}
		return true, nil
	case i == 0 && (d.kf.Has(btfmodel.KFIterNew) || d.kf.Has(btfmodel.KFIterNext) || d.kf.Has(btfmodel.KFIterDestroy)):
		// KF_ARG_PTR_TO_ITER: process_iter_arg
		if r.typ != ptrToStack {
			c.logf("arg#%d expected pointer to an iterator on stack", i)
			return true, reject("EINVAL")
		}
		c.note("kfunc %s: the iterator at R%d is taken as valid (iterator stack slots are not modelled)", d.name, i+1)
		c.iterArg(d, r) // the iterator's reference (iter.go)
		return true, nil
	case name == "bpf_list_head" || name == "bpf_rb_root":
		if r.typ != ptrToMapValue { // nor PTR_TO_BTF_ID | MEM_ALLOC: not modelled
			c.logf("arg#%d expected pointer to map value or allocated object", i)
			return true, reject("EINVAL")
		}
		c.note("kfunc %s: the %s at R%d is taken as valid (bpf_spin_lock-protected collections are not modelled)", d.name, name, i+1)
		return true, nil
	case name == "bpf_wq":
		if r.typ != ptrToMapValue {
			c.logf("arg#%d doesn't point to a map value", i)
			return true, reject("EINVAL")
		}
		return true, nil
	}
	return false, nil
}

// kfuncSpecialCall is check_kfunc_call between the arguments and the return value:
// __bpf_trap (7.2), the bpf_preempt_disable/enable depth, and bpf_obj_new without
// program BTF (the local type id needs it).
func (c *checker) kfuncSpecialCall(d *kfuncDesc, sleepable bool) error {
	switch {
	case d.name == "__bpf_trap":
		c.logf("unexpected __bpf_trap() due to uninitialized variable?")
		return reject("EFAULT")
	case d.name == "bpf_preempt_disable":
		c.st.preemptLock++
	case d.name == "bpf_preempt_enable":
		if c.st.preemptLock == 0 {
			c.logf("unmatched attempt to enable preemption (kernel function %s)", d.name)
			return reject("EINVAL")
		}
		c.st.preemptLock--
	case c.st.preemptLock > 0 && sleepable:
		c.logf("kernel func %s is sleepable within non-preemptible region", d.name)
		return reject("EACCES")
	}
	return nil
}

// kfuncObjNewBTF: bpf_obj_new's type comes from the program's BTF (prog->aux->btf), which
// an instruction list without func info does not carry.
func (c *checker) kfuncObjNewBTF(d *kfuncDesc) error {
	if allocKfunc[d.name] && (len(c.prog.Instructions) == 0 || btf.FuncMetadata(&c.prog.Instructions[0]) == nil) {
		c.logf("bpf_obj_new/bpf_percpu_obj_new requires prog BTF")
		return reject("EINVAL")
	}
	return nil
}

// preemptLeak is the exit check of a bpf_preempt_disable region: 6.12's do_check ("%d
// bpf_preempt_enable(s) is/are missing", before the references) or 7.2's
// check_resource_leak (last). atEnd says which place is asking.
func (c *checker) preemptLeak(atEnd bool) error {
	if c.st.preemptLock == 0 || atEnd != c.has(btfmodel.CapVerifierResourceLeakMsg) {
		return nil
	}
	if atEnd {
		c.logf("BPF_EXIT instruction in main prog cannot be used inside bpf_preempt_disable-ed region")
		return reject("EINVAL")
	}
	s := " is"
	if c.st.preemptLock > 1 {
		s = "s are"
	}
	c.logf("%s", fmt.Sprintf("%d bpf_preempt_enable%s missing", c.st.preemptLock, s))
	return reject("EINVAL")
}
