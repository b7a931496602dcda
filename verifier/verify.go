package verifier

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// Limits of kernel/bpf/verifier.c.
const (
	complexityLimitInsns  = 1000000 // BPF_COMPLEXITY_LIMIT_INSNS
	complexityLimitJmpSeq = 8192    // BPF_COMPLEXITY_LIMIT_JMP_SEQ
	maxVarOff             = 1 << 29 // BPF_MAX_VAR_OFF
	maxLogLines           = 20000   // the model's cap on instruction and state lines
	maxStatesPerInsn      = 64      // the model's cap on recorded states per prune point
)

// rejectErr ends a run with the kernel's errno; its messages are already in the log.
type rejectErr struct{ errno string }

func (e *rejectErr) Error() string { return e.errno }

func reject(errno string) error { return &rejectErr{errno} }

// pending is a branch pushed for later exploration (push_stack).
type pending struct {
	st        *state
	insn, prv int
	logLen    int // the log up to the branch: a path that ends well leaves no lines (level 1)
}

// checker holds one verification run.
type checker struct {
	prog  *Program
	env   Env
	insns []insn

	fn    *btf.Func
	proto *btf.FuncProto
	btfID uint32

	log    []string
	cur    string // current instruction line, awaiting its state suffix
	errMsg string
	errno  string
	notes  []string

	loads   map[int]string
	loadIdx []int

	st        *state
	idx       int
	stack     []pending
	visited   map[int][]*visit
	processed int
	nStates   int
	maxPer    int
	idGen     uint32
	scratch   map[int]bool
	prune     map[int]bool
	ptrKind   map[int]string // save_aux_ptr_type: pointer kind per load/store insn
	lastLine  string
	lastMsg   string
	insnMap   map[int]int // ld_imm64 insn -> map index
	fi        flowInfo
	truncated bool
	loopOld   *visit // the looping state's earlier self, for the 6.12 message
	// liveFolded is 7.2's live-in registers on the constant-folded CFG (constfold.go).
	liveFolded []regset
	foldedBr   map[int]int
	iterKeep   []bool // iter.go: spilled slots widening keeps
	// jmps is jmps_processed; prevJmps and prevInsns the counters when a state was last
	// recorded (env->prev_jmps_processed, prev_insn_processed).
	jmps, prevJmps, prevInsns int
	epoch                     uint64
	tmpID                     uint32 // temporary ids of check_scalar_ids

	kfuncs map[int]*kfuncDesc // the kfunc called at each insn (kfunc.go)
	so     *structOps         // the member a struct_ops program implements (structops.go)

	// subprogs is subprog_info (index 0 the main program), subprogOf each insn's subprog.
	subprogs  []subprogInfo
	subprogOf []int
	// fr is the frame the current stack access reaches (set by stackBounds), frameNo its
	// number.
	fr      *frame
	frameNo int
	// cbNext is where a 6.1 callback call continues: the callback's first insn.
	cbNext int
	// rangeWithin is states_equal's RANGE_WITHIN (6.12's callback convergence).
	rangeWithin bool
	// hasLine marks the insns with a line info record; lineShown that one was printed.
	hasLine   []bool
	lineShown bool
}

// logf logs a verifier message (a candidate for Result.Error).
func (c *checker) logf(format string, args ...any) {
	c.flush()
	c.lastMsg = fmt.Sprintf(format, args...)
	c.log = append(c.log, c.lastMsg)
}

// logx logs a line that is not a message: state dumps, source lines, "safe".
func (c *checker) logx(format string, args ...any) {
	c.flush()
	if len(c.log) >= maxLogLines && !strings.HasPrefix(format, "processed") {
		return
	}
	c.log = append(c.log, fmt.Sprintf(format, args...))
}

func (c *checker) flush() {
	if c.cur != "" {
		c.log = append(c.log, c.cur)
		c.cur = ""
	}
}

func (c *checker) note(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

// has asks the profile for a capability: every version-dependent rule goes through it.
func (c *checker) has(cp btfmodel.Capability) bool { return c.env.Kernel.Has(cp) }

// run is bpf_check: pre-passes in the profile's order, then the walk, then the stats line.
func (c *checker) run() {
	err := c.setup()
	if err == nil {
		err = c.walk()
	}
	c.flush()
	if err != nil {
		var re *rejectErr
		if errors.As(err, &re) {
			c.errno = re.errno
		} else {
			// Not a kernel verdict: the input could not be loaded at all.
			c.errno = "EINVAL"
			c.logf("model: %s", err.Error())
		}
		c.errMsg = c.lastMsg
	}
	c.logx("processed %d insns (limit %d) max_states_per_insn %d total_states %d peak_states %d mark_read %d",
		c.processed, complexityLimitInsns, c.maxPer, c.nStates, c.nStates, 0)
}

// setup resolves the section and target, decodes instructions and runs the pre-passes.
func (c *checker) setup() error {
	// Every rule asks the profile; a kernel no profile names has no answers to give.
	if _, err := btfmodel.ParseKernel(string(c.env.Kernel)); err != nil {
		return err
	}
	p := c.prog
	if p.Section != "" && (p.AttachType == "" || p.Target == "") {
		at, target, sl, err := ParseSection(p.Section)
		if err != nil {
			return err
		}
		if p.AttachType == "" {
			p.AttachType = at
		}
		if p.Target == "" {
			p.Target = target
		}
		p.Sleepable = p.Sleepable || sl
	}
	if p.AttachType == "" || p.Target == "" {
		return errors.New("program has no attach type and target (set Section)")
	}
	if c.env.BTF == nil {
		return errors.New("no kernel BTF")
	}
	if err := c.resolveTarget(); err != nil { // attach.go
		return err
	}
	var err error
	c.insns, err = decode(p.Instructions)
	if err != nil {
		return err
	}
	if err := c.resolveKfuncs(); err != nil { // kfunc.go, libbpf's ksym resolution
		return err
	}
	c.loads = map[int]string{}
	c.ptrKind = map[int]string{}
	if err := c.addSubprogs(); err != nil {
		return err
	}
	if err := c.checkSubprogs(); err != nil {
		return err
	}
	if !c.has(btfmodel.CapVerifierAttachAfterCFG) {
		if err := c.checkAttach(); err != nil {
			return err
		}
		if err := c.resolveMaps(); err != nil {
			return err
		}
		return c.checkCFG()
	}
	if err := c.resolveMaps(); err != nil {
		return err
	}
	if err := c.checkCFG(); err != nil {
		return err
	}
	if err := c.checkAttach(); err != nil {
		return err
	}
	if c.has(btfmodel.CapVerifierRecursiveCallMsg) {
		return c.checkCallChainDepth() // subprog.go: refused after the attach target
	}
	return nil
}

func (c *checker) initState() *state {
	st := &state{}
	st.callsite = -1
	st.regs[1] = reg{typ: ptrToCtx, v: constScalar(0)}
	st.regs[10] = reg{typ: ptrToStack, v: constScalar(0)}
	c.structOpsRefs(st)
	return st
}

// walk is bpf_check's do_check_subprogs / do_check_main in the profile's order, then
// check_max_stack_depth.
func (c *checker) walk() error {
	c.fi = c.flow()
	c.scratch = map[int]bool{}
	if !c.has(btfmodel.CapVerifierGlobalMainFirst) {
		if err := c.verifyGlobals(); err != nil {
			return err
		}
	}
	st := c.initState()
	c.st = st
	c.mainArgMatch()
	if err := c.walkFrom(st, 0); err != nil {
		return err
	}
	if c.has(btfmodel.CapVerifierGlobalMainFirst) {
		if err := c.verifyGlobals(); err != nil {
			return err
		}
	}
	// The walks' lines are gone by the time check_max_stack_depth speaks (its message is
	// the log's first on every kernel).
	c.flush()
	n := len(c.log)
	err := c.checkMaxStackDepth()
	if err != nil {
		c.log = append(c.log[:0], c.log[n:]...)
	}
	return err
}

// walkFrom is do_check from one entry state: depth-first over the branches, fall-through
// first.
func (c *checker) walkFrom(st *state, start int) error {
	c.st = st
	c.visited = map[int][]*visit{}
	c.stack = nil
	c.logx("%d:%s", start, c.stateDump(c.st, nil))
	c.idx = start
	for {
		c.processed++
		if c.processed > complexityLimitInsns {
			c.logf("BPF program is too large. Processed %d insn", c.processed)
			return reject("E2BIG")
		}
		if c.idx < 0 || c.idx >= len(c.insns) {
			c.logf("invalid insn idx %d insn_cnt %d", c.idx, len(c.insns))
			return reject("EFAULT")
		}
		c.fr = nil
		if c.prune[c.idx] || c.forcePrune(c.idx) {
			switch c.visitState() {
			case 1:
				c.logx("%d: safe", c.idx)
				if done, err := c.popBranch(); done || err != nil {
					return err
				}
				continue
			case -1:
				c.logf("infinite loop detected at insn %d", c.idx)
				if c.has(btfmodel.CapLogInfiniteLoopStates) { // 6.12 shows both states; the last becomes the reason
					c.logf("cur state:%s", c.stateDump(c.st, nil))
					c.logf("old state:%s", c.loopOldDump(c.loopOld))
				}
				return reject("EINVAL")
			}
		}
		in := &c.insns[c.idx]
		if (in.line != "" || c.hasLine[c.idx]) && (in.line != c.lastLine || !c.lineShown) {
			if in.line == "" && c.has(btfmodel.CapLogLinfoFileLine) {
				c.logx("; @ %s", "?") // 6.12: '; @ file:line' (the model has no file names)
			} else {
				c.logx("; %s", in.line) // verbose_linfo; 6.1 prints an empty line as "; "
			}
			c.lastLine, c.lineShown = in.line, true
		}
		c.flush()
		if len(c.log) < maxLogLines {
			c.cur = fmt.Sprintf("%d: %s", c.idx, disasm(in, c.mapLabel, c.helperName))
		} else if !c.truncated {
			c.truncated = true
			c.note("log truncated after %d lines; messages are still logged", maxLogLines)
		}
		clear(c.scratch)
		c.recordStep()
		next, exit, err := c.step(in)
		if err != nil {
			return err
		}
		if exit {
			c.flush()

			if done, err := c.popBranch(); done || err != nil {
				return err
			}
			continue
		}
		c.stateSuffix(next)
		c.idx = next
	}
}

// stateSuffix prints the scratched state after an instruction, as print_insn_state does:
// appended to the instruction line ("; R2_w=..."), or, when messages came in between, on
// its own line headed by the next instruction's index.
func (c *checker) stateSuffix(next int) {
	if len(c.scratch) == 0 || len(c.log) >= maxLogLines {
		c.flush()
		return
	}
	d := c.stateDump(c.st, c.scratch)
	if d == "" {
		c.flush()
		return
	}
	if c.cur == "" {
		c.logx("%d:%s", next, d)
		return
	}
	pos := len(c.cur) + 1
	pad := (max(pos, 8)+39)/40*40 - pos - 1
	c.cur += strings.Repeat(" ", max(pad, 1)) + ";" + d
	c.flush()
}

// popBranch continues with the most recently pushed branch; done when none is left.
func (c *checker) popBranch() (bool, error) {
	if len(c.stack) == 0 {
		return true, nil
	}
	p := c.stack[len(c.stack)-1]
	c.stack = c.stack[:len(c.stack)-1]
	c.flush()
	if len(c.log) > p.logLen && !c.truncated {
		c.log = c.log[:p.logLen] // pop_stack's bpf_vlog_reset
	}
	c.st, c.idx = p.st, p.insn
	c.logx("%d:%s", c.idx, c.stateDump(c.st, nil))
	return false, nil
}

// push records the other edge of a branch (push_stack).
func (c *checker) push(st *state, target int) error {
	n := len(c.log)
	if c.cur != "" {
		n++ // the branch's own line stays
	}
	c.stack = append(c.stack, pending{st: st, insn: target, prv: c.idx, logLen: n})
	if len(c.stack) > complexityLimitJmpSeq {
		c.logf("The sequence of %d jumps is too complex.", len(c.stack))
		return reject("E2BIG")
	}
	return nil
}

// visitState is is_state_visited with exact equality: 1 prune, -1 infinite loop, 0 new.
func (c *checker) visitState() int {
	// is_state_visited records a new state only after 2 jumps and 8 insns since the last
	// one (20 and 100 inside a loop); which states exist decides what gets pruned.
	add := c.jmps-c.prevJmps >= 2 && c.processed-c.prevInsns >= 8
	c.epoch++ // marks the ancestors, still being explored (branches > 0): never prune against them
	if c.forcePrune(c.idx) {
		// 6.12 at a callback-calling helper: RANGE_WITHIN against every state there,
		// ancestors included, and no loop check; the state is always recorded.
		add = true
		c.rangeWithin = true
		for v := c.st.parent; v != nil; v = v.parent {
			if v.insn == c.idx && c.covers(v, c.st, c.idx) {
				c.rangeWithin = false
				return 1
			}
		}
		for _, v := range c.visited[c.idx] {
			if c.covers(v, c.st, c.idx) {
				c.rangeWithin = false
				return 1
			}
		}
		c.rangeWithin = false
	}
	for v := c.st.parent; v != nil; v = v.parent {
		if v.insn != c.idx || c.forcePrune(c.idx) {
			continue
		}
		v.ancestor = c.epoch
		// states_maybe_looping compares the registers byte for byte first.
		if regsExact(v.st, c.st) && len(v.st.callers) == len(c.st.callers) && v.st.iterDepth == c.st.iterDepth && c.covers(v, c.st, c.idx) { // iter_active_depths_differ
			c.loopOld = v
			return -1
		}
		if c.jmps-c.prevJmps < 20 && c.processed-c.prevInsns < 100 {
			add = false
		}
	}
	for _, v := range c.visited[c.idx] {
		if v.ancestor != c.epoch && c.covers(v, c.st, c.idx) {
			// propagate_liveness: what the pruned-against subtree read, this path reads.
			for spi := 0; spi < stackSize/regSize; spi++ {
				if v.read&(1<<uint(spi)) != 0 {
					c.markStackRead(spi)
				}
			}
			return 1
		}
	}
	if !add || len(c.visited[c.idx]) >= maxStatesPerInsn {
		return 0 // keep exploring without recording: bounds memory and time on long loops
	}
	c.prevJmps, c.prevInsns = c.jmps, c.processed
	// The checkpoint keeps the segment's write marks; the new segment starts without them
	// ("_w" in the log), as is_state_visited does.
	v := &visit{insn: c.idx, st: c.st.clone(), parent: c.st.parent, written: c.st.written}
	for i := range c.st.regs {
		c.st.regs[i].written = false
	}
	c.st.written = 0
	c.st.hist, c.st.histLost = nil, false
	c.visited[c.idx] = append(c.visited[c.idx], v)
	c.st.parent = v
	c.nStates++
	c.maxPer = max(c.maxPer, len(c.visited[c.idx]))
	return 0
}

// checkReg is check_reg_arg(SRC_OP).
func (c *checker) readReg(r uint8) error {
	if r > 10 {
		c.logf("R%d is invalid", r)
		return reject("EINVAL")
	}
	c.scratch[int(r)] = true
	c.markRegRead(r)
	if c.st.regs[r].typ == notInit {
		c.logf("R%d !read_ok", r)
		return reject("EACCES")
	}
	return nil
}

// writeReg is check_reg_arg(DST_OP): R10 is read-only.
func (c *checker) writeReg(r uint8) error {
	if r > 10 {
		c.logf("R%d is invalid", r)
		return reject("EINVAL")
	}
	if r == 10 {
		c.logf("frame pointer is read only")
		return reject("EACCES")
	}
	c.scratch[int(r)] = true
	return nil
}

func (c *checker) setReg(r uint8, v reg) {
	v.written = true
	c.st.regs[r] = v
	c.scratch[int(r)] = true
}

func (c *checker) newID() uint32 {
	c.idGen++
	return c.idGen
}

// step executes one instruction: the next index, or exit for a finished path.
func (c *checker) step(in *insn) (int, bool, error) {
	if in.filler {
		c.logf("invalid insn idx %d", c.idx)
		return 0, false, reject("EINVAL")
	}
	switch in.class() {
	case clsALU, clsALU64:
		return c.idx + 1, false, c.alu(in)
	case clsLDX:
		return c.idx + 1, false, c.ldx(in)
	case clsSTX:
		return c.idx + 1, false, c.stx(in)
	case clsST:
		return c.idx + 1, false, c.storeImm(in)
	case clsLD:
		if in.isLdImm64() {
			return c.idx + 2, false, c.ldImm64(in)
		}
		c.logf("BPF_LD_[ABS|IND] instructions not allowed for this program type")
		return 0, false, reject("EINVAL")
	case clsJMP, clsJMP32:
		c.jmps++
		return c.jmp(in)
	}
	c.logf("unknown insn class %d", in.class())
	return 0, false, reject("EINVAL")
}

// explain records the explanation of a load at the current instruction (first path wins).
func (c *checker) explain(text string) {
	if _, ok := c.loads[c.idx]; !ok {
		c.loads[c.idx] = text
		c.loadIdx = append(c.loadIdx, c.idx)
	}
}

// loadList is Result.Loads: explanations in instruction order.
func (c *checker) loadList() []LoadExplanation {
	idx := append([]int(nil), c.loadIdx...)
	sort.Ints(idx)
	var out []LoadExplanation
	for _, i := range idx {
		out = append(out, LoadExplanation{Insn: i, Text: c.loads[i]})
	}
	return out
}

// mainArgMatch is 6.1's btf_check_subprog_arg_match for the main program when it carries
// BTF func info (clang's objects do): a first argument that is a pointer to anything but a
// struct (clang's "u64 *ctx") is not recognised as the context. The kernel only logs it.
func (c *checker) mainArgMatch() {
	if len(c.prog.Instructions) == 0 {
		return
	}
	fn := btf.FuncMetadata(&c.prog.Instructions[0])
	if fn == nil {
		return
	}
	proto, ok := fn.Type.(*btf.FuncProto)
	if c.has(btfmodel.CapVerifierNoMainArgMatch) {
		// 6.12's btf_prepare_func_args reads the main program's prototype too and logs
		// a void return as it would a global function's (the verdict does not change).
		if !ok || c.has(btfmodel.CapVerifierGlobalVoidReturn) {
			return
		}
		if _, void := proto.Return.(*btf.Void); void {
			c.logf("Global function %s() doesn't return scalar. Only those are supported.", fn.Name)
		}
		return
	}
	if !ok || len(proto.Params) == 0 || len(proto.Params) > 5 {
		return
	}
	ptr, ok := btf.UnderlyingType(proto.Params[0].Type).(*btf.Pointer)
	if !ok {
		return
	}
	if _, isStruct := btf.UnderlyingType(ptr.Target).(*btf.Struct); isStruct {
		return
	}
	c.logf("reg type unsupported for arg#0 function %s#%d", fn.Name, 1)
}

// regsExact is states_maybe_looping's memcmp of the registers (write marks aside).
func regsExact(a, b *state) bool {
	for i := range a.regs {
		x, y := &a.regs[i], &b.regs[i]
		if x.v != y.v || x.typ != y.typ || x.flags != y.flags || x.off != y.off || x.id != y.id || x.refObjID != y.refObjID || x.frameno != y.frameno ||
			x.mapIdx != y.mapIdx || x.memSize != y.memSize || x.btfType != y.btfType {
			return false
		}
	}
	return true
}
