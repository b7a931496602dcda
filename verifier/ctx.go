package verifier

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// ctx access for TRACING and LSM programs: check_ptr_off_reg and check_ctx_access
// (kernel/bpf/verifier.c), bpf_tracing_btf_ctx_access (include/linux/bpf.h),
// btf_ctx_access and btf_ctx_arg_idx (kernel/bpf/btf.c).

const maxFuncArgs = 12 // MAX_BPF_FUNC_ARGS

// untrustedLSMHooks is untrusted_lsm_hooks (kernel/bpf/bpf_lsm.c, 6.12).
var untrustedLSMHooks = map[string]bool{
	"bpf_lsm_bpf_map_free": true, "bpf_lsm_bpf_prog_free": true, "bpf_lsm_file_alloc_security": true,
	"bpf_lsm_file_free_security": true, "bpf_lsm_sk_alloc_security": true, "bpf_lsm_sk_free_security": true,
	"bpf_lsm_task_free": true,
}

// boolLSMHooks is bool_lsm_hooks (6.12): hooks returning 0/1.
var boolLSMHooks = map[string]bool{
	"bpf_lsm_audit_rule_known": true, "bpf_lsm_inode_xattr_skipcap": true, "bpf_lsm_xfrm_state_pol_flow_match": true,
}

func (c *checker) ctxAccess(regno uint8, r *reg, off, size int, write bool, value int) error {
	k := c.env.Kernel
	ts := regTypeStr(k, r)
	if c.has(btfmodel.CapVerifierCtxFixedOff) {
		// __check_ptr_off_reg with fixed_off_ok: TRACING and LSM have no
		// convert_ctx_access, so a constant offset joins the access offset.
		if !r.v.isConst() {
			c.logf("variable %s access var_off=%s disallowed", ts, r.v.t)
			return reject("EACCES")
		}
		if fixed := int64(r.off) + int64(r.v.val()); fixed < 0 {
			c.logf("negative offset %s ptr R%d off=%d disallowed", ts, regno, fixed)
			return reject("EACCES")
		}
		off += int(int64(r.v.val())) // memAccess added r.off
	} else if r.off < 0 {
		// __check_ptr_off_reg with fixed_off_ok = false (6.1 and 6.12).
		c.logf("negative offset %s ptr R%d off=%d disallowed", ts, regno, r.off)
		return reject("EACCES")
	} else if r.off != 0 {
		c.logf("dereference of modified %s ptr R%d off=%d disallowed", ts, regno, r.off)
		return reject("EACCES")
	} else if !r.v.isConst() || r.v.val() != 0 {
		c.logf("variable %s access var_off=%s disallowed", ts, r.v.t)
		return reject("EACCES")
	}
	if r, ok := c.qdiscToFree(off, write); ok {
		if value >= 0 {
			c.setReg(uint8(value), r)
			c.explain(fmt.Sprintf("r%d = ctx[%d] (struct sk_buff **to_free) -> PTR_TO_BTF_ID bpf_sk_buff_ptr (trusted)", value, off/8))
		}
		return nil
	}
	ok := true
	if c.prog.AttachType != btfmodel.LSM {
		// bpf_tracing_btf_ctx_access: silent pre-checks.
		ok = off >= 0 && off < 8*maxFuncArgs && !write && off%size == 0
	}
	var res reg
	var expl string
	if ok {
		ok, res, expl = c.btfCtxAccess(off, size)
	}
	if !ok {
		c.logf("invalid bpf_context access off=%d size=%d", off, size)
		return reject("EACCES")
	}
	if write || value < 0 {
		return nil
	}
	c.setReg(uint8(value), res)
	kind := "SCALAR"
	if res.typ == ptrToBTFID {
		kind = "PTR_TO_BTF_ID " + btfName(res.btfType)
		if f := flagWords(res.flags); f != "" {
			kind += " " + f
		}
	}
	c.explain(fmt.Sprintf("r%d = ctx[%d] (%s) -> %s", value, off/8, expl, kind))
	return nil
}

func flagWords(f typeFlag) string {
	var w []string
	for _, x := range []struct {
		f typeFlag
		s string
	}{{flagTrusted, "trusted"}, {flagUntrusted, "untrusted"}, {flagRCU, "rcu"}, {flagMaybeNull, "maybe-null"}, {flagUser, "user"}, {flagPercpu, "percpu"}} {
		if f&x.f != 0 {
			w = append(w, x.s)
		}
	}
	if len(w) == 0 {
		return ""
	}
	return "(" + strings.Join(w, ", ") + ")"
}

// ctxArgIdx is btf_ctx_arg_idx: off compared unsigned, so negative offsets land past the end.
func (c *checker) ctxArgIdx(off int) int {
	acc := uint32(0)
	for i, p := range c.proto.Params {
		acc += uint32(ctxSlotSize(p.Type))
		if uint32(off) < acc {
			return i
		}
	}
	acc += uint32(ctxSlotSize(c.proto.Return))
	if uint32(off) < acc {
		return len(c.proto.Params)
	}
	return len(c.proto.Params) + 1
}

// btfCtxAccess is btf_ctx_access: whether the access is valid, the loaded register, and
// the C description of the slot.
func (c *checker) btfCtxAccess(off, size int) (bool, reg, string) {
	k := c.env.Kernel
	tname := c.prog.Target
	if c.so != nil {
		tname = c.so.member // attach_func_name is the member's name
	}
	if off%8 != 0 {
		c.logf("func '%s' offset %d is not multiple of 8", tname, off)
		return false, reg{}, ""
	}
	arg := c.ctxArgIdx(off)
	params := c.proto.Params
	if c.prog.AttachType == btfmodel.RawTP {
		// btf_ctx_access: skip the typedef's first 'void *__data' parameter (the slot index
		// was computed with it, as btf_ctx_arg_idx does).
		params = params[1:]
	}
	nr := len(params)
	if arg > nr {
		c.logf("func '%s' doesn't have %d-th argument", tname, arg+1)
		return false, reg{}, ""
	}
	var t btf.Type
	var desc, pname string
	isRetval := false
	if arg == nr {
		switch c.prog.AttachType {
		case btfmodel.LSM:
			isRetval = true
		case btfmodel.Fexit:
		case btfmodel.ModRet:
			rt := skipMods(c.proto.Return)
			if i, ok := rt.(*btf.Int); !ok || i.Size > 8 {
				c.logf("ret type %s not allowed for fmod_ret", kindStr(rt))
				return false, reg{}, ""
			}
		default:
			c.logf("func '%s' doesn't have %d-th argument", tname, arg+1)
			return false, reg{}, ""
		}
		t = c.proto.Return
		desc = "return value, " + btfmodel.CName(t)
	} else {
		t = params[arg].Type
		pname = params[arg].Name
		desc = btfmodel.CName(t)
	}
	declared := t
	t = skipMods(t)
	scalarRes := func() (bool, reg, string) {
		s := unknownScalar()
		if isRetval && c.has(btfmodel.CapVerifierLSMRetRange) {
			lo, hi := int64(-4095), int64(0)
			if boolLSMHooks[c.prog.Target] {
				lo, hi = 0, 1
			}
			s.s32min, s.s32max = int32(lo), int32(hi)
			s.smin, s.smax = lo, hi
			s.sync()
		}
		return true, mkScalar(s), desc
	}
	switch tt := t.(type) {
	case *btf.Int:
		if tt.Size <= 8 {
			return scalarRes()
		}
	case *btf.Enum, *btf.Struct, *btf.Union:
		if sz := ctxSlotSize(declared); sz > 8 {
			desc += fmt.Sprintf(", slot %d of %d", (off-c.slotStart(arg))/8+1, sz/8)
		}
		return scalarRes()
	}
	ptr, ok := t.(*btf.Pointer)
	if !ok {
		c.logf("func '%s' arg%d '%s' has type %s. Only pointer access is allowed", tname, arg, btfName(t), kindStr(t))
		return false, reg{}, ""
	}
	if size != 8 && k.Has(btfmodel.CapVerifierCtxArgSize8) {
		c.logf("func '%s' size %d must be 8", tname, size)
		return false, reg{}, ""
	}
	_, void := ptr.Target.(*btf.Void)
	if _, cvoid := skipMods(ptr.Target).(*btf.Void); cvoid && k.Has(btfmodel.CapVerifierConstVoidPtrArg) {
		void = true
	}
	if void {
		return true, mkScalar(unknownScalar()), desc
	}
	if _, isInt := skipMods(ptr.Target).(*btf.Int); isInt {
		return true, mkScalar(unknownScalar()), desc
	}
	var flags typeFlag
	if r, ok := c.structOpsArgInfo(arg, skipMods(ptr.Target), pname); ok {
		return true, r, desc // ctx_arg_info (structops.go)
	}
	if k.Has(btfmodel.CapVerifierNullableArgs) && strings.HasSuffix(pname, "__nullable") {
		flags |= flagMaybeNull
	}
	if k.Has(btfmodel.CapVerifierLSMTrustedArgs) && c.prog.AttachType == btfmodel.LSM && !untrustedLSMHooks[c.prog.Target] {
		flags |= flagTrusted
	}
	if c.prog.AttachType == btfmodel.StructOps && k.Has(btfmodel.CapVerifierRawTPTrustedArgs) {
		flags |= flagTrusted // prog_args_trusted: every struct_ops argument
	}
	rawTPErr := false
	if c.prog.AttachType == btfmodel.RawTP {
		// prog_args_trusted, and raw_tp_null_args (kernel/bpf/btf.c).
		if k.Has(btfmodel.CapVerifierRawTPTrustedArgs) {
			flags |= flagTrusted
		}
		maybeNull, isErr := k.RawTPArgFlags(c.prog.Target, arg)
		if maybeNull {
			flags |= flagMaybeNull
		}
		rawTPErr = isErr
	}
	switch typeTag(ptr.Target) {
	case "user":
		flags |= flagUser
	case "percpu":
		flags |= flagPercpu
	}
	st := skipMods(ptr.Target)
	if !isStructOrUnion(st) {
		c.logf("func '%s' arg%d type %s is not a struct", tname, arg, kindStr(st))
		return false, reg{}, ""
	}
	id, _ := c.env.BTF.TypeID(st)
	c.logf("func '%s' arg%d has btf_id %d type %s '%s'", tname, arg, id, kindStr(st), btfName(st))
	if rawTPErr {
		c.logf("marking pointer arg%d as scalar as it may encode error", arg)
		return true, mkScalar(unknownScalar()), desc
	}
	if pname == "" && c.prog.AttachType == btfmodel.RawTP {
		pname = fmt.Sprintf("arg%d", arg)
	}
	r := reg{typ: ptrToBTFID, flags: flags, btfType: st, v: constScalar(0), path: pname}
	if isRetval || arg == nr {
		r.path = "ret"
	}
	if flags&flagMaybeNull != 0 {
		r.id = c.newID()
	}
	if c.so != nil {
		c.structOpsPromote(&r)
	}
	return true, r, desc
}

// slotStart is the ctx offset where argument arg begins.
func (c *checker) slotStart(arg int) int {
	s := 0
	params := c.proto.Params
	if c.prog.AttachType == btfmodel.RawTP {
		params = params[1:]
	}
	for i := 0; i < arg; i++ {
		s += ctxSlotSize(params[i].Type)
	}
	return s
}
