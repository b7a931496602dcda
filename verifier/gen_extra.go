package verifier

import "github.com/cilium/ebpf/asm"

// More generator steps: register-register comparisons, spills and fills of pointers, 32-bit
// copies, atomics, map value arithmetic, 64-bit constants and helper arguments that are
// neither stack nor constant.

// extra picks one of the steps below.
func (s *genState) extra() {
	switch s.pick(12) {
	case 11:
		s.loop()
	case 9:
		// bpf_copy_from_user: sleepable programs only
		s.add(asm.Mov.Reg(asm.R1, asm.R10), asm.Add.Imm(asm.R1, -16), asm.Mov.Imm(asm.R2, []int32{8, 16, 24}[s.pick(3)]),
			asm.Mov.Imm(asm.R3, 0), asm.FnCopyFromUser.Call())
		s.invalidateScratch()
		s.kinds[0] = regKind{set: true}
	case 10:
		// ctx through a spill: the filled copy is the ctx again
		off := int16(-8 * (1 + s.pick(3)))
		dst := s.derived()
		s.add(asm.StoreMem(asm.R10, off, s.ctxReg(), asm.DWord), asm.LoadMem(dst, asm.R10, off, asm.DWord),
			asm.LoadMem(dst, dst, int16(8*s.pick(s.slots()+1)), asm.DWord))
		s.kinds[dst] = regKind{set: true}
	case 0, 1:
		s.regBranch()
	case 2:
		s.spillFill()
	case 3:
		s.mov32()
	case 4:
		s.atomic()
	case 5:
		s.mapValueWalk()
	case 6:
		dst := s.derived()
		s.add(asm.LoadImm(dst, []int64{0x1122334455667788, -1, 1 << 32, 0x7fffffff}[s.pick(4)], asm.DWord))
		s.kinds[dst] = regKind{set: true}
	case 7:
		s.funcArgVar()
	default:
		s.probeReadVar()
	}
}

// set picks a register believed to hold something, R0 included, or R6 (ctx).
func (s *genState) set() asm.Register {
	var regs []asm.Register
	for _, r := range []asm.Register{asm.R0, asm.R7, asm.R8, asm.R9} {
		if s.kinds[r].set {
			regs = append(regs, r)
		}
	}
	if len(regs) == 0 || s.chance(5) {
		return s.ctxReg()
	}
	return regs[s.pick(len(regs))]
}

// regBranch compares two registers (scalars, pointers or one of each).
func (s *genState) regBranch() {
	a, b := s.set(), s.set()
	op := genJumps[s.pick(len(genJumps))]
	ins := op.Reg(a, b, "")
	if s.chance(30) {
		ins = op.Reg32(a, b, "")
	}
	s.items = append(s.items, genItem{insns: asm.Instructions{ins}, skip: 1 + s.pick(2)})
}

// spillFill spills a register (often a pointer) and fills it back, whole or narrow.
func (s *genState) spillFill() {
	src := s.set()
	off := int16(-8 * (1 + s.pick(4)))
	sizes := []asm.Size{asm.DWord, asm.DWord, asm.DWord, asm.Word}
	dst := s.derived()
	s.add(asm.StoreMem(asm.R10, off, src, sizes[s.pick(len(sizes))]))
	if s.chance(20) {
		s.helper() // a helper between may clobber the slot
	}
	sz := sizes[s.pick(len(sizes))]
	s.add(asm.LoadMem(dst, asm.R10, off, sz))
	s.kinds[dst] = s.kinds[src]
	if sz != asm.DWord {
		s.kinds[dst] = regKind{set: true}
	}
}

// mov32 copies the low half of a register (a pointer's becomes a scalar).
func (s *genState) mov32() {
	src, dst := s.set(), s.derived()
	s.add(asm.Mov.Reg32(dst, src))
	s.kinds[dst] = regKind{set: true}
}

// atomic adds to the stack, a map value or (refused) a BTF pointer.
func (s *genState) atomic() {
	src := s.set()
	switch s.pick(3) {
	case 0:
		s.add(storeImm(asm.R10, -8, 0, asm.DWord), asm.StoreXAdd(asm.R10, src, asm.DWord))
		s.items[len(s.items)-1].insns[1].Offset = -8
	default:
		regs := s.ptrRegs()
		if len(regs) == 0 {
			s.add(storeImm(asm.R10, -16, 1, asm.DWord), asm.StoreXAdd(asm.R10, src, asm.Word))
			s.items[len(s.items)-1].insns[1].Offset = -16
			return
		}
		s.add(asm.StoreXAdd(regs[s.pick(len(regs))], src, asm.DWord))
	}
}

// mapValueWalk looks up a value, checks it (or not), moves into it and reads or writes.
func (s *genState) mapValueWalk() {
	s.maps = true
	s.add(storeImm(asm.R10, -4, 0, asm.Word), asm.LoadMapPtr(asm.R1, 0), asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4), asm.FnMapLookupElem.Call())
	s.invalidateScratch()
	dst := s.derived()
	s.add(asm.Mov.Reg(dst, asm.R0))
	s.kinds[0] = regKind{set: true}
	if s.chance(85) {
		s.items = append(s.items, genItem{insns: asm.Instructions{asm.JEq.Imm(dst, 0, "")}, skip: 2 + s.pick(2)})
	}
	idx := s.derived()
	if idx == dst {
		idx = asm.R0
	}
	mask := []int32{7, 8, 15, 0xff}[s.pick(4)]
	s.add(asm.FnGetPrandomU32.Call(), asm.Mov.Reg(idx, asm.R0), asm.And.Imm(idx, mask))
	s.invalidateScratch()
	s.add(asm.Add.Reg(dst, idx))
	if s.chance(50) {
		s.add(asm.LoadMem(asm.R0, dst, int16(s.pick(3)*4), []asm.Size{asm.Byte, asm.Word, asm.DWord}[s.pick(3)]))
	} else {
		s.add(storeImm(dst, int16(s.pick(3)*4), 1, []asm.Size{asm.Byte, asm.Word, asm.DWord}[s.pick(3)]))
	}
	s.kinds[0] = regKind{set: true}
	s.kinds[dst] = regKind{set: true}
	s.kinds[idx] = regKind{set: true}
}

// funcArgVar calls bpf_get_func_arg with an index from an argument (checked at run time).
func (s *genState) funcArgVar() {
	ctx := s.ctxReg()
	s.add(asm.LoadMem(asm.R2, ctx, 0, asm.DWord), asm.And.Imm(asm.R2, []int32{3, 7, 0x7fffffff}[s.pick(3)]),
		asm.Mov.Reg(asm.R1, ctx), asm.Mov.Reg(asm.R3, asm.R10), asm.Add.Imm(asm.R3, -8), asm.FnGetFuncArg.Call())
	s.invalidateScratch()
	s.kinds[0] = regKind{set: true}
}

// probeReadVar reads into the stack or a map value with a bounded or unbounded size.
func (s *genState) probeReadVar() {
	size := s.set()
	ins := []asm.Instruction{asm.Mov.Reg(asm.R2, size)}
	if s.chance(70) {
		ins = append(ins, asm.And.Imm(asm.R2, []int32{7, 15, 31, 0xff}[s.pick(4)]))
	}
	ins = append(ins, asm.Mov.Reg(asm.R1, asm.R10), asm.Add.Imm(asm.R1, -16), asm.Mov.Imm(asm.R3, 0), asm.FnProbeReadKernel.Call())
	s.add(ins...)
	s.invalidateScratch()
	s.kinds[0] = regKind{set: true}
}

// loop is a small bounded loop (a back edge): a counter, a body that reads ctx or the
// stack and accumulates, and a comparison against a constant or a register.
func (s *genState) loop() {
	ctr, acc := s.derived(), asm.R0
	if !s.kinds[0].set {
		s.add(asm.Mov.Imm(asm.R0, 0))
		s.kinds[0].set = true
	}
	body := []asm.Instruction{
		[]asm.Instruction{asm.Add.Reg(acc, ctr), asm.Add.Imm(acc, 1), asm.Xor.Reg(acc, ctr)}[s.pick(3)],
		asm.LoadMem(asm.R2, s.ctxReg(), 0, asm.DWord),
	}
	if s.chance(30) {
		body = body[:1]
	}
	n := []int32{3, 8, 40}[s.pick(3)]
	cmp := asm.JLT.Imm(ctr, n, "")
	if s.chance(30) {
		cmp = asm.JNE.Imm(ctr, n, "")
	}
	step := asm.Add.Imm(ctr, 1)
	insns := append([]asm.Instruction{asm.Mov.Imm(ctr, 0)}, body...)
	insns = append(insns, step, cmp)
	insns[len(insns)-1].Offset = int16(-(len(body) + 2))
	s.add(insns...)
	s.kinds[ctr] = regKind{set: true}
	s.kinds[2] = regKind{}
}

// ret sets R0 (or not) and exits: values around each attach type's allowed range.
func (s *genState) ret() {
	switch s.pick(16) {
	case 0:
		// R0 as the body left it (maybe unset)
	case 1:
		s.add(asm.Mov.Imm(asm.R0, 1))
	case 2:
		s.add(asm.Mov.Imm32(asm.R0, -1))
	case 3:
		s.add(asm.Mov.Imm(asm.R0, -4095))
	case 4:
		s.add(asm.Mov.Imm(asm.R0, -4096))
	case 5:
		r := s.derived()
		if !s.kinds[r].set {
			r = asm.R1
		}
		s.add(asm.Mov.Reg(asm.R0, r))
	case 6:
		if s.exit {
			s.add(asm.LoadMem(asm.R0, s.ctxReg(), int16(8*(s.slots()-1)), []asm.Size{asm.DWord, asm.Word}[s.pick(2)]))
		} else {
			s.add(asm.Mov.Imm(asm.R0, 0))
		}
	case 7:
		s.add(asm.Mov.Imm(asm.R0, -1))
	default:
		s.add(asm.Mov.Imm(asm.R0, 0))
	}
	s.add(asm.Return())
}
