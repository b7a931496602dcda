package verifier

import (
	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// kfuncArgs61 is 6.1's btf_check_kfunc_arg_match (btf_check_func_arg_match with is_kfunc,
// kernel/bpf/btf.c): each argument, then the release and the sleepable checks. Only a plain
// PTR_TO_BTF_ID (no modifier: not even PTR_MAYBE_NULL) passes as an object; everything else
// must be memory of a scalar type.
func (c *checker) kfuncArgs61(d *kfuncDesc) (*kfuncMeta, error) {
	m := &kfuncMeta{}
	params, err := c.kfuncParams(d)
	if err != nil {
		return nil, err
	}
	release := d.kf.Has(btfmodel.KFRelease)
	for i, p := range params {
		regno := uint8(i + 1)
		c.scratch[int(regno)] = true
		r := c.st.regs[regno]
		t := skipMods(p.Type)
		if isScalarType(t) {
			if r.typ != scalarValue {
				c.logf("R%d is not a scalar", regno)
				return nil, reject("EINVAL")
			}
			continue
		}
		ptr, ok := t.(*btf.Pointer)
		if !ok {
			c.logf("Unrecognized arg#%d type %s", i, kindStr(t))
			return nil, reject("EINVAL")
		}
		ref := skipMods(ptr.Target)
		objPtr := r.typ == ptrToCtx || (r.typ == ptrToBTFID && r.flags == 0)
		if ((d.kf.Has(btfmodel.KFTrustedArgs) && objPtr) || (release && r.refObjID != 0)) && r.typ == ptrToBTFID && r.off != 0 {
			c.logf("R%d must have zero offset when passed to release func", regno)
			return nil, reject("EINVAL")
		}
		if r.refObjID != 0 {
			if m.refObjID != 0 {
				c.logf("verifier internal error: more than one arg with ref_obj_id R%d %d %d", regno, r.refObjID, m.refObjID)
				return nil, reject("EFAULT")
			}
			m.refObjID = r.refObjID
			if release {
				m.releaseRegno = regno
			}
		}
		if i == 0 && d.kf.Has(btfmodel.KFKptrGet) && r.typ != ptrToMapValue {
			c.logf("arg#0 expected pointer to map value")
			return nil, reject("EINVAL")
		}
		if r.typ == ptrToBTFID && r.flags == 0 {
			if !isStructOrUnion(ref) {
				c.logf("kernel function %s args#%d pointer type %s %s is not supported", d.name, i, kindStr(ref), btfName(ref))
				return nil, reject("EINVAL")
			}
			if !c.structIDsMatch(r.btfType, int(r.off), ref, release && r.refObjID != 0) {
				c.logf("kernel function %s args#%d expected pointer to %s %s but R%d has a pointer to %s %s", d.name, i,
					kindStr(ref), btfName(ref), regno, kindStr(r.btfType), btfName(r.btfType))
				return nil, reject("EINVAL")
			}
			continue
		}
		memSize := i+1 < len(params) && isScalarType(skipMods(params[i+1].Type)) && hasSuffix(params[i+1], "__sz") &&
			c.st.regs[regno+1].typ == scalarValue
		_, isVoid := ref.(*btf.Void)
		isDynptr := isStructOrUnion(ref) && btfName(ref) == "bpf_dynptr_kern"
		if !isScalarType(ref) && !c.scalarStruct(ref, 0) && !isDynptr && !(memSize && (isVoid || ref == nil)) {
			voidOr := ""
			if memSize {
				voidOr = "void, "
			}
			// 6.1's btf_name_by_offset: an anonymous type has the empty name
			c.logf("arg#%d pointer type %s %s must point to %sscalar, or struct with scalar", i, kindStr(ref), typeName(ref), voidOr)
			return nil, reject("EINVAL")
		}
		if isDynptr && r.typ != ptrToStack {
			c.logf("arg#%d pointer type %s %s not to stack", i, kindStr(ref), btfName(ref))
			return nil, reject("EINVAL")
		}
		if isDynptr {
			c.note("kfunc %s: the dynptr at R%d is taken as initialised (dynptr stack slots are not modelled)", d.name, regno)
			continue
		}
		if memSize {
			sz := c.st.regs[regno+1]
			if err := c.kfuncMemSize(regno, &r, &sz); err != nil {
				return nil, err
			}
			continue
		}
		if isNullReg(&r) {
			continue // check_mem_reg: NULL is allowed
		}
		if err := c.helperMem(regno, &r, typeSize(ref), false, false); err != nil {
			return nil, err
		}
	}
	if release && m.releaseRegno == 0 {
		c.logf("release kernel function %s expects refcounted PTR_TO_BTF_ID", d.name)
		return nil, reject("EINVAL")
	}
	// after the arguments in 6.1 (the kfunc probe: a dynptr argument's refusal comes first)
	if d.kf.Has(btfmodel.KFSleepable) && !c.prog.Sleepable {
		c.logf("kernel function %s is sleepable but the program is not", d.name)
		return nil, reject("EINVAL")
	}
	return m, nil
}

// typeName is a type's name as btf_name_by_offset gives it ("" when anonymous).
func typeName(t btf.Type) string {
	if t == nil {
		return ""
	}
	return t.TypeName()
}
