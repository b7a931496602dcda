package verifier

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// kfunc calls: libbpf's ksym resolution, add_kfunc_call (the pre-pass) and check_kfunc_call
// (kernel/bpf/verifier.c). Which kfuncs a program type may call, and their KF_* flags, are
// the profile's registration tables (btfmodel.LookupKfunc); the prototype is the kernel
// BTF's FUNC.

// kfuncDesc is one called kfunc (struct bpf_kfunc_desc with its meta).
type kfuncDesc struct {
	name  string
	fn    *btf.Func
	proto *btf.FuncProto
	btfID uint32
	kf    btfmodel.Kfunc
	// allowed: a set this program type may use registers it (btf_kfunc_id_set_contains).
	allowed bool
}

// resolveKfuncs is libbpf's bpf_object__resolve_ksym_func_btf_id for every kfunc call the
// object names by symbol: the first FUNC of that name in vmlinux BTF (as the kernel backend
// resolves it); a name vmlinux lacks fails the load before BPF_PROG_LOAD.
func (c *checker) resolveKfuncs() error {
	c.kfuncs = map[int]*kfuncDesc{}
	off := 0
	for i := range c.prog.Instructions {
		ins := &c.prog.Instructions[i]
		raw := off
		off += int(ins.Size() / 8)
		if !ins.IsKfuncCall() || ins.Reference() == "" {
			continue
		}
		name := ins.Reference()
		fn := firstFunc(c.env.BTF, name)
		if fn == nil {
			c.logf("extern (func ksym) '%s': not found in kernel or module BTFs", name)
			return reject("ESRCH")
		}
		c.kfuncs[raw] = c.kfuncDescOf(fn)
	}
	return nil
}

// firstFunc is btf__find_by_name_kind(BTF_KIND_FUNC): the FUNC of that name with the lowest id.
func firstFunc(spec *btf.Spec, name string) *btf.Func {
	types, err := spec.AnyTypesByName(name)
	if err != nil {
		return nil
	}
	var best *btf.Func
	bestID := btf.TypeID(0)
	for _, t := range types {
		fn, ok := t.(*btf.Func)
		if !ok || fn.Name != name {
			continue
		}
		if id, err := spec.TypeID(fn); err == nil && (best == nil || id < bestID) {
			best, bestID = fn, id
		}
	}
	return best
}

func (c *checker) kfuncDescOf(fn *btf.Func) *kfuncDesc {
	d := &kfuncDesc{name: fn.Name, fn: fn}
	d.proto, _ = fn.Type.(*btf.FuncProto)
	if id, err := c.env.BTF.TypeID(fn); err == nil {
		d.btfID = uint32(id)
	}
	if c.so != nil && tcpCAKfuncs[fn.Name] {
		d.kf, d.allowed = btfmodel.Kfunc{Name: fn.Name}, true
		return d
	}
	if kf, members, ok := c.scxKfunc(fn.Name); ok { // structops.go
		d.kf, d.allowed = kf, members[c.so.member]
		return d
	}
	kf, ok := btfmodel.LookupKfunc(c.env.Kernel, fn.Name)
	if c.so != nil && ok {
		c.note("kfunc %s: a struct_ops program is given the sets tracing programs have (the model lists no other struct_ops set than bpf_tcp_ca's)", fn.Name)
	}
	switch {
	case ok:
		d.kf = kf
		d.allowed = !kf.LSMOnly || c.prog.AttachType == btfmodel.LSM
	case slices.Contains(fn.Tags, "bpf_kfunc"):
		// __bpf_kfunc marks kfuncs of every program type (and a few test functions): one the
		// tables leave out is refused, as the kernel refuses what no tracing set registers.
		c.note("kfunc %s: tagged bpf_kfunc in %s's BTF but in no set the model lists for tracing or LSM programs", fn.Name, c.env.Kernel)
	}
	return d
}

// addKfunc is add_kfunc_call for the call at insn i (a pre-pass, before the walk).
func (c *checker) addKfunc(i int) error {
	if !gplCompatible(c.prog.License) {
		c.logf("cannot call kernel function from non-GPL compatible program")
		return reject("EINVAL")
	}
	in := &c.insns[i]
	if in.imm == 0 && c.kfuncs[i] == nil {
		return nil // check_kfunc_call skips it; fixup refuses it later
	}
	if in.off != 0 {
		c.logf("kfunc offset > 0 without fd_array is invalid")
		return reject("EINVAL")
	}
	if c.kfuncs == nil {
		c.kfuncs = map[int]*kfuncDesc{}
	}
	if c.kfuncs[i] != nil {
		return c.kfuncAddCheck(c.kfuncs[i])
	}
	// An instruction list names the kfunc by its vmlinux BTF id.
	t, err := c.env.BTF.TypeByID(btf.TypeID(uint32(in.imm)))
	fn, ok := t.(*btf.Func)
	if err != nil || !ok {
		c.logf("kernel btf_id %d is not a function", uint32(in.imm))
		return reject("EINVAL")
	}
	if _, ok := fn.Type.(*btf.FuncProto); !ok {
		c.logf("kernel function btf_id %d does not have a valid func_proto", uint32(in.imm))
		return reject("EINVAL")
	}
	c.kfuncs[i] = c.kfuncDescOf(fn)
	return c.kfuncAddCheck(c.kfuncs[i])
}

// kfuncCall is check_kfunc_call for the current instruction.
func (c *checker) kfuncCall(in *insn) error {
	d := c.kfuncs[c.idx]
	if d == nil {
		return nil // imm 0: skipped, as check_kfunc_call does
	}
	// The log names the kfunc as the kernel's disassembler does: "call bpf_task_acquire#ID".
	if i := strings.LastIndex(c.cur, ") call "); i >= 0 {
		c.cur = c.cur[:i] + fmt.Sprintf(") call %s#%d", d.name, d.btfID)
	}
	if !d.allowed {
		c.logf("calling kernel function %s is not allowed", d.name)
		return reject("EACCES")
	}
	if !c.has(btfmodel.CapVerifierKfuncMeta) {
		return c.kfuncCall61(d)
	}
	sleepable := d.kf.Has(btfmodel.KFSleepable)
	if sleepable && !c.prog.Sleepable {
		c.logf("program must be sleepable to call sleepable kfunc %s", d.name)
		return reject("EACCES")
	}
	m, err := c.kfuncArgs(d)
	if err != nil {
		return err
	}
	if err := c.rcuProtected(d); err != nil {
		return err
	}
	if err := c.rcuTransition(d, sleepable); err != nil {
		return err
	}
	if err := c.kfuncSpecialCall(d, sleepable); err != nil {
		return err
	}
	return c.kfuncFinish(d, m)
}

// kfuncCall61 is 6.1's check_kfunc_call: btf_check_kfunc_arg_match, then the release.
func (c *checker) kfuncCall61(d *kfuncDesc) error {
	m, err := c.kfuncArgs61(d)
	if err != nil {
		return err
	}
	return c.kfuncFinish(d, m)
}

// kfuncClobber is check_kfunc_call's mark_reg_not_init of every caller-saved register, R0
// included: a kfunc returning void leaves R0 NOT_INIT ("R0 !read_ok" on a later read).
func (c *checker) kfuncClobber() {
	c.clobberCallerSaved()
	c.st.regs[0] = reg{}
}

// allocKfunc are the acquire kfuncs that return program-local objects (void *), not
// PTR_TO_BTF_ID of a kernel type.
var allocKfunc = map[string]bool{"bpf_obj_new_impl": true, "bpf_percpu_obj_new_impl": true, "bpf_obj_new": true, "bpf_percpu_obj_new": true}

// kfuncRet sets R0 from the prototype's return type (check_kfunc_call's tail).
func (c *checker) kfuncRet(d *kfuncDesc, m *kfuncMeta) error {
	rt := skipMods(d.proto.Return)
	acquire := d.kf.Has(btfmodel.KFAcquire)
	ptr, isPtr := rt.(*btf.Pointer)
	var target btf.Type
	if isPtr {
		target = skipMods(ptr.Target)
	}
	if acquire && (!isPtr || !isStructOrUnion(target)) && !allocKfunc[d.name] {
		c.logf("acquire kernel function does not return PTR_TO_BTF_ID")
		return reject("EINVAL")
	}
	switch {
	case rt == nil:
		return nil // void
	case !isPtr:
		if _, ok := rt.(*btf.Void); ok {
			return nil
		}
		c.setReg(0, mkScalar(unknownScalar()))
		return nil
	}
	if err := c.kfuncObjNewBTF(d); err != nil {
		return err
	}
	var r0 reg
	switch {
	case d.name == "bpf_dynptr_slice" || d.name == "bpf_dynptr_slice_rdwr":
		if !m.constFound {
			c.logf("verifier internal error: bpf_dynptr_slice(_rdwr) no constant size")
			return reject("EFAULT")
		}
		r0 = reg{typ: ptrToMem, memSize: int(m.constVal), v: constScalar(0)}
		if d.name == "bpf_dynptr_slice" {
			r0.flags |= flagRdonly
		}
	case d.name == "bpf_rdonly_cast":
		// The type comes from the constant btf_id__k argument, not from the prototype.
		t, err := c.env.BTF.TypeByID(btf.TypeID(m.constVal))
		_, isVoid := t.(*btf.Void)
		switch {
		case err == nil && isStructOrUnion(t):
			r0 = reg{typ: ptrToBTFID, flags: flagUntrusted, btfType: t, v: constScalar(0), path: "bpf_rdonly_cast()"}
		case c.has(btfmodel.CapVerifierRdonlyCastVoid) && (m.constVal == 0 || isVoid):
			r0 = reg{typ: ptrToMem, flags: flagRdonly | flagUntrusted, v: constScalar(0)}
		case c.has(btfmodel.CapVerifierRdonlyCastVoid):
			c.logf("kfunc bpf_rdonly_cast type ID argument must be of a struct or void")
			return reject("EINVAL")
		default:
			c.logf("kfunc bpf_rdonly_cast type ID argument must be of a struct")
			return reject("EINVAL")
		}
	case isStructOrUnion(target):
		r0 = reg{typ: ptrToBTFID, btfType: target, v: constScalar(0), path: d.name + "()"}
		switch {
		case d.kf.Has(btfmodel.KFRCUProtected):
			// check_kfunc_call: what a KF_RCU_PROTECTED kfunc returns lives only as long as
			// the RCU section (the kfunc probe: 7.2's scx_bpf_cpu_curr is rcu_ptr_or_null_)
			r0.flags |= flagRCU
		case c.has(btfmodel.CapVerifierKfuncRetTrusted) && c.has(btfmodel.CapVerifierTrustedPtr):
			r0.flags |= flagTrusted
		}
	default:
		if m.r0Size == 0 && c.has(btfmodel.CapVerifierKfuncMeta) {
			// A pointer to a sized type is read-only memory of that size.
			if _, size, _, _, ok := resolveSize(target); ok && size > 0 {
				m.r0Size, m.r0Rdonly = size, true
			}
		}
		if m.r0Size == 0 {
			c.logf("kernel function %s returns pointer type %s %s is not supported", d.name, kindStr(target), btfName(target))
			return reject("EINVAL")
		}
		r0 = reg{typ: ptrToMem, memSize: m.r0Size, v: constScalar(0), refObjID: m.refObjID}
		if m.r0Rdonly {
			r0.flags |= flagRdonly
		}
	}
	if d.kf.Has(btfmodel.KFRetNull) {
		r0.flags |= flagMaybeNull
		r0.id = c.newID()
	}
	if acquire {
		id := c.acquireRef()
		r0.refObjID = id
		if r0.flags&flagMaybeNull != 0 {
			r0.id = id // the NULL check releases the reference on the NULL branch
		}
	}
	c.setReg(0, r0)
	if d.kf.Has(btfmodel.KFIterNext) {
		return c.iterNext()
	}
	return nil
}

// iterNextAt: the insn calls an iterator's next kfunc, a forced checkpoint where loops
// converge (check_cfg's mark_force_checkpoint, is_state_visited's is_iter_next_insn).
func (c *checker) iterNextAt(i int) bool {
	d := c.kfuncs[i]
	return d != nil && d.kf.Has(btfmodel.KFIterNext)
}

// iterNext is process_iter_next_call: the active iterator continues in a pushed state with
// R0 not NULL; this path is the drained one, R0 NULL. The iterator's own stack state
// (active, drained, depth) is not modelled: the loop converges as its registers do.
func (c *checker) iterNext() error {
	active := c.st.clone()
	active.regs[0].flags &^= flagMaybeNull
	active.regs[0].id = 0
	active.iterDepth++
	c.widenImprecise(active) // widen_imprecise_scalars (iter.go)
	if err := c.push(active, c.idx+1); err != nil {
		return err
	}
	c.setReg(0, mkScalar(constScalar(0)))
	return nil
}

// rcuProtected checks KF_RCU_PROTECTED: 7.2 at the call; 6.12 at the iterator's next and
// destroy (mark_stack_slots_iter made it PTR_UNTRUSTED outside an RCU read section). The
// model has no iterator slots: it asks whether the section holds at next/destroy.
func (c *checker) rcuProtected(d *kfuncDesc) error {
	if c.inRCUCS() {
		return nil
	}
	if c.has(btfmodel.CapVerifierRCUProtectedCall) {
		if d.kf.Has(btfmodel.KFRCUProtected) {
			c.logf("kernel func %s requires RCU critical section protection", d.name)
			return reject("EACCES")
		}
		return nil
	}
	if !d.kf.Has(btfmodel.KFIterNext) && !d.kf.Has(btfmodel.KFIterDestroy) {
		return nil
	}
	base := strings.TrimSuffix(strings.TrimSuffix(d.name, "_next"), "_destroy")
	if nk, ok := btfmodel.LookupKfunc(c.env.Kernel, base+"_new"); ok && nk.Has(btfmodel.KFRCUProtected) {
		c.logf("expected an RCU CS when using %s", d.name)
		return reject("EPROTO")
	}
	return nil
}

// inRCUCS is in_rcu_cs: inside bpf_rcu_read_lock, or any non-sleepable program.
func (c *checker) inRCUCS() bool {
	return c.st.rcuLock > 0 || !c.prog.Sleepable
}

// rcuTransition is check_kfunc_call's bpf_rcu_read_lock/unlock handling.
func (c *checker) rcuTransition(d *kfuncDesc, sleepable bool) error {
	lock, unlock := d.name == "bpf_rcu_read_lock", d.name == "bpf_rcu_read_unlock"
	switch {
	case c.st.rcuLock > 0 && lock:
		if !c.has(btfmodel.CapVerifierRCUNesting) {
			c.logf("nested rcu read lock (kernel function %s)", d.name)
			return reject("EINVAL")
		}
		c.st.rcuLock++
	case c.st.rcuLock > 0 && unlock:
		c.st.rcuLock--
		if c.st.rcuLock == 0 {
			c.rcuUnlocked()
		}
	case c.st.rcuLock > 0 && sleepable:
		c.logf("kernel func %s is sleepable within rcu_read_lock region", d.name)
		return reject("EACCES")
	case lock:
		c.st.rcuLock = 1
	case unlock:
		c.logf("unmatched rcu read unlock (kernel function %s)", d.name)
		return reject("EINVAL")
	}
	return nil
}

// rcuUnlocked makes every MEM_RCU pointer untrusted, as bpf_rcu_read_unlock does (registers
// and spilled registers alike).
func (c *checker) rcuUnlocked() {
	fix := func(r *reg) {
		if r.typ == ptrToBTFID && r.flags&flagRCU != 0 {
			r.flags &^= flagRCU | flagMaybeNull
			r.flags |= flagUntrusted
		}
	}
	for n := 0; n <= c.st.curframe(); n++ {
		f := c.st.frameAt(n)
		for k := range f.regs {
			fix(&f.regs[k])
		}
		for s := range f.spill {
			if f.stack[s*regSize] == stackSpill {
				fix(&f.spill[s])
			}
		}
	}
}

// helperInRCU is check_helper_call's refusal of a helper that might sleep inside an RCU
// region.
func (c *checker) helperInRCU(name string, id int32, mightSleep bool) error {
	if c.st.rcuLock > 0 && mightSleep {
		c.logf("sleepable helper %s#%d in rcu_read_lock region", name, id)
		return reject("EINVAL")
	}
	return nil
}

// kfuncFinish releases a KF_RELEASE argument's reference, clobbers the caller-saved
// registers and sets R0: the end of check_kfunc_call on every version.
func (c *checker) kfuncFinish(d *kfuncDesc, m *kfuncMeta) error {
	if m.releaseRegno != 0 {
		if !c.releaseRef(c.st.regs[m.releaseRegno].refObjID) {
			c.logf("kfunc %s#%d reference has not been acquired before", d.name, d.btfID)
			return reject("EINVAL")
		}
	}
	if d.name == "bpf_throw" && !btfmodel.VerifierFor(c.env.Arch, c.env.Kernel).Exceptions {
		c.logf("JIT does not support calling kfunc %s#%d", d.name, d.btfID)
		return reject("ENOTSUPP")
	}
	c.kfuncClobber()
	return c.kfuncRet(d, m)
}
