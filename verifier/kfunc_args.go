package verifier

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// kfunc arguments: check_kfunc_args and get_kfunc_ptr_arg_type (6.12, 7.2) and 6.1's
// btf_check_kfunc_arg_match (kernel/bpf/verifier.c, kernel/bpf/btf.c). Parameter name
// suffixes carry the rules: __sz / __szk size pairs, __k constants, __nullable / __opt,
// __str constant strings, __ign ignored, __uninit.

// kfuncMeta is the part of struct bpf_kfunc_call_arg_meta the model uses.
type kfuncMeta struct {
	releaseRegno uint8
	refObjID     uint32
	constFound   bool
	constVal     uint64
	r0Size       int
	r0Rdonly     bool
}

func hasSuffix(p btf.FuncParam, s string) bool {
	return len(p.Name) > len(s) && strings.HasSuffix(p.Name, s)
}

func isScalarType(t btf.Type) bool {
	switch t.(type) {
	case *btf.Int, *btf.Enum, *btf.Float:
		return true
	}
	return false
}

// scalarStruct is __btf_type_is_scalar_struct: members are scalars, arrays of scalars or
// such structs, at most 3 levels deep.
func (c *checker) scalarStruct(t btf.Type, depth int) bool {
	var members []btf.Member
	switch st := t.(type) {
	case *btf.Struct: // btf_type_is_struct: unions too (x86's pt_regs has some)
		members = st.Members
	case *btf.Union:
		members = st.Members
	default:
		return false
	}
	for _, m := range members {
		mt := skipMods(m.Type)
		switch arr, isArr := mt.(*btf.Array); {
		case isArr: // an array of scalars, not of structs
			if arr.Nelems == 0 || !isScalarType(skipMods(arr.Type)) {
				return false
			}
		case isScalarType(mt):
		case isStructOrUnion(mt):
			if depth >= 3 {
				c.logf("max struct nesting depth exceeded")
				return false
			}
			if !c.scalarStruct(mt, depth+1) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// argRef names a kfunc argument in messages: "arg#0" (6.12) or "R1" (7.2).
func (c *checker) argRef(i int) string {
	if c.has(btfmodel.CapVerifierKfuncRegMsg) {
		return fmt.Sprintf("R%d", i+1)
	}
	return fmt.Sprintf("arg#%d", i)
}

// isKfuncTrusted is is_trusted_reg: referenced, or PTR_TRUSTED with no other modifier.
func isKfuncTrusted(r *reg) bool {
	if r.refObjID != 0 {
		return true
	}
	return r.typ == ptrToBTFID && r.flags == flagTrusted
}

func isNullReg(r *reg) bool {
	return r.typ == scalarValue && r.v.isConst() && r.v.val() == 0
}

// kfuncParams is the first check of every version's argument walk: a kfunc takes at most
// MAX_BPF_FUNC_REG_ARGS (5) arguments in registers.
func (c *checker) kfuncParams(d *kfuncDesc) ([]btf.FuncParam, error) {
	if len(d.proto.Params) > 5 {
		c.logf("Function %s has %d > %d args", d.name, len(d.proto.Params), 5)
		return nil, reject("EINVAL")
	}
	return d.proto.Params, nil
}

// kfuncArgs is check_kfunc_args.
func (c *checker) kfuncArgs(d *kfuncDesc) (*kfuncMeta, error) {
	m := &kfuncMeta{}
	params, err := c.kfuncParams(d)
	if err != nil {
		return nil, err
	}
	release := d.kf.Has(btfmodel.KFRelease)
	trustedArgs := d.kf.Has(btfmodel.KFTrustedArgs) || release || c.has(btfmodel.CapVerifierKfuncTrustedDefault)
	rcuArgs := d.kf.Has(btfmodel.KFRCU)
	for i := 0; i < len(params); i++ {
		p := params[i]
		regno := uint8(i + 1)
		c.scratch[int(regno)] = true
		r := c.st.regs[regno]
		t := skipMods(p.Type)
		if hasSuffix(p, "__ign") {
			continue
		}
		if isScalarType(t) {
			if r.typ != scalarValue {
				c.logf("R%d is not a scalar", regno)
				return nil, reject("EINVAL")
			}
			if hasSuffix(p, "__k") || hasSuffix(p, "__szk") {
				if !r.v.isConst() {
					c.logf("R%d must be a known constant", regno)
					return nil, reject("EINVAL")
				}
				m.constFound, m.constVal = true, r.v.val()
			}
			if p.Name == "rdonly_buf_size" || p.Name == "rdwr_buf_size" {
				if !r.v.isConst() {
					c.logf("R%d is not a const", regno)
					return nil, reject("EINVAL")
				}
				m.r0Size, m.r0Rdonly = int(r.v.val()), p.Name == "rdonly_buf_size"
			}
			continue
		}
		ptr, ok := t.(*btf.Pointer)
		if !ok {
			c.logf("Unrecognized arg#%d type %s", i, kindStr(t))
			return nil, reject("EINVAL")
		}
		nullable := hasSuffix(p, "__nullable") || hasSuffix(p, "__opt")
		if (trustedArgs || rcuArgs) && (isNullReg(&r) || (r.isPtr() && r.flags&flagMaybeNull != 0)) && !nullable {
			if c.has(btfmodel.CapVerifierKfuncRegMsg) {
				c.logf("Possibly NULL pointer passed to trusted R%d", regno)
			} else {
				c.logf("Possibly NULL pointer passed to trusted arg%d", i)
			}
			return nil, reject("EACCES")
		}
		if release && m.releaseRegno == 0 && r.refObjID == 0 && c.has(btfmodel.CapVerifierReleaseArgRef) {
			c.logf("release kfunc %s expects referenced PTR_TO_BTF_ID passed to R%d", d.name, regno)
			return nil, reject("EINVAL")
		}
		if r.refObjID != 0 {
			if release && m.refObjID != 0 {
				c.logf("verifier internal error: more than one arg with ref_obj_id R%d %d %d", regno, r.refObjID, m.refObjID)
				return nil, reject("EFAULT")
			}
			m.refObjID = r.refObjID
			if release {
				m.releaseRegno = regno
			}
		}
		ref := skipMods(ptr.Target)
		refName := btfName(ref)
		if nullable && isNullReg(&r) {
			continue // KF_ARG_PTR_TO_NULL
		}
		if handled, err := c.kfuncSpecialArg(d, i, &r, ref); handled || err != nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		switch {
		case isStructOrUnion(ref) && (refName == "bpf_dynptr" || refName == "bpf_dynptr_kern"):
			if r.typ != ptrToStack {
				c.logf("arg#%d expected pointer to stack or const struct bpf_dynptr", i)
				return nil, reject("EINVAL")
			}
			if err := c.kfuncDynptrArg(d.name, uint8(regno), p.Name, c.dynptrOf(1)); err != nil { // dynptr.go
				return nil, err
			}
			continue
		case hasSuffix(p, "__str"):
			if err := c.kfuncConstStr(i, regno, &r); err != nil {
				return nil, err
			}
			continue
		case r.typ == ptrToBTFID:
			if !isStructOrUnion(ref) {
				c.logf("kernel function %s args#%d pointer type %s %s is not supported", d.name, i, kindStr(ref), refName)
				return nil, reject("EINVAL")
			}
			if err := c.kfuncBTFArg(d, i, regno, &r, ref, trustedArgs, rcuArgs, release); err != nil {
				return nil, err
			}
			continue
		}
		memSize := i+1 < len(params) && isScalarType(skipMods(params[i+1].Type)) &&
			(hasSuffix(params[i+1], "__sz") || hasSuffix(params[i+1], "__szk")) && c.st.regs[regno+1].typ == scalarValue
		_, isVoid := ref.(*btf.Void)
		if ref == nil {
			isVoid = true
		}
		if !isScalarType(ref) && !c.scalarStruct(ref, 0) && !(memSize && isVoid) {
			c.logf("%s pointer type %s %s must point to scalar, or struct with scalar", c.argRef(i), kindStr(ref), refName)
			return nil, reject("EINVAL")
		}
		if !memSize {
			size := typeSize(ref)
			if isNullReg(&r) {
				continue
			}
			if err := c.helperMem(regno, &r, size, true, false); err != nil {
				return nil, err
			}
			if err := c.helperMem(regno, &r, size, true, true); err != nil {
				return nil, err
			}
			continue
		}
		sz := c.st.regs[regno+1]
		if !(nullable && isNullReg(&r)) {
			if err := c.kfuncMemSize(regno, &r, &sz); err != nil {
				if c.has(btfmodel.CapVerifierKfuncRegMsg) {
					c.logf("R%d and R%d memory, len pair leads to invalid memory access", regno, regno+1)
				} else {
					c.logf("arg#%d arg#%d memory, len pair leads to invalid memory access", i, i+1)
				}
				return nil, err
			}
		}
		if hasSuffix(params[i+1], "__szk") {
			if !sz.v.isConst() {
				c.logf("R%d must be a known constant", regno+1)
				return nil, reject("EINVAL")
			}
			m.constFound, m.constVal = true, sz.v.val()
		}
		i++ // the size argument is checked with its buffer
	}
	if release && m.releaseRegno == 0 {
		c.logf("release kernel function %s expects refcounted PTR_TO_BTF_ID", d.name)
		return nil, reject("EINVAL")
	}
	return m, nil
}

// kfuncBTFArg is the KF_ARG_PTR_TO_BTF_ID case: trust, then process_kf_arg_ptr_to_btf_id.
func (c *checker) kfuncBTFArg(d *kfuncDesc, i int, regno uint8, r *reg, ref btf.Type, trustedArgs, rcuArgs, release bool) error {
	if trustedArgs || rcuArgs {
		if !isKfuncTrusted(r) {
			if !rcuArgs {
				c.logf("R%d must be referenced or trusted", regno)
				return reject("EINVAL")
			}
			if r.flags&flagRCU == 0 {
				c.logf("R%d must be a rcu pointer", regno)
				return reject("EINVAL")
			}
		}
		if r.off < 0 {
			c.logf("negative offset %s ptr R%d off=%d disallowed", regTypeStr(c.env.Kernel, r), regno, r.off)
			return reject("EACCES")
		}
	}
	if release && r.refObjID != 0 && r.off != 0 {
		c.logf("R%d must have zero offset when passed to release func or trusted arg to kfunc", regno)
		return reject("EINVAL")
	}
	unsafe := r.flags &^ flagTrusted
	if unsafe != 0 && r.flags&flagRCU == 0 {
		shown := *r
		shown.flags &= flagTrusted
		c.logf("arg#%d is %s expected %s or socket", i, regTypeStr(c.env.Kernel, r), regTypeStr(c.env.Kernel, &shown))
		return reject("EINVAL")
	}
	strict := release && r.refObjID != 0
	if !c.structIDsMatch(r.btfType, int(r.off), ref, strict) {
		what := fmt.Sprintf("args#%d", i)
		if c.has(btfmodel.CapVerifierKfuncRegMsg) {
			what = fmt.Sprintf("R%d", regno)
		}
		c.logf("kernel function %s %s expected pointer to %s %s but R%d has a pointer to %s %s", d.name, what,
			kindStr(ref), btfName(ref), regno, kindStr(r.btfType), btfName(r.btfType))
		return reject("EINVAL")
	}
	return nil
}

// structIDsMatch is btf_struct_ids_match: the register's struct, or (not strict) a struct
// nested at its offset, first members included. The walk is btf_struct_walk's, size 1, with
// its messages: a pointer member at the offset logs "cannot access ptr member" before the
// kfunc's own refusal (css_set's subsys[] for bpf_cgroup_acquire).
func (c *checker) structIDsMatch(t btf.Type, off int, want btf.Type, strict bool) bool {
	if off == 0 && t == want {
		return true
	}
	if strict {
		return false
	}
	for depth := 0; depth < 32; depth++ {
		var flags typeFlag
		res, next, _, err := c.structWalk(t, off, 1, &flags)
		if err != nil || res != walkStruct {
			return false
		}
		if next == want {
			return true
		}
		t, off = next, 0
	}
	return false
}

// kfuncMemSize is check_kfunc_mem_size_reg: the size register bounds a read and a write
// of the buffer (a zero size allowed).
func (c *checker) kfuncMemSize(regno uint8, buf, sz *reg) error {
	if sz.v.smin < 0 {
		c.logf("R%d min value is negative, either use unsigned or 'var &= const'", regno+1)
		return reject("EACCES")
	}
	if sz.v.umax >= maxVarOff {
		c.logf("R%d unbounded memory access, use 'var &= const' or 'if (var < const)'", regno+1)
		return reject("EACCES")
	}
	b := *buf
	b.flags &^= flagMaybeNull
	if err := c.helperMem(regno, &b, int(sz.v.umax), true, false); err != nil {
		return err
	}
	return c.helperMem(regno, &b, int(sz.v.umax), true, true)
}

// kfuncConstStr is check_reg_const_str for a __str argument.
func (c *checker) kfuncConstStr(i int, regno uint8, r *reg) error {
	if r.typ != ptrToMapValue {
		c.logf("%s doesn't point to a const string", c.argRef(i))
		return reject("EINVAL")
	}
	if !c.prog.Maps[r.mapIdx].ReadOnly {
		c.logf("R%d does not point to a readonly map'", regno)
		return reject("EACCES")
	}
	c.note("kfunc string argument R%d: the map's contents are not modelled (zero termination unchecked)", regno)
	return nil
}
