package verifier

import (
	"fmt"
	"math"
	"strings"
	"unicode"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// Helper calls: check_helper_call, check_func_arg, check_mem_size_reg,
// check_helper_mem_access (kernel/bpf/verifier.c); the prototypes are in helper_protos.go,
// the BTF, ring buffer and spin lock arguments in helper_args.go and helper_spinlock.go.

// helperName is func_id_name: "bpf_" + the helper's name, "unknown" past the profile's
// __BPF_FUNC_MAX_ID.
func (c *checker) helperName(id int32) string {
	if id >= c.maxFuncID() {
		return "unknown"
	}
	return helperName(id)
}

func helperName(id int32) string {
	if id < 0 || id >= 212 {
		return "unknown"
	}
	if id == 147 {
		return "bpf_d_path" // cilium/ebpf spells it FnDPath
	}
	s := strings.TrimPrefix(asm.BuiltinFunc(id).String(), "Fn")
	var b strings.Builder
	b.WriteString("bpf_")
	for i, r := range s {
		if unicode.IsUpper(r) && i > 0 {
			p := rune(s[i-1])
			if unicode.IsLower(p) || unicode.IsDigit(p) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// maxFuncID is __BPF_FUNC_MAX_ID.
func (c *checker) maxFuncID() int32 {
	if !c.has(btfmodel.CapHelperCgrpStorage) {
		return 210
	}
	return 212
}

// helperProto is get_helper_proto: the prototype the program's type gets, if any.
func (c *checker) helperProto(id int32) (helperProto, bool) {
	if c.so != nil {
		p, ok := c.structOpsHelperProto(id) // structops.go
		if ok && p.sleepOnly && !c.has(btfmodel.CapVerifierHelperMightSleep) && !c.prog.Sleepable {
			return p, false
		}
		return p, ok
	}
	lsm := c.prog.AttachType == btfmodel.LSM
	if p, ok := lsmProtos[id]; ok && lsm {
		return p, true
	}
	proto, ok := helperProtos[id]
	if !ok || (proto.lsmOnly && !lsm) {
		return proto, false
	}
	if proto.sleepOnly && !c.has(btfmodel.CapVerifierHelperMightSleep) && !c.prog.Sleepable {
		return proto, false
	}
	if (id == 210 || id == 211) && !c.has(btfmodel.CapHelperCgrpStorage) {
		return proto, false
	}
	if !c.helperOffered(id, proto) { // tpbtf.go: tp_btf has no trampoline
		return proto, false
	}
	return proto, true
}

// helperMeta is struct bpf_call_arg_meta, reduced.
type helperMeta struct {
	mapIdx     int
	memRegno   uint8
	memIsWrite bool
	memSize    int // the last size argument's maximum (msize_max_value)
	allocSize  int // ARG_CONST_ALLOC_SIZE_OR_ZERO's constant
	releaseID  uint32
	constKeyOK bool // a constant key within an array's max_entries (can_elide_value_nullness)
}

func (c *checker) call(in *insn) error {
	id := in.imm
	name := c.helperName(id)
	if id < 0 || id >= c.maxFuncID() {
		c.logf("invalid func %s#%d", name, id)
		return reject("EINVAL")
	}
	proto, avail := c.helperProto(id)
	unmodelled := availableUnmodelled[id] || (c.prog.AttachType == btfmodel.LSM && lsmOnlyUnmodelled[id])
	if c.so != nil {
		unmodelled = availableUnmodelled[id] && c.structOpsOffers(id) // structops.go
	}
	if !avail && !unmodelled {
		if !c.has(btfmodel.CapVerifierHelperProtoMsg) {
			c.logf("unknown func %s#%d", name, id)
		} else {
			c.logf("program of this type cannot use helper %s#%d", name, id)
		}
		return reject("EINVAL")
	}
	switch id {
	case helperForEachMapElem, helperLoop: // callbacks, callback.go
		return c.callbackCall(in, id)
	case helperPerCPUPtr, helperThisCPUPtr: // percpu __ksym variables, ksym.go
		return c.percpuPtrCall(id, name)
	}
	if id >= helperDynptrFirst && id <= helperDynptrLast { // dynptr.go
		return c.dynptrHelperCall(id, name)
	}
	if unmodelled {
		c.note("helper %s#%d is not modelled: arguments unchecked, R0 unknown", name, id)
		c.clobberCallerSaved()
		c.setReg(0, mkScalar(unknownScalar()))
		return nil
	}
	if proto.gplOnly && !gplCompatible(c.prog.License) {
		c.logf("cannot call GPL-restricted function from non-GPL compatible program")
		return reject("EINVAL")
	}
	if proto.allowed != nil && !proto.allowed(c) {
		c.logf("helper call is not allowed in probe")
		return reject("EINVAL")
	}
	if proto.mightSleep && c.has(btfmodel.CapVerifierSleepableHelperMsg) {
		// 7.2 check_helper_call: one in_sleepable_context test, the region named by
		// non_sleepable_context_description (an RCU region before the program's kind).
		if where := c.nonSleepableContext(); where != "" {
			c.logf("sleepable helper %s#%d in %s", name, id, where)
			return reject("EINVAL")
		}
	}
	if proto.mightSleep && c.has(btfmodel.CapVerifierHelperMightSleep) && !c.prog.Sleepable {
		c.logf("helper call might sleep in a non-sleepable prog")
		return reject("EINVAL")
	}
	if err := c.helperInRCU(name, id, proto.mightSleep); err != nil { // kfunc.go
		return err
	}
	meta := helperMeta{mapIdx: -1}
	for i, a := range proto.args {
		if err := c.helperArg(uint8(i+1), a, &proto, &meta, id, name); err != nil {
			return err
		}
	}
	if err := c.checkGetFuncIP(id, name); err != nil { // tpbtf.go
		return err
	}
	if id == 173 && c.prog.AttachType == btfmodel.LSM {
		c.logf("func %s#%d not supported for program type %d", name, id, 29)
		return reject("ENOTSUPP")
	}
	if meta.releaseID != 0 {
		c.releaseHelperRef(meta.releaseID)
	}
	c.clobberCallerSaved()
	switch proto.ret {
	case retInt:
		c.setReg(0, c.retvalRange(id, &meta))
	case retVoid:
		c.st.regs[0] = reg{}
		c.scratch[0] = true
	case retMapValueOrNull:
		if meta.constKeyOK {
			// 7.2: the lookup cannot fail; a value with a lock still gets an id for it.
			r := reg{typ: ptrToMapValue, mapIdx: meta.mapIdx, v: constScalar(0)}
			if spinLockOff(&c.prog.Maps[meta.mapIdx]) >= 0 {
				r.id, r.flags = c.newID(), flagLockVal
			}
			c.setReg(0, r)
			break
		}
		r := reg{typ: ptrToMapValue, flags: flagMaybeNull, mapIdx: meta.mapIdx, v: constScalar(0), id: c.newID()}
		if spinLockOff(&c.prog.Maps[meta.mapIdx]) >= 0 {
			r.flags |= flagLockVal
		}
		c.setReg(0, r)
	case retTaskBTF:
		var task *btf.Struct
		_ = c.env.BTF.TypeByName("task_struct", &task)
		r := reg{typ: ptrToBTFID, btfType: task, v: constScalar(0), path: "current"}
		if c.has(btfmodel.CapVerifierTrustedPtr) {
			r.flags = flagTrusted
		}
		c.setReg(0, r)
	case retBTFID, retBTFIDOrNull:
		var s *btf.Struct
		_ = c.env.BTF.TypeByName(proto.retBTF, &s)
		r := reg{typ: ptrToBTFID, btfType: s, v: constScalar(0), path: name + "()"}
		if proto.ret == retBTFIDOrNull {
			r.flags, r.id = flagMaybeNull, c.newID()
		}
		c.setReg(0, r)
	case retRingbufMemOrNull:
		// The maybe-NULL id first, then the reference's (acquire_reference_state), which
		// becomes the register's id as well.
		c.newID()
		ref := c.acquireRef()
		c.setReg(0, reg{typ: ptrToMem, flags: flagRingbuf | flagMaybeNull, memSize: meta.allocSize,
			v: constScalar(0), id: ref, refObjID: ref})
	}
	return c.mapFuncCompat(meta.mapIdx, id, &proto, name)
}

func (c *checker) clobberCallerSaved() {
	for r := uint8(1); r <= 5; r++ {
		c.st.regs[r] = reg{}
		c.scratch[int(r)] = true
	}
}

// mapFuncCompat is check_map_func_compatibility, which the kernel runs once the arguments
// and R0 are set.
func (c *checker) mapFuncCompat(mapIdx int, id int32, proto *helperProto, name string) error {
	if mapIdx < 0 {
		return nil
	}
	m := c.prog.Maps[mapIdx]
	ok := true
	if only, restricted := mapOnlyFuncs[m.Type]; restricted {
		ok = false
		for _, f := range only {
			ok = ok || f == id
		}
	}
	if ok && proto.maps != nil {
		ok = false
		for _, t := range proto.maps {
			ok = ok || t == m.Type
		}
	}
	if ok {
		return nil
	}
	c.logf("cannot pass map_type %d into func %s#%d", mapTypeNum(m.Type), name, id)
	return reject("EINVAL")
}

// helperArg is check_func_arg for argument regno.
func (c *checker) helperArg(regno uint8, a argKind, proto *helperProto, meta *helperMeta, id int32, name string) error {
	if a == argDontCare {
		return nil
	}
	if err := c.readReg(regno); err != nil {
		return err
	}
	r := c.st.regs[regno]
	if a == argAnything {
		return nil
	}
	if id == 147 && regno == 2 && !c.has(btfmodel.CapHelperDPathUninitBuf) {
		a = argMem // 6.1: bpf_d_path reads its buffer
	}
	if ((id == 67 && regno == 2) || (id == 149 && regno == 1)) && !c.has(btfmodel.CapHelperGetStackUninitBuf) {
		a = argMem // 6.1: so do bpf_get_stack_proto_raw_tp and bpf_snprintf_btf
	}
	// An _OR_NULL argument may be the constant 0 (register_is_null): no type check.
	if r.typ == scalarValue && r.v.isConst() && r.v.val() == 0 {
		switch {
		case a == argMapValueOrNull, a == argMemOrNull:
			return nil
		case a == argBTFIDOrNull && c.has(btfmodel.CapHelperStorageOwnerOrNull):
			return nil
		}
	}
	switch a {
	case argBTFID, argBTFIDOrNull, argSockCommon:
		return c.btfIDArg(regno, &r, a, proto.btfID)
	case argRingbufMem:
		return c.ringbufMemArg(regno, &r, meta)
	case argSpinLock:
		if err := c.spinLockArgType(regno, &r); err != nil {
			return err
		}
		return c.processSpinLock(regno, &r, id == 93)
	case argConstStr:
		return c.constStrArg(regno, &r)
	case argMapValueOrNull:
		a = argMapValue
	case argMemOrNull:
		a = argMem
	}
	if err := c.argType(regno, &r, a, name); err != nil {
		return err
	}
	switch a {
	case argCtx:
		return c.argCtxOff(regno, &r)
	case argConstMap:
		meta.mapIdx = r.mapIdx
	case argMapKey, argMapValue, argUninitMapValue:
		if meta.mapIdx < 0 {
			c.logf("invalid map_ptr to access map->key")
			return reject("EACCES")
		}
		m := c.prog.Maps[meta.mapIdx]
		size := int(m.KeySize)
		if a != argMapKey {
			size = int(m.ValueSize)
		} else if id == 1 && (m.Type == "array" || m.Type == "percpu_array") && c.has(btfmodel.CapVerifierConstKeyNotNull) {
			k, ok := c.constMapKey(&r, size)
			meta.constKeyOK = ok && k < uint64(m.MaxEntries)
		}
		return c.helperMem(regno, &r, size, false, a == argUninitMapValue)
	case argMem, argUninitMem:
		meta.memRegno, meta.memIsWrite = regno, a == argUninitMem
	case argAllocSize:
		if !r.v.isConst() {
			c.logf("R%d is not a known constant'", regno)
			return reject("EACCES")
		}
		meta.allocSize = int(r.v.val())
	case argConstSize, argConstSizeOrZero:
		return c.sizeArg(regno, &r, a == argConstSizeOrZero, meta)
	case argLong:
		if err := c.helperMem(regno, &r, 8, false, true); err != nil {
			return err
		}
		if r.typ == ptrToStack || r.typ == ptrToMapValue {
			t := r.v.t.add(tconst(uint64(int64(r.off))))
			if !t.aligned(8) {
				desc := "stack "
				if r.typ == ptrToMapValue {
					desc = "value "
				}
				c.misaligned(desc, &r, 0, 8)
				return reject("EACCES")
			}
		}
	}
	return nil
}

// sizeArg is check_mem_size_reg: the size of the memory in the argument before.
func (c *checker) sizeArg(regno uint8, r *reg, zeroOK bool, meta *helperMeta) error {
	if r.v.smin < 0 {
		c.logf("R%d min value is negative, either use unsigned or 'var &= const'", regno)
		return reject("EACCES")
	}
	if r.v.umin == 0 && !zeroOK {
		if !c.has(btfmodel.CapVerifierMemSizeRaw) {
			// 6.1 checks the memory with size 0 first: its words, not the size's.
			return c.zeroSized61(meta.memRegno)
		}
		c.logf("R%d invalid zero-sized read: u64=[%d,%d]", regno, r.v.umin, r.v.umax)
		return reject("EACCES")
	}
	if r.v.umax >= maxVarOff {
		c.logf("R%d unbounded memory access, use 'var &= const' or 'if (var < const)'", regno)
		return reject("EACCES")
	}
	meta.memSize = int(r.v.umax)
	mr := c.st.regs[meta.memRegno]
	// 6.1 drops raw mode for a variable size: the memory must be initialised.
	write := meta.memIsWrite && (c.has(btfmodel.CapVerifierMemSizeRaw) || r.v.isConst())
	return c.helperMem(meta.memRegno, &mr, int(r.v.umax), zeroOK, write)
}

// argType is check_reg_type: the register's type must be one the argument accepts.
func (c *checker) argType(regno uint8, r *reg, a argKind, helper string) error {
	var ok bool
	var expected string
	memTypes := "fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_"
	if !c.has(btfmodel.CapVerifierMapArgAsMem) {
		memTypes = "fp, pkt, pkt_meta, map_key, map_value, mem, alloc_mem, buf"
	}
	if c.has(btfmodel.CapVerifierCtxAsMem) {
		memTypes += ", ctx" // the message only: ctx as helper memory is not modelled
	}
	plain := r.flags&flagMaybeNull == 0
	trusted := c.has(btfmodel.CapVerifierTrustedPtr) && r.typ == ptrToBTFID && r.isTrusted() && r.flags&flagRCU == 0
	switch a {
	case argCtx:
		ok, expected = r.typ == ptrToCtx, "ctx"
	case argConstMap:
		ok, expected = r.typ == constPtrToMap, "map_ptr"
	case argMapKey, argMapValue, argUninitMapValue:
		ok = plain && (r.typ == ptrToStack || r.typ == ptrToMapValue || trusted)
		expected = "fp, pkt, pkt_meta, map_key, map_value"
		if c.has(btfmodel.CapVerifierMapArgAsMem) {
			expected = memTypes // 6.12 checks map keys and values as memory
			ok = ok || plain && r.typ == ptrToMem
		}
	case argMem, argUninitMem:
		ok = plain && (r.typ == ptrToStack || r.typ == ptrToMapValue || r.typ == ptrToMem || trusted)
		expected = memTypes
	case argConstSize, argConstSizeOrZero, argAllocSize:
		ok, expected = r.typ == scalarValue, "scalar"
	case argLong:
		// Both profiles: fixed-size uninit memory (Debian's 6.1 has the 2024 backport).
		ok = plain && (r.typ == ptrToStack || r.typ == ptrToMapValue || r.typ == ptrToMem || trusted)
		expected = memTypes
	}
	if ok && trusted && a != argMem {
		// 6.12 check_reg_type: a trusted BTF pointer is memory only for MEM_RDONLY arguments.
		c.logf("%s() may write into memory pointed by R%d type=%s", helper, regno, regTypeStr(c.env.Kernel, r))
		return reject("EACCES")
	}
	if ok {
		return nil
	}
	c.logf("R%d type=%s expected=%s", regno, regTypeStr(c.env.Kernel, r), expected)
	return reject("EACCES")
}

// zeroSized61 is 6.1's check_helper_mem_access with size 0 when zero is not allowed.
func (c *checker) zeroSized61(regno uint8) error {
	r := c.st.regs[regno]
	switch r.typ {
	case ptrToStack:
		c.logf("invalid zero-sized read")
	case ptrToMapValue:
		c.logf("invalid access to map value, value_size=%d off=%d size=0", c.prog.Maps[r.mapIdx].ValueSize, r.off)
		c.logf("R%d min value is outside of the allowed memory range", regno)
	case ptrToMem:
		c.logf("invalid access to memory, mem_size=%d off=%d size=0", r.memSize, r.off)
		c.logf("R%d min value is outside of the allowed memory range", regno)
	default:
		c.logf("R%d invalid zero-sized read", regno+1)
	}
	return reject("EACCES")
}

// misaligned is check_{ptr,stack}_alignment's message; without reg->off (7.2) the pointer's
// constant offset is printed inside var_off.
func (c *checker) misaligned(desc string, r *reg, off, size int) {
	if c.has(btfmodel.CapVerifierNoRegOff) {
		c.logf("misaligned %saccess off %s+%d size %d", desc, c.varOffStr(r.v.t.add(tconst(uint64(int64(r.off))))), off, size)
		return
	}
	c.logf("misaligned %saccess off %s+%d+%d size %d", desc, c.varOffStr(r.v.t), r.off, off, size)
}

// varOffMsg is the var_off and off a variable-offset message prints for an access at off
// (r.off included): without reg->off (7.2) r.off moves into var_off.
func (c *checker) varOffMsg(r *reg, off int) (tnum, int) {
	if c.has(btfmodel.CapVerifierNoRegOff) {
		return r.v.t.add(tconst(uint64(int64(r.off)))), off - int(r.off)
	}
	return r.v.t, off
}

// varOffStr prints a pointer's var_off in an alignment message: 6.12 prints a constant
// one as a number (tnum_strn, kernel/bpf/log.c), in hex above U16_MAX (is_unum_decimal:
// 7.2-riscv64 "misaligned context access off 0x7ffffff+0 size 8"); the captured negative
// stack offsets print in decimal ("misaligned stack access off -12+0 size 8").
func (c *checker) varOffStr(t tnum) string {
	if c.has(btfmodel.CapLogConstVarOff) && t.isConst() {
		if v := int64(t.v); v > math.MaxUint16 {
			return fmt.Sprintf("%#x", t.v)
		}
		return fmt.Sprint(int64(t.v))
	}
	return t.String()
}

// argCtxOff is check_func_arg_reg_off for ctx: helpers need the unmodified ctx pointer.
func (c *checker) argCtxOff(regno uint8, r *reg) error {
	ts := regTypeStr(c.env.Kernel, r)
	switch {
	case r.off < 0:
		c.logf("negative offset %s ptr R%d off=%d disallowed", ts, regno, r.off)
	case r.off != 0:
		c.logf("dereference of modified %s ptr R%d off=%d disallowed", ts, regno, r.off)
	case !r.v.isConst() || r.v.val() != 0:
		c.logf("variable %s access var_off=%s disallowed", ts, r.v.t)
	default:
		return nil
	}
	return reject("EACCES")
}

// helperMem is check_helper_mem_access: size bytes at the register, written when write.
func (c *checker) helperMem(regno uint8, r *reg, size int, zeroOK, write bool) error {
	switch r.typ {
	case ptrToStack:
		if size == 0 && zeroOK {
			return nil
		}
		if size == 0 {
			c.logf("invalid zero-sized read") // a zero key_size (ring buffers, perf arrays)
			return reject("EACCES")
		}
		how := " indirect access to"
		if c.has(btfmodel.CapVerifierHelperStackRW) {
			how = " read from"
			if write {
				how = " write to"
			}
		}
		lo, hi, err := c.stackBounds(regno, r, int(r.off), size, how)
		if err != nil {
			return err
		}
		if !write && !c.has(btfmodel.CapVerifierStackReadAll) {
			// 6.1: privileged programs may pass uninitialised stack, but only within
			// allocated_stack (what writes have reached).
			for b := lo; b < hi; b++ {
				if b < -c.fr.allocated { // the frame the pointer reaches
					c.logf("invalid indirect read from stack R%d off %d+%d size %d", regno, lo, b-lo, size)
					return reject("EACCES")
				}
			}
		}
		if write && c.dynptrOverlap(int(r.frameno), lo, hi-lo) >= 0 { // dynptr.go
			c.logf("potential write to dynptr at off=%d disallowed", lo)
			return reject("EACCES")
		}
		if !write {
			c.markStackReads(lo, hi) // raw (write-only) memory is not read
		}
		// Helpers may write anything there (clobber): spills, zeros and (privileged)
		// uninitialised bytes all become STACK_MISC, for reads as for writes.
		if write {
			c.growStack(lo)
		}
		if !write && c.has(btfmodel.CapVerifierHelperStackRW) {
			// check_stack_range_initialized clobbers only for BPF_WRITE since helper
			// accesses are reads or writes: a map key read keeps a spilled pointer
			c.scratch[100+slotIndex(lo)/regSize] = true
			return nil
		}
		for b := lo; b < hi; b++ {
			c.clobberSlot(b)
		}
		for b := lo; b < hi; b++ {
			c.fr.stack[slotIndex(b)] = stackMisc // the frame the pointer reaches
		}
		c.scratch[100+slotIndex(lo)/regSize] = true
		return nil
	case ptrToMapValue:
		if err := c.mapAccessType(r, int(r.off), size, write); err != nil {
			return err
		}
		return c.mapAccess(regno, r, int(r.off), size)
	case ptrToMem:
		if write && r.flags&flagRdonly != 0 {
			c.logf("R%d cannot write into %s", regno, regTypeStr(c.env.Kernel, r))
			return reject("EACCES")
		}
		return c.memRegion(regno, r, int(r.off), size, r.memSize, "mem")
	case ptrToBTFID:
		return c.btfAccess(regno, r, int(r.off), size, false, -1)
	}
	if zeroOK && size == 0 && r.typ == scalarValue && r.v.isConst() && r.v.val() == 0 {
		return nil
	}
	c.logf("R%d type=%s expected=%s", regno, regTypeStr(c.env.Kernel, r), "fp")
	return reject("EACCES")
}

// nonSleepableContext is 7.2's non_sleepable_context_description, "" when
// in_sleepable_context holds.
func (c *checker) nonSleepableContext() string {
	switch {
	case c.st.rcuLock > 0:
		return "rcu_read_lock region"
	case c.st.preemptLock > 0:
		return "non-preemptible region"
	case c.st.lock.held:
		return "lock region"
	case !c.prog.Sleepable:
		return "non-sleepable prog"
	}
	return ""
}
