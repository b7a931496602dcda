package verifier

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// Helper calls: check_helper_call, check_func_arg, check_mem_size_reg,
// check_helper_mem_access (kernel/bpf/verifier.c); prototypes and availability from
// kernel/trace/bpf_trace.c (bpf_tracing_func_proto, tracing_prog_func_proto) and
// kernel/bpf/bpf_lsm.c (bpf_lsm_func_proto).

type argKind int

const (
	argDontCare argKind = iota
	argAnything
	argCtx
	argConstMap
	argMapKey
	argMapValue
	argMem       // readable memory, size in the next argument
	argUninitMem // memory the helper writes, size in the next argument
	argConstSize
	argConstSizeOrZero
	argLong // 8 bytes the helper writes (6.1 ARG_PTR_TO_LONG, 6.12 fixed-size uninit memory)
)

type retKind int

const (
	retInt retKind = iota
	retMapValueOrNull
	retTaskBTF
)

type helperProto struct {
	args       []argKind
	ret        retKind
	gplOnly    bool
	trampOnly  bool // bpf_prog_has_trampoline: fentry/fexit/fmod_ret, LSM
	sleepOnly  bool // 6.1 offers it to sleepable programs only
	mightSleep bool // 6.12: refused in non-sleepable programs
}

// helperProtos are the modelled helpers, by id.
var helperProtos = map[int32]helperProto{
	1:   {args: []argKind{argConstMap, argMapKey}, ret: retMapValueOrNull},
	2:   {args: []argKind{argConstMap, argMapKey, argMapValue, argAnything}},
	3:   {args: []argKind{argConstMap, argMapKey}},
	5:   {},
	6:   {args: []argKind{argMem, argConstSize}, gplOnly: true},
	7:   {},
	8:   {},
	14:  {},
	15:  {},
	16:  {args: []argKind{argUninitMem, argConstSize}},
	35:  {gplOnly: true},
	80:  {},
	112: {args: []argKind{argUninitMem, argConstSizeOrZero, argAnything}, gplOnly: true},
	113: {args: []argKind{argUninitMem, argConstSizeOrZero, argAnything}, gplOnly: true},
	114: {args: []argKind{argUninitMem, argConstSizeOrZero, argAnything}, gplOnly: true},
	115: {args: []argKind{argUninitMem, argConstSizeOrZero, argAnything}, gplOnly: true},
	118: {},
	125: {},
	148: {args: []argKind{argUninitMem, argConstSizeOrZero, argAnything}, gplOnly: true, sleepOnly: true, mightSleep: true},
	158: {ret: retTaskBTF, gplOnly: true},
	173: {args: []argKind{argCtx}},
	174: {args: []argKind{argCtx}, trampOnly: true},
	183: {args: []argKind{argCtx, argAnything, argLong}, trampOnly: true},
	184: {args: []argKind{argCtx, argLong}, trampOnly: true},
	185: {args: []argKind{argCtx}, trampOnly: true},
}

// availableUnmodelled are helpers tracing/LSM programs may call whose argument rules the
// model does not check: the call is accepted with R0 unknown, and a note says so.
var availableUnmodelled = map[int32]bool{
	4: true, 12: true, 22: true, 25: true, 27: true, 36: true, 37: true, 42: true, 45: true, 46: true,
	55: true, 67: true, 87: true, 88: true, 89: true, 107: true, 108: true, 109: true, 111: true,
	117: true, 120: true, 121: true, 123: true, 130: true, 131: true, 132: true, 133: true, 134: true,
	136: true, 137: true, 138: true, 139: true, 140: true, 141: true, 147: true, 149: true, 153: true,
	154: true, 156: true, 157: true, 160: true, 162: true, 164: true, 165: true, 169: true, 170: true,
	171: true, 172: true, 175: true, 176: true, 177: true, 178: true, 180: true, 181: true, 182: true,
	191: true, 194: true, 195: true, 196: true, 197: true, 198: true, 199: true, 200: true, 201: true,
	202: true, 203: true, 208: true, 209: true,
}

// lsmOnlyUnmodelled are LSM-only helpers (inode storage, bprm_opts_set, ima hashes).
var lsmOnlyUnmodelled = map[int32]bool{145: true, 146: true, 159: true, 161: true, 193: true}

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

func (c *checker) call(in *insn) error {
	id := in.imm
	name := c.helperName(id)
	if id < 0 || id >= c.maxFuncID() {
		c.logf("invalid func %s#%d", name, id)
		return reject("EINVAL")
	}
	proto, known := helperProtos[id]
	avail := known && c.helperOffered(id, proto) // tpbtf.go
	// trampOnly helpers need bpf_prog_has_trampoline, true for every modelled attach type.
	if known && proto.sleepOnly && !c.has(btfmodel.CapVerifierHelperMightSleep) && !c.prog.Sleepable {
		avail = false
	}
	unmodelled := availableUnmodelled[id] || (c.prog.AttachType == btfmodel.LSM && lsmOnlyUnmodelled[id])
	if !avail && !unmodelled {
		if !c.has(btfmodel.CapVerifierHelperProtoMsg) {
			c.logf("unknown func %s#%d", name, id)
		} else {
			c.logf("program of this type cannot use helper %s#%d", name, id)
		}
		return reject("EINVAL")
	}
	switch id {
	case helperForEachMapElem, helperLoop: // H1: callbacks, callback.go
		return c.callbackCall(in, id)
	case helperPerCPUPtr, helperThisCPUPtr: // H4: percpu __ksym variables, ksym.go
		return c.percpuPtrCall(id, name)
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
	if proto.mightSleep && c.has(btfmodel.CapVerifierHelperMightSleep) && !c.prog.Sleepable {
		if c.has(btfmodel.CapVerifierSleepableHelperMsg) {
			c.logf("sleepable helper %s#%d in non-sleepable prog", name, id)
		} else {
			c.logf("helper call might sleep in a non-sleepable prog")
		}
		return reject("EINVAL")
	}
	var meta struct {
		mapIdx     int
		rawRegno   int
		rawSize    int
		memRegno   uint8
		memIsWrite bool
	}
	meta.mapIdx, meta.rawRegno = -1, -1
	for i, a := range proto.args {
		regno := uint8(i + 1)
		if a == argDontCare {
			continue
		}
		if err := c.readReg(regno); err != nil {
			return err
		}
		r := c.st.regs[regno]
		if a == argAnything {
			continue
		}
		if err := c.argType(regno, &r, a, name); err != nil {
			return err
		}
		switch a {
		case argCtx:
			if err := c.argCtxOff(regno, &r); err != nil {
				return err
			}
		case argConstMap:
			meta.mapIdx = r.mapIdx
		case argMapKey, argMapValue:
			if meta.mapIdx < 0 {
				c.logf("invalid map_ptr to access map->key")
				return reject("EACCES")
			}
			m := c.prog.Maps[meta.mapIdx]
			size := int(m.KeySize)
			if a == argMapValue {
				size = int(m.ValueSize)
			}
			if err := c.helperMem(regno, &r, size, false, false); err != nil {
				return err
			}
		case argMem, argUninitMem:
			meta.memRegno, meta.memIsWrite = regno, a == argUninitMem
		case argConstSize, argConstSizeOrZero:
			zeroOK := a == argConstSizeOrZero
			if r.v.smin < 0 {
				c.logf("R%d min value is negative, either use unsigned or 'var &= const'", regno)
				return reject("EACCES")
			}
			if r.v.umin == 0 && !zeroOK {
				if !c.has(btfmodel.CapVerifierMemSizeRaw) {
					// 6.1 checks the memory with size 0 first: its words, not the size's.
					return c.zeroSized61(meta.memRegno)
				} else {
					c.logf("R%d invalid zero-sized read: u64=[%d,%d]", regno, r.v.umin, r.v.umax)
				}
				return reject("EACCES")
			}
			if r.v.umax >= maxVarOff {
				c.logf("R%d unbounded memory access, use 'var &= const' or 'if (var < const)'", regno)
				return reject("EACCES")
			}
			mr := c.st.regs[meta.memRegno]
			// 6.1 drops raw mode for a variable size: the memory must be initialised.
			write := meta.memIsWrite && (c.has(btfmodel.CapVerifierMemSizeRaw) || r.v.isConst())
			if err := c.helperMem(meta.memRegno, &mr, int(r.v.umax), zeroOK, write); err != nil {
				return err
			}
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
	}
	if err := c.checkGetFuncIP(id, name); err != nil { // tpbtf.go
		return err
	}
	if id == 173 && c.prog.AttachType == btfmodel.LSM {
		c.logf("func %s#%d not supported for program type %d", name, id, 29)
		return reject("ENOTSUPP")
	}
	c.clobberCallerSaved()
	switch proto.ret {
	case retInt:
		c.setReg(0, mkScalar(unknownScalar()))
	case retMapValueOrNull:
		c.setReg(0, reg{typ: ptrToMapValue, flags: flagMaybeNull, mapIdx: meta.mapIdx, v: constScalar(0), id: c.newID()})
	case retTaskBTF:
		var task *btf.Struct
		_ = c.env.BTF.TypeByName("task_struct", &task)
		r := reg{typ: ptrToBTFID, btfType: task, v: constScalar(0), path: "current"}
		if c.has(btfmodel.CapVerifierTrustedPtr) {
			r.flags = flagTrusted
		}
		c.setReg(0, r)
	}
	return nil
}

func (c *checker) clobberCallerSaved() {
	for r := uint8(1); r <= 5; r++ {
		c.st.regs[r] = reg{}
		c.scratch[int(r)] = true
	}
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
	case argMapKey, argMapValue:
		ok = plain && (r.typ == ptrToStack || r.typ == ptrToMapValue || trusted)
		expected = "fp, pkt, pkt_meta, map_key, map_value"
		if c.has(btfmodel.CapVerifierMapArgAsMem) {
			expected = memTypes // 6.12 checks map keys and values as memory
		}
	case argMem, argUninitMem:
		ok = plain && (r.typ == ptrToStack || r.typ == ptrToMapValue || r.typ == ptrToMem || trusted)
		expected = memTypes
	case argConstSize, argConstSizeOrZero:
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
// one as a number.
func (c *checker) varOffStr(t tnum) string {
	if c.has(btfmodel.CapLogConstVarOff) && t.isConst() {
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
				if b < -c.fr.allocated { // H1: the frame the pointer reaches
					c.logf("invalid indirect read from stack R%d off %d+%d size %d", regno, lo, b-lo, size)
					return reject("EACCES")
				}
			}
		}
		if !write {
			c.markStackReads(lo, hi) // raw (write-only) memory is not read
		}
		// Helpers may write anything there (clobber): spills, zeros and (privileged)
		// uninitialised bytes all become STACK_MISC, for reads as for writes.
		if write {
			c.growStack(lo)
		}
		for b := lo; b < hi; b++ {
			c.clobberSlot(b)
		}
		for b := lo; b < hi; b++ {
			c.fr.stack[slotIndex(b)] = stackMisc // H1: the frame the pointer reaches
		}
		c.scratch[100+slotIndex(lo)/regSize] = true
		return nil
	case ptrToMapValue:
		if err := c.mapAccessType(r, int(r.off), size, write); err != nil {
			return err
		}
		return c.memRegion(regno, r, int(r.off), size, int(c.prog.Maps[r.mapIdx].ValueSize), "map_value")
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
