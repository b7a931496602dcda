package verifier

import (
	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// Global functions (BTF_FUNC_GLOBAL linkage): btf_prepare_func_args turns the BTF
// prototype into argument types, btf_check_subprog_call matches a caller's registers
// against them, do_check_subprogs verifies each function on its own (kernel/bpf/btf.c,
// kernel/bpf/verifier.c).

type globalArgKind int

const (
	globalScalar globalArgKind = iota
	globalCtx
	globalMem // PTR_TO_MEM | PTR_MAYBE_NULL of size bytes
)

type globalArg struct {
	kind globalArgKind
	size int
}

// btfKindStr is btf_type_str.
func btfKindStr(t btf.Type) string { return btfmodel.KindName(t) }

func btfTypeName(t btf.Type) string {
	if t == nil {
		return ""
	}
	return t.TypeName()
}

func isScalarBTF(t btf.Type) bool {
	switch t.(type) {
	case *btf.Int, *btf.Enum:
		return true
	}
	return false
}

// prepareFuncArgs is btf_prepare_func_args for global subprogram k; the message is logged.
func (c *checker) prepareFuncArgs(k int) ([]globalArg, error) {
	sp := &c.subprogs[k]
	name := sp.name()
	proto, ok := sp.fn.Type.(*btf.FuncProto)
	if !ok {
		c.logf("Invalid type of function %s()", name)
		return nil, reject("EFAULT")
	}
	if len(proto.Params) > 5 {
		c.logf("Global function %s() with %d > %d args. Buggy compiler.", name, len(proto.Params), 5)
		return nil, reject("EINVAL")
	}
	ret := btf.UnderlyingType(proto.Return)
	_, void := ret.(*btf.Void)
	if !isScalarBTF(ret) && !(void && c.has(btfmodel.CapVerifierGlobalVoidReturn)) {
		if c.has(btfmodel.CapVerifierGlobalVoidReturn) { // the same change reworded it
			c.logf("Global function %s() return value not void or scalar. Only those are supported.", name)
		} else {
			c.logf("Global function %s() doesn't return scalar. Only those are supported.", name)
		}
		return nil, reject("EINVAL")
	}
	var args []globalArg
	for i, p := range proto.Params {
		t := btf.UnderlyingType(p.Type)
		if isScalarBTF(t) {
			args = append(args, globalArg{kind: globalScalar})
			continue
		}
		ptr, ok := t.(*btf.Pointer)
		if !ok {
			c.logf("Arg#%d type %s in %s() is not supported yet.", i, btfKindStr(t), name)
			return nil, reject("EINVAL")
		}
		// btf_get_prog_ctx_type: tracing and LSM contexts are no named struct, so no
		// pointer argument is the context here.
		target := btf.UnderlyingType(ptr.Target)
		size, err := btf.Sizeof(target)
		if _, isVoid := target.(*btf.Void); isVoid || err != nil || size <= 0 {
			c.logf("arg#%d reference type('%s %s') size cannot be determined: -22", i, btfKindStr(target), btfTypeName(target))
			return nil, reject("EINVAL")
		}
		args = append(args, globalArg{kind: globalMem, size: size})
	}
	return args, nil
}

// globalCall is __check_func_call for a global subprogram: the arguments are matched, the
// callee is assumed valid and R0 becomes an unknown scalar.
func (c *checker) globalCall(k int) error {
	sp := &c.subprogs[k]
	if err := c.globalArgMatch(k); err != nil {
		if re, ok := err.(*rejectErr); ok && re.errno == "EFAULT" {
			return err
		}
		if c.has(btfmodel.CapVerifierGlobalMainFirst) {
			c.logf("Caller passes invalid args into func#%d ('%s')", k, sp.name())
		} else {
			c.logf("Caller passes invalid args into func#%d", k)
		}
		return err
	}
	if c.has(btfmodel.CapVerifierGlobalMainFirst) {
		c.logx("Func#%d ('%s') is global and assumed valid.", k, sp.name())
	} else {
		c.logx("Func#%d is global and valid. Skipping.", k)
	}
	sp.called = true
	c.clobberCallerSaved()
	c.setReg(0, mkScalar(unknownScalar()))
	return nil
}

// globalArgMatch is btf_check_func_arg_match with the caller's registers.
func (c *checker) globalArgMatch(k int) error {
	args, err := c.prepareFuncArgs(k)
	if err != nil {
		return err
	}
	for i, a := range args {
		regno := uint8(i + 1)
		r := c.st.regs[regno]
		switch a.kind {
		case globalScalar:
			if r.typ != scalarValue {
				c.logf("R%d is not a scalar", regno)
				return reject("EINVAL")
			}
		case globalMem:
			if err := c.checkMemReg(regno, &r, a.size); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkMemReg is check_mem_reg: NULL passes, anything else must give size readable bytes.
func (c *checker) checkMemReg(regno uint8, r *reg, size int) error {
	if r.typ == scalarValue && r.v.isConst() && r.v.val() == 0 {
		return nil
	}
	if r.typ == ptrToCtx && !c.has(btfmodel.CapVerifierMemArgNoCtx) {
		// 6.12: no convert_ctx_access for tracing, so the context is probed by a byte read.
		return c.ctxAccess(regno, r, int(r.off)+size-1, 1, false, -1)
	}
	if r.typ == ptrToCtx && c.has(btfmodel.CapVerifierMemArgNoCtx) {
		// 7.2 btf_check_func_arg_match: check_func_arg_reg_off before check_mem_reg, so a
		// moved context is refused for its offset first (the fuzz's captures).
		if err := c.argCtxOff(regno, r); err != nil {
			return err
		}
	}
	saved := *r
	r.flags &^= flagMaybeNull
	err := c.helperMem(regno, r, size, true, false)
	*r = saved
	return err
}

// globalEntry is do_check_common's initial state for global subprogram k.
func (c *checker) globalEntry(k int) (*state, error) {
	sp := &c.subprogs[k]
	c.logx("Validating %s() func#%d...", sp.name(), k)
	args, err := c.prepareFuncArgs(k)
	if err != nil {
		return nil, err
	}
	st := &state{}
	st.subprog, st.callsite = k, -1
	for i, a := range args {
		r := &st.regs[i+1]
		switch a.kind {
		case globalScalar:
			*r = mkScalar(unknownScalar())
		case globalCtx:
			*r = reg{typ: ptrToCtx, v: constScalar(0)}
		case globalMem:
			*r = reg{typ: ptrToMem, flags: flagMaybeNull, memSize: a.size, v: constScalar(0), id: c.newID()}
		}
	}
	st.regs[10] = reg{typ: ptrToStack, v: constScalar(0)}
	return st, nil
}

// globalExit is check_return_code for a global subprogram's frame: R0 a scalar.
func (c *checker) globalExit() error {
	sp := &c.subprogs[c.st.subprog]
	if proto, ok := sp.fn.Type.(*btf.FuncProto); ok {
		if _, void := btf.UnderlyingType(proto.Return).(*btf.Void); void {
			return nil // 7.2: a void global function returns nothing to check
		}
	}
	if err := c.readReg(0); err != nil {
		return err
	}
	if r0 := &c.st.regs[0]; r0.typ != scalarValue {
		c.logf("At subprogram exit the register R0 is not a scalar value (%s)", regTypeStr(c.env.Kernel, r0))
		return reject("EINVAL")
	}
	return nil
}

// verifyGlobals is do_check_subprogs: 6.1 verifies every global subprogram (before the
// main program), 6.12 the ones the walks reached, until no new one is reached.
func (c *checker) verifyGlobals() error {
	if !c.hasFuncInfo() {
		return nil
	}
	for again := true; again; {
		again = false
		for k := 1; k < len(c.subprogs); k++ {
			sp := &c.subprogs[k]
			if !sp.global || sp.verified || (c.has(btfmodel.CapVerifierGlobalMainFirst) && !sp.called) {
				continue
			}
			n0 := len(c.log)
			st, err := c.globalEntry(k)
			if err == nil {
				err = c.walkFrom(st, sp.start)
			}
			if err != nil {
				if c.has(btfmodel.CapVerifierGlobalMainFirst) {
					// 6.12 and 7.2 captures: a global function's refusal leaves only its
					// own walk in the log, from "Validating" on (the main program's lines,
					// its btf_ctx_access messages included, are gone).
					c.log = c.log[n0:]
				}
				return err
			}
			sp.verified = true
			again = true
			if c.has(btfmodel.CapVerifierGlobalMainFirst) {
				c.logx("Func#%d ('%s') is safe for any args that match its prototype", k, sp.name())
			} else {
				c.logx("Func#%d is safe for any args that match its prototype", k)
			}
		}
	}
	return nil
}
