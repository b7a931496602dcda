package verifier

import (
	"math/rand"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
)

// A random program generator for the subset the model covers: tracing and LSM programs
// built from ctx loads, walks over the targets' real kernel types, scalar and pointer
// arithmetic, forward branches, stack traffic, the helpers trampoline programs call, and a
// return. Choices lean to the edge of the rules (an offset just past an argument or a
// member, a narrow load of a pointer, a missing NULL check, an out-of-range return), so
// that the differential run against the real verifier meets both verdicts often.
//
// Registers: R6 keeps the ctx, R7-R9 hold what the program derived (pointers or scalars),
// R0-R5 are scratch. Jumps go forward but for small counted loops, so every program ends.

// genTargets are the sections programs attach to; those absent from a kernel are dropped.
var genTargets = []string{
	"fentry/bpf_fentry_test1", "fentry/bpf_fentry_test2", "fentry/bpf_fentry_test3",
	"fentry/bpf_fentry_test4", "fentry/bpf_fentry_test6", "fentry/bpf_fentry_test7",
	"fexit/bpf_fentry_test2", "fexit/bpf_fentry_test7", "fexit/bpf_fentry_test8",
	"fentry/bpf_modify_return_test", "fmod_ret/bpf_modify_return_test", "fexit/bpf_modify_return_test",
	"fentry/tcp_v4_connect", "fexit/tcp_v4_connect", "fentry/tcp_set_state", "fentry/tcp_rcv_established",
	"fentry/vfs_read", "fexit/vfs_read", "fexit/sock_alloc", "fentry/kfree", "fmod_ret/security_file_open",
	"fentry/__audit_tk_injoffset", "fentry.s/bpf_fentry_test1", "fexit/do_exit",
	"lsm/file_open", "lsm.s/file_open", "lsm/socket_create", "lsm/task_free", "lsm/bprm_check_security",
	"lsm/file_permission", "lsm/inode_permission",
}

// genField is a readable spot of a struct: a scalar member, an array element or a pointer.
type genField struct {
	off, size int
	target    *btf.Struct // pointer to a struct: the load gives PTR_TO_BTF_ID
}

// Generator makes random programs for one kernel profile.
type Generator struct {
	env     Env
	rng     *rand.Rand
	targets []string
	fields  map[btf.Type][]genField
	funcs   map[string]bool // has (gen_kfunc.go)
}

// NewGenerator prepares a generator for env's kernel.
func NewGenerator(env Env, seed int64) *Generator {
	g := &Generator{env: env, rng: rand.New(rand.NewSource(seed)), fields: map[btf.Type][]genField{}}
	for _, sec := range genTargets {
		_, target, _, _ := ParseSection(sec)
		if _, err := btfmodel.FuncByName(env.BTF, target); err == nil {
			g.targets = append(g.targets, sec)
		}
	}
	return g
}

// genMap is the map generated programs use (index 0 of Program.Maps).
var genMap = Map{Name: "m", Type: "hash", KeySize: 4, ValueSize: 16, MaxEntries: 8}

// regKind is what the generator believes a register holds (the verifier decides).
type regKind struct {
	ptr  *btf.Struct // PTR_TO_BTF_ID of this struct
	mapv bool        // map value, maybe NULL until checked
	set  bool        // holds something
	// in a called function: ctx is the caller's ctx, stack a pointer into the caller's
	// stack (gen_subprog.go)
	ctx, stack bool
}

type genItem struct {
	insns asm.Instructions
	skip  int // a forward branch over the next skip items
}

type genState struct {
	g     *Generator
	proto *btf.FuncProto
	lsm   bool
	exit  bool // fexit, fmod_ret or LSM: a return slot after the arguments
	kinds [11]regKind
	items []genItem
	maps  bool
	// Functions after the first (gen_subprog.go): sym names the function's first
	// instruction, meta its BTF func_info (nil: the program has none), subs the functions
	// laid out after this one (shared by every function of a program).
	sym    string
	meta   *btf.Func
	params []btf.Type // the prototype funcMeta gives a static function
	subs   *[]*genState
}

// Program generates one program named name. About a third are the call shapes of
// gen_subprog.go and gen_kfunc.go (bpf-to-bpf calls, callbacks, kfuncs).
func (g *Generator) Program(name string) Program {
	sec := g.targets[g.rng.Intn(len(g.targets))]
	at, target, _, _ := ParseSection(sec)
	fn, _ := btfmodel.FuncByName(g.env.BTF, target)
	s := &genState{g: g, proto: fn.Type.(*btf.FuncProto), lsm: at == btfmodel.LSM, subs: new([]*genState)}
	s.exit = at != btfmodel.Fentry
	if g.rng.Intn(10) != 0 {
		s.add(asm.Mov.Reg(asm.R6, asm.R1))
		s.kinds[6].set = true
	}
	switch r := g.rng.Intn(100); {
	case r < 18:
		s.subprogProgram()
	case r < 36:
		s.kfuncProgram(sec)
	default:
		for n := 2 + g.rng.Intn(10); n > 0; n-- {
			s.step()
		}
	}
	s.ret()
	p := Program{Name: name, Section: sec, License: "GPL"}
	funcs := append([]*genState{s}, *s.subs...)
	for _, f := range funcs {
		if f.maps {
			p.Maps = []Map{genMap}
		}
		insns := f.resolve()
		if f.sym != "" {
			insns[0] = insns[0].WithSymbol(f.sym)
		}
		if s.meta != nil {
			insns[0] = btf.WithFuncMetadata(insns[0], f.funcMeta())
		}
		p.Instructions = append(p.Instructions, insns...)
	}
	linkCalls(p.Instructions)
	return p
}

// resolve lays out one function's items, setting the offsets of forward branches (which
// count raw instruction slots: a ld_imm64 takes two).
func (s *genState) resolve() asm.Instructions {
	var out asm.Instructions
	for i, it := range s.items {
		if it.skip > 0 {
			off := 0
			// never over the function's final exit
			for _, next := range s.items[i+1 : min(len(s.items)-1, i+1+it.skip)] {
				for _, ins := range next.insns {
					off += int(ins.Size() / asm.InstructionSize)
				}
			}
			it.insns[len(it.insns)-1].Offset = int16(off)
		}
		out = append(out, it.insns...)
	}
	return out
}

func (s *genState) add(insns ...asm.Instruction) { s.items = append(s.items, genItem{insns: insns}) }

func (s *genState) pick(n int) int { return s.g.rng.Intn(n) }

func (s *genState) chance(pct int) bool { return s.g.rng.Intn(100) < pct }

// ctxReg is the register holding ctx: R6 when saved, else R1 (valid until the first call).
func (s *genState) ctxReg() asm.Register {
	if s.kinds[6].set && s.kinds[6].ptr == nil && !s.kinds[6].mapv {
		return asm.R6
	}
	return asm.R1
}

// slots is the number of ctx slots, the return slot included when there is one.
func (s *genState) slots() int {
	n := 0
	for _, p := range s.proto.Params {
		sz, _ := btf.Sizeof(p.Type)
		n += max(1, (sz+7)/8)
	}
	if _, void := s.proto.Return.(*btf.Void); s.exit && !void {
		n++
	}
	return n
}

// derived picks one of R7-R9 to receive a value.
func (s *genState) derived() asm.Register { return asm.Register(7 + s.pick(3)) }

func (s *genState) step() {
	switch r := s.pick(100); {
	case r < 22:
		s.ctxLoad()
	case r < 44:
		s.btfLoad()
	case r < 56:
		s.scalarOp()
	case r < 64:
		s.ptrArith()
	case r < 74:
		s.branch()
	case r < 82:
		s.stackOp()
	case r < 92:
		s.helper()
	default:
		s.extra()
	}
}

// ctxLoad reads an argument slot: mostly a valid one, sometimes just outside or narrow.
func (s *genState) ctxLoad() {
	n := s.slots()
	off := 8 * s.pick(n)
	size := asm.DWord
	switch s.pick(48) {
	case 0:
		off = -8
	case 1:
		off += 4
		size = asm.Word
	case 2:
		size = asm.Word
	case 3:
		size = asm.Byte
	case 4:
		off = 8 * (n + s.pick(3))
	}
	dst := s.derived()
	ctx := s.ctxReg()
	if s.chance(4) {
		s.add(asm.Mov.Imm(asm.R0, 0), asm.StoreMem(ctx, int16(off), asm.R0, size)) // a write: always refused
		s.kinds[0] = regKind{set: true}
		return
	}
	s.add(asm.LoadMem(dst, ctx, int16(off), size))
	s.kinds[dst] = regKind{set: true}
	if arg := s.argAt(off / 8); arg != nil && off%8 == 0 && size == asm.DWord {
		if ptr, ok := btf.UnderlyingType(arg).(*btf.Pointer); ok {
			if st, ok := btf.UnderlyingType(ptr.Target).(*btf.Struct); ok {
				s.kinds[dst].ptr = st
			}
		}
	}
}

// argAt is the declared type of the argument starting at slot i, or nil.
func (s *genState) argAt(i int) btf.Type {
	slot := 0
	for _, p := range s.proto.Params {
		if slot == i {
			return p.Type
		}
		sz, _ := btf.Sizeof(p.Type)
		slot += max(1, (sz+7)/8)
	}
	return nil
}

// ptrRegs are the registers believed to hold BTF pointers.
func (s *genState) ptrRegs() []asm.Register {
	var out []asm.Register
	for r := asm.R7; r <= asm.R9; r++ {
		if s.kinds[r].ptr != nil {
			out = append(out, r)
		}
	}
	return out
}

// btfLoad dereferences a BTF pointer at a member, an array element or a pointer field,
// sometimes with the wrong size, a shifted offset, past the end, or as a write.
func (s *genState) btfLoad() {
	regs := s.ptrRegs()
	if len(regs) == 0 {
		s.ctxLoad()
		return
	}
	src := regs[s.pick(len(regs))]
	st := s.kinds[src].ptr
	fields := s.g.structFields(st)
	if len(fields) == 0 {
		return
	}
	f := fields[s.pick(len(fields))]
	off, size := f.off, f.size
	switch s.pick(14) {
	case 0:
		off = int(st.Size) + s.pick(2)*4
		size = 8
	case 1:
		off = -8
	case 2:
		off++
	case 3:
		size = []int{1, 2, 4, 8}[s.pick(4)]
	case 4:
		size = 8
	}
	sz := map[int]asm.Size{1: asm.Byte, 2: asm.Half, 4: asm.Word, 8: asm.DWord}[size]
	if sz == asm.InvalidSize {
		sz = asm.DWord
	}
	if s.chance(4) {
		s.add(asm.Mov.Imm(asm.R0, 0), asm.StoreMem(src, int16(off), asm.R0, sz))
		return
	}
	dst := s.derived()
	if s.chance(30) {
		dst = asm.Register(1 + s.pick(5)) // a scratch register, read right after
	}
	s.add(asm.LoadMem(dst, src, int16(off), sz))
	k := regKind{set: true}
	if f.target != nil && off == f.off && size == 8 {
		k.ptr = f.target
	}
	s.kinds[dst] = k
	if dst < asm.R6 {
		if s.kinds[0].set {
			s.add(asm.Add.Reg(asm.R0, dst))
		} else {
			s.add(asm.Mov.Reg(asm.R0, dst))
		}
		s.kinds[0] = regKind{set: true}
	}
}

// structFields lists a struct's readable spots, nested members and arrays flattened (two
// levels), cached per type.
func (g *Generator) structFields(st *btf.Struct) []genField {
	if f, ok := g.fields[st]; ok {
		return f
	}
	var out []genField
	var walk func(t btf.Type, base, depth int)
	walk = func(t btf.Type, base, depth int) {
		switch tt := btf.UnderlyingType(t).(type) {
		case *btf.Struct:
			if depth > 2 {
				return
			}
			for _, m := range tt.Members {
				if m.BitfieldSize == 0 && m.Offset%8 == 0 {
					walk(m.Type, base+int(m.Offset/8), depth+1)
				}
			}
		case *btf.Union:
			if depth > 2 {
				return
			}
			for _, m := range tt.Members {
				walk(m.Type, base+int(m.Offset/8), depth+1)
			}
		case *btf.Array:
			esz, err := btf.Sizeof(tt.Type)
			if err != nil || esz == 0 || tt.Nelems == 0 {
				return
			}
			walk(tt.Type, base, depth+1)
			walk(tt.Type, base+esz*int(tt.Nelems-1), depth+1)
		case *btf.Pointer:
			f := genField{off: base, size: 8}
			if s, ok := btf.UnderlyingType(tt.Target).(*btf.Struct); ok {
				f.target = s
			}
			out = append(out, f)
		case *btf.Int, *btf.Enum:
			sz, _ := btf.Sizeof(tt)
			if sz == 1 || sz == 2 || sz == 4 || sz == 8 {
				out = append(out, genField{off: base, size: sz})
			}
		}
	}
	walk(st, 0, 0)
	if len(out) > 300 { // huge structs (task_struct): keep the pointers and a sample
		var keep []genField
		for i, f := range out {
			if f.target != nil || i%(len(out)/150) == 0 {
				keep = append(keep, f)
			}
		}
		out = keep
	}
	g.fields[st] = out
	return out
}

var genALU = []asm.ALUOp{asm.Add, asm.Sub, asm.Mul, asm.Div, asm.Or, asm.And, asm.LSh, asm.RSh, asm.Mod, asm.Xor, asm.Mov, asm.ArSh}

// scalarOp is an ALU operation on a derived or scratch register.
func (s *genState) scalarOp() {
	dst := s.derived()
	if s.chance(40) {
		dst = asm.R0
	}
	if !s.kinds[dst].set && s.chance(97) {
		s.add(asm.Mov.Imm(dst, int32(s.pick(64))))
		s.kinds[dst] = regKind{set: true}
		return
	}
	op := genALU[s.pick(len(genALU))]
	imm := []int32{0, 1, 3, 7, 8, 0xff, -1, -4095, 4096, 63}[s.pick(10)]
	if op == asm.LSh || op == asm.RSh || op == asm.ArSh {
		imm &= 63
	}
	var ins asm.Instruction
	switch s.pick(4) {
	case 0:
		ins = op.Imm32(dst, imm)
	case 1:
		if src := s.derived(); s.kinds[src].set || s.chance(10) {
			ins = op.Reg(dst, src)
			break
		}
		fallthrough
	default:
		ins = op.Imm(dst, imm)
	}
	s.add(ins)
	s.kinds[dst] = regKind{set: true}
}

// ptrArith moves a BTF, ctx or map pointer by a constant or a bounded or unbounded scalar.
func (s *genState) ptrArith() {
	regs := s.ptrRegs()
	dst := s.ctxReg()
	if len(regs) > 0 && s.chance(90) {
		dst = regs[s.pick(len(regs))]
	} else if s.chance(60) {
		s.scalarOp()
		return
	}
	switch s.pick(5) {
	case 0, 1:
		s.add(asm.Add.Imm(dst, []int32{8, -8, 4, 16, 0}[s.pick(5)]))
	case 2:
		s.add(asm.Mov.Imm(asm.R0, int32(s.pick(16))), asm.Add.Reg(dst, asm.R0))
	case 3:
		src := s.derived()
		if !s.kinds[src].set {
			s.add(asm.Mov.Reg(src, asm.R10)) // a stack pointer: the AND is refused
			if s.chance(90) {
				s.items[len(s.items)-1].insns[0] = asm.Mov.Imm(src, -1)
			}
		}
		s.add(asm.And.Imm(src, []int32{7, 0xff, 0x7ffffff}[s.pick(3)]), asm.Add.Reg(dst, src))
		s.kinds[src] = regKind{set: true}
	default:
		s.add([]asm.Instruction{asm.Add.Imm32(dst, 1), asm.And.Imm(dst, 1), asm.Sub.Reg(dst, asm.R6)}[s.pick(3)])
		s.kinds[dst] = regKind{set: true}
		return
	}
	if dst != asm.R6 && dst != asm.R1 {
		s.kinds[dst].set = true
	}
}

var genJumps = []asm.JumpOp{asm.JEq, asm.JNE, asm.JGT, asm.JGE, asm.JLT, asm.JLE, asm.JSGT, asm.JSLT, asm.JSet}

// branch skips the next one or two items on a condition, often a NULL check.
func (s *genState) branch() {
	r := s.derived()
	if !s.kinds[r].set {
		r = asm.R0
		if !s.kinds[0].set && s.chance(90) {
			s.add(asm.Mov.Imm(asm.R0, int32(s.pick(8))))
			s.kinds[0].set = true
		}
	}
	op := genJumps[s.pick(len(genJumps))]
	imm := []int32{0, 1, 4, 8, 0x7f, -1}[s.pick(6)]
	if s.kinds[r].ptr != nil || s.kinds[r].mapv {
		op, imm = asm.JEq, 0
		s.kinds[r].mapv = false
	}
	ins := op.Imm(r, imm, "")
	if s.chance(20) {
		ins = op.Imm32(r, imm, "")
	}
	s.items = append(s.items, genItem{insns: asm.Instructions{ins}, skip: 1 + s.pick(2)})
}

// stackOp spills, fills, or reads the stack, at aligned and unaligned, written and
// unwritten offsets.
func (s *genState) stackOp() {
	off := int16(-8 * (1 + s.pick(4)))
	if s.chance(10) {
		off += 4
	}
	sizes := []asm.Size{asm.DWord, asm.DWord, asm.Word, asm.Byte}
	sz := sizes[s.pick(len(sizes))]
	switch s.pick(3) {
	case 0:
		src := s.derived()
		if !s.kinds[src].set {
			src = s.ctxReg()
		}
		s.add(asm.StoreMem(asm.R10, off, src, sz))
	case 1:
		s.add(storeImm(asm.R10, off, int64(s.pick(3)), sz))
	default:
		dst := s.derived()
		s.add(asm.LoadMem(dst, asm.R10, off, sz))
		s.kinds[dst] = regKind{set: true}
	}
}

// helper calls one of the helpers trampoline programs use, arguments mostly right.
func (s *genState) helper() {
	ctx := s.ctxReg()
	fp := func(r asm.Register, off int32) []asm.Instruction {
		return []asm.Instruction{asm.Mov.Reg(r, asm.R10), asm.Add.Imm(r, off)}
	}
	var in []asm.Instruction
	switch s.pick(12) {
	case 0:
		in = append(in, asm.Mov.Reg(asm.R1, ctx), asm.Mov.Imm(asm.R2, int32(s.pick(s.slots()+2))))
		in = append(in, fp(asm.R3, []int32{-8, -8, -16, -12}[s.pick(4)])...)
		in = append(in, asm.FnGetFuncArg.Call())
	case 1:
		in = append(in, asm.Mov.Reg(asm.R1, ctx))
		in = append(in, fp(asm.R2, -8)...)
		in = append(in, asm.FnGetFuncRet.Call())
	case 2:
		in = append(in, asm.Mov.Reg(asm.R1, ctx), asm.FnGetFuncArgCnt.Call())
	case 3:
		in = append(in, asm.Mov.Reg(asm.R1, ctx), asm.FnGetFuncIp.Call())
	case 4:
		in = append(in, asm.Mov.Reg(asm.R1, ctx), asm.FnGetAttachCookie.Call())
	case 5:
		in = append(in, []asm.BuiltinFunc{asm.FnKtimeGetNs, asm.FnGetPrandomU32, asm.FnGetCurrentPidTgid}[s.pick(3)].Call())
	case 6:
		in = append(in, fp(asm.R1, []int32{-16, -16, -8}[s.pick(3)])...)
		in = append(in, asm.Mov.Imm(asm.R2, []int32{8, 16, 0, 4}[s.pick(4)]))
		src := asm.R3
		if regs := s.ptrRegs(); len(regs) > 0 {
			in = append(in, asm.Mov.Reg(asm.R3, regs[s.pick(len(regs))]))
		} else {
			in = append(in, asm.Mov.Imm(src, 0))
		}
		in = append(in, asm.FnProbeReadKernel.Call())
	case 7:
		in = append(in, storeImm(asm.R10, -24, 0x0a6968, asm.DWord))
		in = append(in, fp(asm.R1, -24)...)
		in = append(in, asm.Mov.Imm(asm.R2, []int32{8, 4, 0, 16}[s.pick(4)]), asm.FnTracePrintk.Call())
	case 8, 9:
		s.maps = true
		if s.chance(85) {
			in = append(in, storeImm(asm.R10, -4, int64(s.pick(4)), asm.Word))
		}
		in = append(in, asm.LoadMapPtr(asm.R1, 0))
		in = append(in, fp(asm.R2, -4)...)
		in = append(in, asm.FnMapLookupElem.Call())
		s.add(in...)
		dst := s.derived()
		s.add(asm.Mov.Reg(dst, asm.R0))
		s.kinds[dst] = regKind{set: true, mapv: true}
		if s.chance(70) {
			s.items = append(s.items, genItem{insns: asm.Instructions{asm.JEq.Imm(dst, 0, "")}, skip: 1})
			s.kinds[dst].mapv = false
		}
		off := int16([]int{0, 8, 12, 16}[s.pick(4)])
		s.add(asm.LoadMem(asm.R0, dst, off, asm.DWord))
		s.kinds[0] = regKind{set: true}
		s.invalidateScratch()
		return
	case 10:
		s.maps = true
		in = append(in, storeImm(asm.R10, -4, 1, asm.Word), storeImm(asm.R10, -16, 0, asm.DWord))
		if s.chance(80) {
			in = append(in, storeImm(asm.R10, -24, 0, asm.DWord))
		}
		in = append(in, asm.LoadMapPtr(asm.R1, 0))
		in = append(in, fp(asm.R2, -4)...)
		in = append(in, fp(asm.R3, -24)...)
		in = append(in, asm.Mov.Imm(asm.R4, 0), asm.FnMapUpdateElem.Call())
	default:
		in = append(in, asm.FnGetCurrentTaskBtf.Call())
		s.add(in...)
		dst := s.derived()
		s.add(asm.Mov.Reg(dst, asm.R0))
		var task *btf.Struct
		_ = s.g.env.BTF.TypeByName("task_struct", &task)
		s.kinds[dst] = regKind{set: true, ptr: task}
		s.invalidateScratch()
		return
	}
	s.add(in...)
	s.invalidateScratch()
	s.kinds[0] = regKind{set: true}
}

func (s *genState) invalidateScratch() {
	for r := 1; r <= 5; r++ {
		s.kinds[r] = regKind{}
	}
}

// storeImm is BPF_ST (asm.StoreImm refuses BPF_DW, which the kernel accepts).
func storeImm(dst asm.Register, off int16, v int64, size asm.Size) asm.Instruction {
	return asm.Instruction{OpCode: asm.StoreImmOp(size), Dst: dst, Offset: off, Constant: v}
}
