package verifier

import (
	"fmt"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// Generator shapes with bpf-to-bpf calls (kernel/bpf/verifier.c check_func_call,
// prepare_func_exit, check_max_stack_depth): static subprograms taking R1-R5 and returning
// in R0, with their own stack and pointers into the caller's, chains of calls up to and past
// MAX_CALL_FRAMES (8) and around the combined 512-byte stack, bpf_loop and
// bpf_for_each_map_elem callbacks (a BPF_PSEUDO_FUNC ld_imm64), and global functions, which
// need the program's BTF func_info (emitted as btf.FuncMetadata on each function's first
// instruction, as clang's objects carry it). The mistakes are the ones people make: an
// argument not passed, a caller-saved register read after the call, a stack pointer
// returned, R0 unset, a callback's return out of [0, 1], a NULL pointer argument not checked.

// newFunc starts a function laid out after the program's others.
func (s *genState) newFunc(prefix string) *genState {
	f := &genState{g: s.g, proto: s.proto, lsm: s.lsm, exit: s.exit, subs: s.subs}
	f.sym = fmt.Sprintf("%s%d", prefix, len(*s.subs)+1)
	*s.subs = append(*s.subs, f)
	return f
}

// subprogProgram is the main function's body for the call shapes. Callbacks need BTF
// func_info (the kernel refuses a BPF_PSEUDO_FUNC without: "missing btf func_info"), as
// global functions do; static calls have it half of the time (clang -g emits it, as libbpf
// objects carry it).
func (s *genState) subprogProgram() {
	for n := s.pick(2); n > 0; n-- {
		s.step()
	}
	switch r := s.pick(100); {
	case r < 35:
		s.withFuncInfo(s.chance(50))
		s.callShape(0)
	case r < 55:
		s.withFuncInfo(s.chance(50))
		s.chainShape()
	case r < 75:
		s.withFuncInfo(true)
		s.loopShape()
	case r < 85:
		s.withFuncInfo(true)
		s.forEachShape()
	default:
		s.withFuncInfo(true)
		s.globalShape()
	}
	for n := s.pick(2); n > 0; n-- {
		s.step()
	}
}

// withFuncInfo gives the main function the prototype clang emits for a tracing program,
// int prog(unsigned long long *ctx); the others get theirs in Program (funcMeta).
func (s *genState) withFuncInfo(on bool) {
	if on {
		s.meta = &btf.Func{Name: "prog", Linkage: btf.GlobalFunc, Type: &btf.FuncProto{Return: genInt,
			Params: []btf.FuncParam{{Name: "ctx", Type: &btf.Pointer{Target: genU64}}}}}
	}
}

// funcMeta is a static function's BTF as clang would write it from what it is passed:
// scalars as unsigned long long, pointers as void *.
func (f *genState) funcMeta() *btf.Func {
	if f.meta != nil {
		return f.meta
	}
	proto := &btf.FuncProto{Return: genInt}
	for i, t := range f.params {
		proto.Params = append(proto.Params, btf.FuncParam{Name: fmt.Sprintf("a%d", i), Type: t})
	}
	return &btf.Func{Name: f.sym, Linkage: btf.StaticFunc, Type: proto}
}

// paramsFor is the prototype of a function passed args in R1..Rn.
func paramsFor(args [6]regKind, n int) []btf.Type {
	var out []btf.Type
	for r := 1; r <= n; r++ {
		if a := args[r]; a.stack || a.ctx || a.ptr != nil || a.mapv {
			out = append(out, genVoidPtr)
		} else {
			out = append(out, genU64)
		}
	}
	return out
}

// setArgs puts values into R1..Rn for a call (often right, sometimes not set at all) and
// says what the callee receives.
func (s *genState) setArgs(n int) [6]regKind {
	var k [6]regKind
	for r := 1; r <= n; r++ {
		reg := asm.Register(r)
		switch s.pick(10) {
		case 0, 1, 2:
			s.add(asm.Mov.Imm(reg, []int32{0, 1, 7, -1, 4096}[s.pick(5)]))
			k[r] = regKind{set: true}
		case 3, 4:
			if s.kinds[6].set && s.kinds[6].ptr == nil && !s.kinds[6].mapv {
				s.add(asm.Mov.Reg(reg, asm.R6))
				k[r] = regKind{set: true, ctx: true}
				continue
			}
			s.add(asm.Mov.Imm(reg, 3))
			k[r] = regKind{set: true}
		case 5, 6:
			off := int16(-8 * (4 + r))
			if s.chance(85) {
				s.add(storeImm(asm.R10, off, int64(r), asm.DWord))
			}
			s.add(asm.Mov.Reg(reg, asm.R10), asm.Add.Imm(reg, int32(off)))
			k[r] = regKind{set: true, stack: true}
		case 7:
			src := s.set()
			s.add(asm.Mov.Reg(reg, src))
			k[r] = s.kinds[src]
		case 8:
			if regs := s.ptrRegs(); len(regs) > 0 {
				src := regs[s.pick(len(regs))]
				s.add(asm.Mov.Reg(reg, src))
				k[r] = s.kinds[src]
				continue
			}
			s.add(asm.Mov.Imm(reg, 0))
			k[r] = regKind{set: true}
		default:
			k[r] = s.kinds[r] // as it is: maybe never set
		}
	}
	return k
}

// afterCall is what the caller does with the callee's answer: R1-R5 are gone, R6-R9 kept.
func (s *genState) afterCall(args [6]regKind) {
	s.invalidateScratch()
	s.kinds[0] = regKind{set: true}
	switch s.pick(10) {
	case 0, 1, 2:
		dst := s.derived()
		s.add(asm.Mov.Reg(dst, asm.R0))
		s.kinds[dst] = regKind{set: true}
	case 3, 4:
		// read back what the callee may have written through a pointer to this frame
		for r := 1; r <= 5; r++ {
			if args[r].stack {
				s.add(asm.LoadMem(asm.R0, asm.R10, int16(-8*(4+r)), asm.DWord))
				return
			}
		}
	case 5:
		if s.chance(40) {
			s.add(asm.Mov.Reg(asm.R0, asm.Register(1+s.pick(5)))) // caller-saved: not readable
		}
	}
}

// callShape calls a static subprogram with some of R1-R5 set.
func (s *genState) callShape(depth int) {
	n := s.pick(6)
	args := s.setArgs(n)
	f := s.newFunc("sub")
	f.params = paramsFor(args, n)
	s.add(asm.Call.Label(f.sym))
	f.calleeBody(args, depth+1)
	s.afterCall(args)
}

// calleeBody is a static subprogram: its arguments, its own stack, the caller's stack
// through a pointer, helpers, sometimes a further call, and a return.
func (f *genState) calleeBody(args [6]regKind, depth int) {
	copy(f.kinds[1:6], args[1:6])
	if args[1].ctx && f.chance(75) {
		f.add(asm.Mov.Reg(asm.R6, asm.R1))
		f.kinds[6] = regKind{set: true}
	}
	for n := 1 + f.pick(4); n > 0; n-- {
		switch f.pick(10) {
		case 0, 1:
			if f.kinds[6].set {
				f.step()
				continue
			}
			f.ownStack()
		case 2:
			f.ownStack()
		case 3, 4:
			f.throughStackArg()
		case 5:
			a, b := asm.Register(1+f.pick(5)), asm.Register(1+f.pick(5))
			f.add(asm.Mov.Reg(asm.R0, a), asm.Add.Reg(asm.R0, b))
			f.kinds[0] = regKind{set: true}
		case 6:
			if f.chance(30) {
				f.add(asm.Mov.Reg(asm.R0, asm.Register(7+f.pick(3)))) // callee-saved, never set here
			} else {
				f.add(asm.Mov.Imm(asm.R0, 5))
			}
			f.kinds[0] = regKind{set: true}
		case 7:
			if f.kinds[6].set {
				f.helper()
				continue
			}
			f.add(asm.FnGetPrandomU32.Call())
			f.invalidateScratch()
			f.kinds[0] = regKind{set: true}
		case 8:
			if depth < 3 {
				f.callShape(depth)
				continue
			}
			fallthrough
		default:
			f.add(asm.Mov.Imm(asm.R0, int32(f.pick(4))))
			f.kinds[0] = regKind{set: true}
		}
	}
	f.subRet()
}

// ownStack writes and reads the function's own frame.
func (f *genState) ownStack() {
	off := int16(-8 * (1 + f.pick(4)))
	if f.chance(15) {
		off = -8 * int16(20+f.pick(44)) // a deeper frame: the combined depth grows
	}
	f.add(storeImm(asm.R10, off, 9, asm.DWord))
	if f.chance(70) {
		f.add(asm.LoadMem(asm.R0, asm.R10, off, asm.DWord))
		f.kinds[0] = regKind{set: true}
	}
}

// throughStackArg reads or writes the caller's frame through a pointer argument, at the
// slot the caller set, next to it, or narrow.
func (f *genState) throughStackArg() {
	var regs []asm.Register
	for r := asm.R1; r <= asm.R5; r++ {
		if f.kinds[r].stack {
			regs = append(regs, r)
		}
	}
	if len(regs) == 0 {
		f.ownStack()
		return
	}
	r := regs[f.pick(len(regs))]
	off := []int16{0, 0, 0, -8, 8, 4}[f.pick(6)]
	sz := []asm.Size{asm.DWord, asm.DWord, asm.Word}[f.pick(3)]
	if f.chance(50) {
		f.add(storeImm(r, off, 11, sz))
		return
	}
	f.add(asm.LoadMem(asm.R0, r, off, sz))
	f.kinds[0] = regKind{set: true}
}

// subRet ends a static subprogram: R0 a scalar mostly, sometimes unset, an argument or a
// pointer into the callee's own frame (which the kernel refuses to hand back).
func (f *genState) subRet() {
	switch f.pick(14) {
	case 0:
	case 1:
		f.add(asm.Mov.Reg(asm.R0, asm.R10), asm.Add.Imm(asm.R0, -8))
	case 2:
		f.add(asm.Mov.Reg(asm.R0, asm.R1))
	case 3:
		if f.kinds[6].set {
			f.add(asm.Mov.Reg(asm.R0, asm.R6))
			break
		}
		fallthrough
	case 4, 5:
		if f.kinds[0].set {
			break
		}
		fallthrough
	default:
		f.add(asm.Mov.Imm(asm.R0, []int32{0, 1, -1, 42}[f.pick(4)]))
	}
	f.add(asm.Return())
}

// chainShape is a chain of calls, each function using some stack and passing a pointer
// to it down: from 1 callee to 16 (MAX_CALL_FRAMES is 8 with main before 7.2, 16 in 7.2),
// with frames that together stay under or go past the 512 bytes check_max_stack_depth
// allows.
func (s *genState) chainShape() {
	n := []int{1, 2, 3, 4, 5, 6, 7, 7, 8, 9, 14, 15, 16}[s.pick(13)]
	total := []int{64, 256, 416, 480, 512, 544, 640}[s.pick(7)]
	if n > 9 {
		total = 64 // around 7.2's 16 frames, each frame the smallest (32 bytes counted)
	}
	frame := func() int16 {
		sz := max(8, (total/(n+1)+s.pick(17)-8)&^7)
		return int16(-min(sz, 512))
	}
	s.add(storeImm(asm.R10, frame(), 1, asm.DWord), storeImm(asm.R10, -8, 0, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R10), asm.Add.Imm(asm.R1, -8))
	f := s.newFunc("chain")
	f.params = []btf.Type{genVoidPtr}
	s.add(asm.Call.Label(f.sym))
	s.afterCall([6]regKind{})
	first := f.sym
	for i := 1; i <= n; i++ {
		f.add(storeImm(asm.R10, frame(), int64(i), asm.DWord))
		if f.chance(50) {
			f.add(storeImm(asm.R1, 0, int64(i), asm.DWord)) // the caller's slot
		}
		if i == n {
			if f.chance(4) {
				f.add(asm.Call.Label(first)) // recursion: check_cfg refuses the back edge
			}
			f.add(asm.Mov.Imm(asm.R0, int32(i)), asm.Return())
			break
		}
		if f.chance(60) {
			f.add(storeImm(asm.R10, -8, 0, asm.DWord), asm.Mov.Reg(asm.R1, asm.R10), asm.Add.Imm(asm.R1, -8))
		}
		next := f.newFunc("chain")
		next.params = []btf.Type{genVoidPtr}
		f.add(asm.Call.Label(next.sym), asm.Add.Imm(asm.R0, 1), asm.Return())
		f = next
	}
}

// funcRef is a BPF_PSEUDO_FUNC ld_imm64 of a function (a callback argument).
func funcRef(dst asm.Register, sym string) asm.Instruction {
	return asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: dst, Src: asm.PseudoFunc, Constant: -1}.WithReference(sym)
}

// loopShape calls bpf_loop(nr, callback, ctx, flags); the callback gets (u32 index,
// void *ctx) and must return 0 or 1.
func (s *genState) loopShape() {
	if s.chance(80) {
		s.add(storeImm(asm.R10, -8, 0, asm.DWord))
	}
	if s.chance(15) {
		s.add(asm.FnGetPrandomU32.Call(), asm.Mov.Reg(asm.R1, asm.R0))
	} else {
		s.add(asm.Mov.Imm(asm.R1, []int32{1, 8, 100, 0, 1 << 23}[s.pick(5)]))
	}
	cb := s.newFunc("cb")
	cb.params = []btf.Type{genU32, genVoidPtr}
	noCallback := true
	switch r := s.pick(100); {
	case r < 4:
		s.add(asm.Mov.Imm(asm.R2, 0))
	case r < 7:
		s.add(asm.Mov.Reg(asm.R2, asm.R10))
	default:
		s.add(funcRef(asm.R2, cb.sym))
		noCallback = false
	}
	if noCallback {
		// no reference to the callback: libbpf would not have loaded it (and its func_info
		// would not match the subprograms the kernel finds)
		*s.subs = (*s.subs)[:len(*s.subs)-1]
	}
	var arg regKind
	switch r := s.pick(10); {
	case r < 7:
		s.add(asm.Mov.Reg(asm.R3, asm.R10), asm.Add.Imm(asm.R3, -8))
		arg = regKind{set: true, stack: true}
	case r < 9:
		s.add(asm.Mov.Imm(asm.R3, 0))
		arg = regKind{set: true}
	default:
		s.add(asm.Mov.Reg(asm.R3, s.ctxReg()))
		arg = regKind{set: true, ctx: true}
	}
	s.add(asm.Mov.Imm(asm.R4, []int32{0, 0, 0, 0, 1}[s.pick(5)]), asm.FnLoop.Call())
	s.invalidateScratch()
	s.kinds[0] = regKind{set: true}
	if s.chance(40) {
		s.add(asm.LoadMem(asm.R0, asm.R10, -8, asm.DWord))
	}
	if noCallback {
		return
	}
	cb.kinds[1] = regKind{set: true}
	cb.kinds[2] = arg
	for n := 1 + cb.pick(3); n > 0; n-- {
		switch cb.pick(8) {
		case 0, 1:
			cb.add(asm.LoadMem(asm.R0, asm.R2, 0, asm.DWord))
			cb.kinds[0] = regKind{set: true}
		case 2:
			cb.add(asm.StoreMem(asm.R2, 0, asm.R1, asm.DWord))
		case 3:
			cb.ownStack()
		case 4:
			cb.add(asm.FnGetPrandomU32.Call())
			cb.invalidateScratch()
			cb.kinds[0] = regKind{set: true}
		case 5:
			cb.callShape(2)
		default:
			cb.add(asm.Mov.Reg(asm.R0, asm.R1), asm.And.Imm(asm.R0, 1))
			cb.kinds[0] = regKind{set: true}
		}
	}
	cb.callbackRet()
}

// callbackRet ends a callback: 0 or 1 mostly, sometimes out of range or unbounded.
func (f *genState) callbackRet() {
	switch f.pick(20) {
	case 0:
		// as the body left it
	case 1:
		f.add(asm.Mov.Imm(asm.R0, 2))
	case 2:
		f.add(asm.Mov.Imm(asm.R0, -1))
	case 3:
		f.add(asm.Mov.Reg(asm.R0, asm.R1))
	case 4, 5, 6, 7:
		f.add(asm.Mov.Imm(asm.R0, 1))
	default:
		f.add(asm.Mov.Imm(asm.R0, 0))
	}
	f.add(asm.Return())
}

// forEachShape calls bpf_for_each_map_elem(map, callback, ctx, flags) on the generator's
// hash map; the callback gets (map, key, value, ctx).
func (s *genState) forEachShape() {
	s.maps = true
	s.add(storeImm(asm.R10, -8, 0, asm.DWord), asm.LoadMapPtr(asm.R1, 0))
	cb := s.newFunc("cb")
	cb.params = []btf.Type{genVoidPtr, genVoidPtr, genVoidPtr, genVoidPtr}
	s.add(funcRef(asm.R2, cb.sym))
	if s.chance(70) {
		s.add(asm.Mov.Reg(asm.R3, asm.R10), asm.Add.Imm(asm.R3, -8))
	} else {
		s.add(asm.Mov.Imm(asm.R3, 0))
	}
	s.add(asm.Mov.Imm(asm.R4, 0), asm.FnForEachMapElem.Call())
	s.invalidateScratch()
	s.kinds[0] = regKind{set: true}
	for n := 1 + cb.pick(3); n > 0; n-- {
		switch cb.pick(6) {
		case 0:
			cb.add(asm.LoadMem(asm.R0, asm.R2, 0, []asm.Size{asm.Word, asm.Word, asm.DWord}[cb.pick(3)]))
		case 1:
			cb.add(asm.LoadMem(asm.R0, asm.R3, int16([]int{0, 8, 8, 12, 16}[cb.pick(5)]), asm.DWord))
		case 2:
			cb.add(storeImm(asm.R3, 0, 1, asm.DWord))
		case 3:
			cb.add(storeImm(asm.R2, 0, 1, asm.Word)) // the key is read-only
		case 4:
			cb.add(asm.LoadMem(asm.R0, asm.R4, 0, asm.DWord))
		default:
			cb.add(asm.Mov.Imm(asm.R0, 0))
		}
		cb.kinds[0] = regKind{set: true}
	}
	cb.callbackRet()
}

// Types of the BTF the global-function shape carries.
var (
	genInt     = &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	genU32     = &btf.Int{Name: "unsigned int", Size: 4}
	genU64     = &btf.Int{Name: "unsigned long long", Size: 8}
	genVoidPtr = &btf.Pointer{Target: &btf.Void{}}
	genPair    = &btf.Struct{Name: "pair", Size: 16, Members: []btf.Member{{Name: "a", Type: genU64}, {Name: "b", Type: genU64, Offset: 64}}}
	// global function parameters: void * (no size: refused) rarely
	genParams = []btf.Type{genInt, genU64, &btf.Pointer{Target: genU64}, &btf.Pointer{Target: genPair},
		genInt, genU64, &btf.Pointer{Target: genU64}, &btf.Pointer{Target: genPair}, genVoidPtr}
)

// globalShape gives every function BTF func_info: the main one as clang emits a tracing
// program (int prog(unsigned long long *ctx)), and a global function (verified on its
// own, from its prototype: scalars, and pointers to sized memory that may be NULL) or a
// static one, called with arguments that match its prototype or not.
func (s *genState) globalShape() {
	f := s.newFunc("gfunc")
	proto := &btf.FuncProto{Return: genInt}
	if s.chance(5) {
		proto.Return = &btf.Pointer{Target: genU64} // not a scalar: refused for a global function
	}
	n := 1 + s.pick(3)
	for i := 0; i < n; i++ {
		proto.Params = append(proto.Params, btf.FuncParam{Name: fmt.Sprintf("a%d", i), Type: genParams[s.pick(len(genParams))]})
	}
	linkage := btf.GlobalFunc
	if s.chance(25) {
		linkage = btf.StaticFunc
	}
	f.meta = &btf.Func{Name: f.sym, Linkage: linkage, Type: proto}
	var args [6]regKind
	for i, p := range proto.Params {
		reg := asm.Register(1 + i)
		_, ptr := p.Type.(*btf.Pointer)
		off := int16(-16 * (1 + i))
		switch r := s.pick(20); {
		case r < 1 || r < 2 && ptr:
			s.add(asm.Mov.Reg(reg, s.ctxReg()))
		case r < 4 && ptr, r >= 16 && !ptr:
			s.add(asm.Mov.Imm(reg, 0))
		case ptr && r < 17, !ptr && r < 3:
			if r < 15 {
				s.add(storeImm(asm.R10, off, 1, asm.DWord), storeImm(asm.R10, off+8, 2, asm.DWord))
			}
			s.add(asm.Mov.Reg(reg, asm.R10), asm.Add.Imm(reg, int32(off)))
			args[1+i] = regKind{set: true, stack: true}
		default:
			s.add(asm.Mov.Imm(reg, int32(s.pick(100))))
		}
		args[1+i].set = true
	}
	s.add(asm.Call.Label(f.sym))
	s.afterCall(args)
	for i, p := range proto.Params {
		reg := asm.Register(1 + i)
		pt, ok := p.Type.(*btf.Pointer)
		if !ok {
			if f.chance(50) {
				f.add(asm.Mov.Reg(asm.R0, reg))
				f.kinds[0] = regKind{set: true}
			}
			continue
		}
		var use []asm.Instruction
		off := int16(0)
		if _, pair := pt.Target.(*btf.Struct); pair || f.chance(10) {
			off = int16(8 * f.pick(2))
		}
		if f.chance(50) {
			use = []asm.Instruction{asm.LoadMem(asm.R0, reg, off, asm.DWord)}
			f.kinds[0] = regKind{set: true}
		} else {
			use = []asm.Instruction{storeImm(reg, off, 3, asm.DWord)}
		}
		if f.chance(75) {
			f.items = append(f.items, genItem{insns: asm.Instructions{asm.JEq.Imm(reg, 0, "")}, skip: 1})
		}
		f.add(use...)
	}
	switch r := f.pick(12); {
	case r == 0 && f.kinds[0].set:
	case r == 1:
		f.add(asm.Mov.Reg(asm.R0, asm.R10))
	default:
		f.add(asm.Mov.Imm(asm.R0, int32(f.pick(3))))
	}
	f.add(asm.Return())
}

// linkCalls sets the constant of every bpf-to-bpf call and BPF_PSEUDO_FUNC ld_imm64 that
// names a function by Reference: the distance in raw slots to the instruction carrying
// that Symbol (the reference stays, for readers; the kernel sees the constant).
func linkCalls(insns asm.Instructions) {
	syms := map[string]int{}
	iter := insns.Iterate()
	for iter.Next() {
		if sym := iter.Ins.Symbol(); sym != "" {
			syms[sym] = int(iter.Offset)
		}
	}
	iter = insns.Iterate()
	for iter.Next() {
		ins := iter.Ins
		if ref := ins.Reference(); ref != "" && (ins.IsFunctionCall() || ins.IsLoadOfFunctionPointer()) {
			if t, ok := syms[ref]; ok {
				ins.Constant = int64(t - int(iter.Offset) - 1)
			}
		}
	}
}
