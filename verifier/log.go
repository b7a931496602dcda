package verifier

import (
	"fmt"
	"math"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
)

// Log formatting after kernel/bpf/disasm.c (print_bpf_insn) and kernel/bpf/verifier.c
// (reg_type_str, print_verifier_state, verbose_invalid_scalar).

var aluOps = [16]string{"+=", "-=", "*=", "/=", "|=", "&=", "<<=", ">>=", "neg", "%=", "^=", "=", "s>>=", "endian", "", ""}
var jmpOps = [16]string{"jmp", "==", ">", ">=", "&", "!=", "s>", "s>=", "call", "exit", "<", "<=", "s<", "s<=", "", ""}
var sizeNames = map[int]string{1: "u8", 2: "u16", 4: "u32", 8: "u64"}

// aluOpName gives the operator, resolving the signed div/mod and movsx encodings (off field).
func aluOpName(in *insn) string {
	op := aluOps[in.op()>>4]
	if in.off == 1 && (op == "/=" || op == "%=") {
		return "s" + op
	}
	return op
}

// disasm renders an instruction as print_bpf_insn does ("(79) r2 = *(u64 *)(r1 +0)").
func disasm(in *insn, mapName func(*insn) string, helperName func(int32) string) string {
	c := in.class()
	r := func(n uint8, w bool) string {
		if w {
			return fmt.Sprintf("w%d", n)
		}
		return fmt.Sprintf("r%d", n)
	}
	switch c {
	case clsALU, clsALU64:
		w := c == clsALU
		op := aluOpName(in)
		switch {
		case op == "neg":
			return fmt.Sprintf("(%02x) %s = -%s", in.code, r(in.dst, w), r(in.dst, w))
		case op == "endian":
			kind := "le"
			if in.isX() {
				kind = "be"
			}
			if c == clsALU64 {
				kind = "bswap"
			}
			return fmt.Sprintf("(%02x) %s = %s%d %s", in.code, r(in.dst, w), kind, in.imm, r(in.dst, w))
		case op == "=" && in.isX() && in.off != 0:
			return fmt.Sprintf("(%02x) %s = (s%d)%s", in.code, r(in.dst, w), in.off, r(in.src, w))
		case in.isX():
			return fmt.Sprintf("(%02x) %s %s %s", in.code, r(in.dst, w), op, r(in.src, w))
		}
		return fmt.Sprintf("(%02x) %s %s %d", in.code, r(in.dst, w), op, in.imm)
	case clsLDX:
		sz := sizeNames[in.size()]
		if in.mode() == modeMEMSX {
			sz = "s" + sz[1:]
		}
		return fmt.Sprintf("(%02x) r%d = *(%s *)(r%d %+d)", in.code, in.dst, sz, in.src, in.off)
	case clsSTX:
		sz := sizeNames[in.size()]
		if in.mode() == modeATOMIC {
			return disasmAtomic(in, sz)
		}
		return fmt.Sprintf("(%02x) *(%s *)(r%d %+d) = r%d", in.code, sz, in.dst, in.off, in.src)
	case clsST:
		return fmt.Sprintf("(%02x) *(%s *)(r%d %+d) = %d", in.code, sizeNames[in.size()], in.dst, in.off, in.imm)
	case clsLD:
		if in.isLdImm64() {
			if in.src == pseudoMapFD || in.src == pseudoMapValue {
				return fmt.Sprintf("(%02x) r%d = %s", in.code, in.dst, mapName(in))
			}
			return fmt.Sprintf("(%02x) r%d = 0x%x", in.code, in.dst, in.imm64)
		}
		return fmt.Sprintf("(%02x) r0 = *(%s *)skb[%d]", in.code, sizeNames[in.size()], in.imm)
	case clsJMP, clsJMP32:
		op := jmpOps[in.op()>>4]
		w := c == clsJMP32
		switch op {
		case "call":
			if in.src == pseudoCall {
				return fmt.Sprintf("(%02x) call pc%+d", in.code, in.imm)
			}
			return fmt.Sprintf("(%02x) call %s#%d", in.code, helperName(in.imm), in.imm)
		case "exit":
			return fmt.Sprintf("(%02x) exit", in.code)
		case "jmp":
			if w {
				return fmt.Sprintf("(%02x) gotol pc%+d", in.code, in.imm)
			}
			return fmt.Sprintf("(%02x) goto pc%+d", in.code, in.off)
		}
		if in.isX() {
			return fmt.Sprintf("(%02x) if %s %s %s goto pc%+d", in.code, r(in.dst, w), op, r(in.src, w), in.off)
		}
		return fmt.Sprintf("(%02x) if %s %s 0x%x goto pc%+d", in.code, r(in.dst, w), op, uint32(in.imm), in.off)
	}
	return fmt.Sprintf("(%02x) unknown", in.code)
}

// disasmAtomic prints BPF_ATOMIC as print_bpf_insn does.
func disasmAtomic(in *insn, sz string) string {
	w := ""
	if in.size() == 8 {
		w = "64"
	}
	names := map[int32][2]string{0x00: {"+=", "add"}, 0x40: {"|=", "or"}, 0x50: {"&=", "and"}, 0xa0: {"^=", "xor"}}
	switch in.imm {
	case 0x00, 0x40, 0x50, 0xa0:
		return fmt.Sprintf("(%02x) lock *(%s *)(r%d %+d) %s r%d", in.code, sz, in.dst, in.off, names[in.imm][0], in.src)
	case 0x01, 0x41, 0x51, 0xa1:
		return fmt.Sprintf("(%02x) r%d = atomic%s_fetch_%s((%s *)(r%d %+d), r%d)", in.code, in.src, w, names[in.imm&^1][1], sz, in.dst, in.off, in.src)
	case 0xe1:
		return fmt.Sprintf("(%02x) r%d = atomic%s_xchg((%s *)(r%d %+d), r%d)", in.code, in.src, w, sz, in.dst, in.off, in.src)
	case 0xf1:
		return fmt.Sprintf("(%02x) r0 = atomic%s_cmpxchg((%s *)(r%d %+d), r0, r%d)", in.code, w, sz, in.dst, in.off, in.src)
	}
	return fmt.Sprintf("(%02x) BUG_%02x", in.code, in.imm)
}

// regTypeStr is reg_type_str. 6.1 keeps only the last matching prefix and has neither rcu_
// nor trusted_; 6.12 joins them (CapLogRegTypeAllPrefixes).
func regTypeStr(k btfmodel.Kernel, r *reg) string {
	return regTypeName(r, k.Has(btfmodel.CapLogRegTypeAllPrefixes))
}

// regTypeName is reg_type_str with every prefix joined, or with only the last one kept.
func regTypeName(r *reg, joined bool) string {
	var base string
	switch r.typ {
	case notInit:
		return "?"
	case scalarValue:
		base = "scalar"
	case ptrToCtx:
		base = "ctx"
	case ptrToStack:
		base = "fp"
	case ptrToBTFID:
		base = "ptr_"
	case ptrToMapValue:
		base = "map_value"
	case constPtrToMap:
		base = "map_ptr"
	case ptrToMem:
		base = "mem"
	case ptrToFunc:
		base = "func"
	case ptrToMapKey:
		base = "map_key"
	}
	post := ""
	if r.flags&flagMaybeNull != 0 {
		post = "_or_null"
		if r.typ == ptrToBTFID {
			post = "or_null_"
		}
	}
	names := []struct {
		f typeFlag
		s string
	}{{flagRdonly, "rdonly_"}, {flagRingbuf, "ringbuf_"}, {flagUser, "user_"}, {flagPercpu, "percpu_"}, {flagRCU, "rcu_"}, {flagUntrusted, "untrusted_"}, {flagTrusted, "trusted_"}}
	pre := ""
	for _, n := range names {
		if r.flags&n.f == 0 {
			continue
		}
		if joined {
			pre += n.s
		} else if n.f == flagRingbuf {
			pre = "alloc_" // 6.1's MEM_ALLOC: renamed MEM_RINGBUF in 6.2, when prefixes were joined
		} else if n.f != flagRCU && n.f != flagTrusted { // 6.1 has neither
			pre = n.s
		}
	}
	return pre + base + post
}

// fmtReg renders a register for a state dump (print_verifier_state).
func (c *checker) fmtReg(r *reg) string {
	k := c.env.Kernel
	if r.typ == scalarValue && r.v.isConst() {
		if !k.Has(btfmodel.CapLogStateCompact) {
			return fmt.Sprintf("%d", int64(r.v.val()))
		}
		return fmtSnum(int64(r.v.val()))
	}
	if r.typ == ptrToStack && r.v.isConst() {
		return fmt.Sprintf("fp%d", int64(r.off)+int64(r.v.val()))
	}
	name := regTypeStr(k, r)
	if r.typ == ptrToBTFID {
		name += btfName(r.btfType)
	}
	var parts []string
	if r.typ == scalarValue {
		parts = scalarParts(k, r.v)
	} else {
		if !k.Has(btfmodel.CapLogStateCompact) {
			parts = append(parts, fmt.Sprintf("off=%d", r.off))
			if r.typ == ptrToMapValue || r.typ == constPtrToMap {
				parts = append(parts, fmt.Sprintf("ks=%d,vs=%d", c.prog.Maps[r.mapIdx].KeySize, c.prog.Maps[r.mapIdx].ValueSize))
			}
			if r.v.isConst() {
				parts = append(parts, fmt.Sprintf("imm=%x", r.v.val()))
			} else {
				parts = append(parts, scalarParts(k, r.v)...)
			}
		} else {
			if r.typ == ptrToMapValue || r.typ == constPtrToMap {
				parts = append(parts, fmt.Sprintf("map=%s,ks=%d,vs=%d", c.prog.Maps[r.mapIdx].Name, c.prog.Maps[r.mapIdx].KeySize, c.prog.Maps[r.mapIdx].ValueSize))
			}
			if r.typ == ptrToMem && k.Has(btfmodel.CapVerifierNonStructPtrMem) {
				parts = append(parts, fmt.Sprintf("sz=%d", r.memSize))
			}
			if r.off != 0 {
				parts = append(parts, fmt.Sprintf("off=%d", r.off))
			}
			if !r.v.isConst() {
				parts = append(parts, scalarParts(k, r.v)...)
			}
		}
		if r.refObjID != 0 { // print_reg_state's ref_obj_id, after the id
			parts = append([]string{fmt.Sprintf("ref_obj_id=%d", r.refObjID)}, parts...)
		}
		if r.id != 0 && r.flags&flagMaybeNull != 0 {
			parts = append([]string{fmt.Sprintf("id=%d", r.id)}, parts...)
		}
	}
	return name + "(" + strings.Join(parts, ",") + ")"
}

// fmtSnum is 6.12's verbose_snum: small magnitudes in decimal, the rest in hex.
func fmtSnum(v int64) string {
	if v >= -512 && v <= 512 || v > 0 && v < 1<<32 {
		return fmt.Sprintf("%d", v)
	}
	return fmt.Sprintf("%#x", uint64(v))
}

// scalarParts lists the non-default bounds; 6.12 merges equal ones ("smax=umax=255").
func scalarParts(k btfmodel.Kernel, s scalar) []string {
	type mm struct {
		name string
		val  int64
		neg  bool
		omit bool
	}
	ms := []mm{
		{"smin", s.smin, s.smin < 0, s.smin == math.MinInt64},
		{"smax", s.smax, s.smax < 0, s.smax == math.MaxInt64},
		{"umin", int64(s.umin), false, s.umin == 0},
		{"umax", int64(s.umax), false, s.umax == math.MaxUint64},
		{"smin32", int64(s.s32min), s.s32min < 0, s.s32min == math.MinInt32},
		{"smax32", int64(s.s32max), s.s32max < 0, s.s32max == math.MaxInt32},
		{"umin32", int64(s.u32min), false, s.u32min == 0},
		{"umax32", int64(s.u32max), false, s.u32max == math.MaxUint32},
	}
	var parts []string
	val := func(m mm) string {
		if m.name[0] == 'u' {
			return fmt.Sprintf("%d", uint64(m.val))
		}
		return fmt.Sprintf("%d", m.val)
	}
	if !k.Has(btfmodel.CapLogStateCompact) {
		// 6.1 print_verifier_state: each bound unless default or equal to its sibling.
		add := func(cond bool, f string, v any) {
			if cond {
				parts = append(parts, fmt.Sprintf(f, v))
			}
		}
		add(s.smin != int64(s.umin) && s.smin != math.MinInt64, "smin=%d", s.smin)
		add(s.smax != int64(s.umax) && s.smax != math.MaxInt64, "smax=%d", s.smax)
		add(s.umin != 0, "umin=%d", s.umin)
		add(s.umax != math.MaxUint64, "umax=%d", s.umax)
		add(!s.t.isUnknown(), "var_off=%s", s.t)
		add(int64(s.s32min) != s.smin && s.s32min != math.MinInt32, "s32_min=%d", s.s32min)
		add(int64(s.s32max) != s.smax && s.s32max != math.MaxInt32, "s32_max=%d", s.s32max)
		add(uint64(s.u32min) != s.umin && s.u32min != 0, "u32_min=%d", int32(s.u32min))
		add(uint64(s.u32max) != s.umax && s.u32max != math.MaxUint32, "u32_max=%d", int32(s.u32max))
		return parts
	} else {
		done := make([]bool, len(ms))
		for i, m := range ms {
			if m.omit || done[i] {
				continue
			}
			names := m.name
			for j := i + 1; j < len(ms); j++ {
				if !ms[j].omit && !done[j] && ms[j].val == m.val && ms[j].neg == m.neg {
					names += "=" + ms[j].name
					done[j] = true
				}
			}
			parts = append(parts, names+"="+val(m))
		}
	}
	if !s.t.isUnknown() {
		parts = append(parts, "var_off="+s.t.String())
	}
	return parts
}

// stateDump prints the registers (all, or only the scratched ones) and stack slots, headed
// by the frame number inside a subprogram (print_verifier_state's " frame%d:").
func (c *checker) stateDump(st *state, only map[int]bool) string {
	d := c.frameDump(st, only)
	if n := st.curframe(); n > 0 && d != "" {
		return fmt.Sprintf(" frame%d:%s", n, d)
	}
	return d
}

func (c *checker) frameDump(st *state, only map[int]bool) string {
	var b strings.Builder
	for i := range st.regs {
		r := &st.regs[i]
		if r.typ == notInit || (only != nil && !only[i]) {
			continue
		}
		w := ""
		if r.written {
			w = "_w"
		}
		fmt.Fprintf(&b, " R%d%s=%s", i, w, c.fmtReg(r))
	}
	for s := len(st.spill) - 1; s >= 0; s-- {
		if only != nil && !only[100+s] {
			continue
		}
		base := s * regSize
		off := base - stackSize
		if st.stack[base] == stackSpill {
			fmt.Fprintf(&b, " fp%d=%s", off, c.fmtReg(&st.spill[s]))
			continue
		}
		if t, ok := slotBytes(st, base); ok {
			fmt.Fprintf(&b, " fp%d=%s", off, t)
		}
	}
	return b.String()
}

// slotBytes is an 8-byte stack slot as print_verifier_state shows it, one letter per byte
// from the highest (? invalid, m misc, 0 zero), and whether any byte is initialised.
func slotBytes(st *state, base int) (string, bool) {
	valid := false
	var t []byte
	for j := regSize - 1; j >= 0; j-- {
		k := st.stack[base+j]
		valid = valid || k != stackInvalid
		t = append(t, "?m0r"[k])
	}
	return string(t), valid
}
