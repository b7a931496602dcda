package verifier

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// bpf-to-bpf calls: add_subprog, check_subprogs, check_func_call / __check_func_call,
// prepare_func_exit and check_max_stack_depth (kernel/bpf/verifier.c).

const (
	maxCallFrames = 8 // MAX_CALL_FRAMES
	pseudoFunc    = 4 // BPF_PSEUDO_FUNC (ld_imm64 of a callback)
	// privStackMinSize is BPF_PRIV_STACK_MIN_SIZE: 7.2's private stack threshold.
	privStackMinSize = 64
)

// subprogInfo is struct bpf_subprog_info with its func_info (bpf_func_info_aux).
type subprogInfo struct {
	start int
	depth int // stack_depth: the deepest byte the subprogram's frame used
	// fn is the func_info's BTF function (nil without BTF); global its linkage.
	fn     *btf.Func
	global bool
	// called is set when a global subprogram is reached (6.12 verifies only those).
	called, verified bool
	// unreliable is func_info_aux.unreliable: a call's arguments did not match the BTF.
	unreliable bool
}

func (sp *subprogInfo) name() string {
	if sp.fn == nil {
		return ""
	}
	return sp.fn.Name
}

// resolveFuncRefs gives calls and ld_imm64 of functions (cilium's symbolic references)
// their pc-relative immediates, as the loader does, and records each function's
// func_info by its first instruction.
func (c *checker) resolveFuncRefs() map[int]*btf.Func {
	syms := map[string]int{}
	meta := map[int]*btf.Func{}
	c.hasLine = make([]bool, len(c.insns))
	raw := 0
	for i := range c.prog.Instructions {
		ins := &c.prog.Instructions[i]
		if s := ins.Symbol(); s != "" {
			syms[s] = raw
		}
		if fn := btf.FuncMetadata(ins); fn != nil {
			meta[raw] = fn
		}
		if ins.Source() != nil && raw < len(c.hasLine) {
			c.hasLine[raw] = true // a line info record, maybe with an empty line
		}
		raw += int(ins.Size() / 8)
	}
	raw = 0
	for i := range c.prog.Instructions {
		ins := &c.prog.Instructions[i]
		if ins.IsFunctionReference() && ins.Reference() != "" {
			if t, ok := syms[ins.Reference()]; ok && raw < len(c.insns) {
				c.insns[raw].imm = int32(t - raw - 1)
			}
		}
		raw += int(ins.Size() / 8)
	}
	return meta
}

// addSubprogs is add_subprog for every call and function load: the subprogram starts,
// sorted, with their func_info.
func (c *checker) addSubprogs() error {
	meta := c.resolveFuncRefs()
	starts := map[int]bool{0: true}
	for i := range c.insns {
		in := &c.insns[i]
		isCall := in.class() == clsJMP && in.op() == 0x80 && in.src == pseudoCall
		isFunc := in.isLdImm64() && in.src == pseudoFunc
		if !isCall && !isFunc {
			continue
		}
		t := i + int(in.imm) + 1
		if t < 0 || t >= len(c.insns) {
			c.logf("call to invalid destination")
			return reject("EINVAL")
		}
		starts[t] = true
	}
	var list []int
	for s := range starts {
		list = append(list, s)
	}
	sort.Ints(list)
	c.subprogs = make([]subprogInfo, len(list))
	for k, s := range list {
		sp := &c.subprogs[k]
		sp.start = s
		sp.fn = meta[s]
		sp.global = sp.fn != nil && k > 0 && sp.fn.Linkage == btf.GlobalFunc
	}
	c.subprogOf = make([]int, len(c.insns))
	k := 0
	for i := range c.insns {
		if k+1 < len(list) && i >= list[k+1] {
			k++
		}
		c.subprogOf[i] = k
	}
	return nil
}

// subprogEnd is one past the subprogram's last instruction.
func (c *checker) subprogEnd(k int) int {
	if k+1 < len(c.subprogs) {
		return c.subprogs[k+1].start
	}
	return len(c.insns)
}

// hasFuncInfo is prog->aux->func_info: the object carried BTF for its functions.
func (c *checker) hasFuncInfo() bool {
	return len(c.subprogs) > 0 && c.subprogs[0].fn != nil
}

// checkRecursion is check_cfg's back-edge rule for call edges (never loop_ok): a
// subprogram reachable from itself through calls or function loads is refused.
func (c *checker) checkRecursion() error {
	state := make([]int, len(c.subprogs)) // 0 new, 1 on the DFS path, 2 done
	var visit func(k int) error
	visit = func(k int) error {
		state[k] = 1
		for i := c.subprogs[k].start; i < c.subprogEnd(k); i++ {
			in := &c.insns[i]
			if in.filler {
				continue
			}
			if !(in.class() == clsJMP && in.op() == 0x80 && in.src == pseudoCall) && !(in.isLdImm64() && in.src == pseudoFunc) {
				continue
			}
			t := i + int(in.imm) + 1
			callee := c.subprogOf[t]
			switch state[callee] {
			case 1:
				c.logf("back-edge from insn %d to %d", i, t)
				return reject("EINVAL")
			case 0:
				if err := visit(callee); err != nil {
					return err
				}
			}
		}
		state[k] = 2
		return nil
	}
	return visit(0)
}

// subprogCall is check_func_call for the current instruction: the next insn to walk.
func (c *checker) subprogCall(in *insn) (int, error) {
	if c.st.curframe()+1 >= c.maxCallFrames() {
		c.logf("the call stack of %d frames is too deep", c.st.curframe()+2)
		return 0, reject("E2BIG")
	}
	target := c.idx + int(in.imm) + 1
	k := c.subprogOf[target]
	sp := &c.subprogs[k]
	if sp.global {
		return c.idx + 1, c.globalCall(k)
	}
	c.staticArgMatch(k)
	callee := frame{callsite: c.idx, subprog: k}
	for r := 1; r <= 5; r++ {
		callee.regs[r] = c.st.regs[r]
	}
	callee.regs[10] = reg{typ: ptrToStack, v: constScalar(0), frameno: uint8(c.st.curframe() + 1)}
	c.clobberCallerSaved()
	c.pushFrame(callee)
	c.logf("caller:")
	c.logFrame(&c.st.callers[len(c.st.callers)-1], c.st.curframe()-1)
	c.logf("callee:")
	c.logFrame(&c.st.frame, c.st.curframe())
	return target, nil
}

// logFrame is print_verifier_state for one frame.
func (c *checker) logFrame(f *frame, n int) {
	d := c.frameDump(&state{frame: *f}, nil)
	if n > 0 {
		d = fmt.Sprintf(" frame%d:%s", n, d)
	}
	c.logx("%s", strings.TrimSpace(d))
}

// maxCallFrames is MAX_CALL_FRAMES.
func (c *checker) maxCallFrames() int {
	if c.has(btfmodel.CapVerifierCallFrames16) {
		return 16
	}
	return maxCallFrames
}

// pushFrame makes f the current frame, the current one its caller.
func (c *checker) pushFrame(f frame) {
	c.st.callers = append(c.st.callers, c.st.frame)
	c.st.frame = f
	c.st.written = 0 // the write marks are the current frame's
	for r := range c.st.regs {
		c.scratch[r] = true
	}
}

// funcExit is prepare_func_exit: back to the caller, R0 carried over (not from a
// callback), the callee's frame dropped. It gives the next insn to walk.
func (c *checker) funcExit() (int, error) {
	callee := c.st.frame
	r0 := callee.regs[0]
	if callee.callback {
		if err := c.callbackExit(&callee); err != nil {
			return 0, err
		}
	} else if r0.typ == ptrToStack {
		// Any stack pointer, even the caller's own (the kernel is conservative here).
		c.logf("cannot return stack pointer to the caller")
		return 0, reject("EINVAL")
	}
	n := len(c.st.callers)
	c.st.frame = c.st.callers[n-1]
	c.st.callers = c.st.callers[:n-1]
	c.st.written = 0
	next := callee.callsite + 1
	if callee.callback {
		if c.has(btfmodel.CapVerifierCallbackIterate) {
			next = callee.callsite // the call is walked again: the next iteration
		}
	} else {
		c.setReg(0, r0)
	}
	c.logf("returning from callee:")
	c.logFrame(&callee, c.st.curframe()+1)
	c.logf("to caller at %d:", next)
	c.logFrame(&c.st.frame, c.st.curframe())
	return next, nil
}

// checkMaxStackDepth is check_max_stack_depth: along every chain of calls from the main
// program the frames' stack depths, each rounded up, may not exceed MAX_BPF_STACK.
func (c *checker) checkMaxStackDepth() error {
	round := func(d int) int { return (max(d, 1) + 31) / 32 * 32 } // the interpreter's granularity
	if c.has(btfmodel.CapVerifierStackRound16) {
		round = func(d int) int { return (d + 15) / 16 * 16 } // round_up_stack_depth, JIT requested
	}
	// bpf_enable_priv_stack: tracing programs only; bpf_prog_check_recur is false for LSM;
	// and only where the JIT builds private stacks (bpf_jit_supports_private_stack).
	priv := c.has(btfmodel.CapVerifierPrivStack) && btfmodel.VerifierFor(c.env.Arch, c.env.Kernel).PrivateStack &&
		c.prog.AttachType != btfmodel.LSM
	var walk func(k, depth, frames int) error
	walk = func(k, depth, frames int) error {
		if d := round(c.subprogs[k].depth); !priv || d < privStackMinSize {
			depth += d // 7.2: a frame of 64 bytes or more has a private stack of its own
		}
		if depth > stackSize {
			c.logf("combined stack size of %d calls is %d. Too large", frames, depth)
			return reject("EACCES")
		}
		for i := c.subprogs[k].start; i < c.subprogEnd(k); i++ {
			in := &c.insns[i]
			if in.filler || !(in.class() == clsJMP && in.op() == 0x80 && in.src == pseudoCall) && !(in.isLdImm64() && in.src == pseudoFunc) {
				continue
			}
			callee := c.subprogOf[i+int(in.imm)+1]
			if frames+1 > c.maxCallFrames() {
				c.logf("the call stack of %d frames is too deep !", frames+1)
				return reject("E2BIG")
			}
			if err := walk(callee, depth, frames+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(0, 0, 1)
}

// checkRecursionNamed is 7.2's pre-pass refusal of a recursive call, by function names.
func (c *checker) checkRecursionNamed() error {
	n0 := len(c.log)
	err := c.checkRecursion()
	if err == nil {
		return nil // checkCallChainDepth follows check_attach_btf_id (verify.go)
	}
	c.log = c.log[:n0]
	var from, to int
	for k := range c.subprogs {
		for i := c.subprogs[k].start; i < c.subprogEnd(k); i++ {
			in := &c.insns[i]
			if !in.filler && in.class() == clsJMP && in.op() == 0x80 && in.src == pseudoCall {
				if t := c.subprogOf[i+int(in.imm)+1]; t <= k {
					from, to = k, t
				}
			}
		}
	}
	c.logf("recursive call from %s() to %s()", c.subprogs[from].name(), c.subprogs[to].name())
	return reject("EINVAL")
}

// staticArgMatch is btf_check_subprog_call for a static subprogram: its BTF arguments are
// checked against the caller's registers; a mismatch only marks it unreliable (no later
// check), the verdict does not change. 6.12 on logs the scalar argument's refusal before the
// "caller:" dump (btf_check_func_arg_match); the static function's unsupported return or
// argument types are refused silently (btf_prepare_func_args logs only for global ones).
// 6.1's messages come after the main program's own, so none are modelled there.
func (c *checker) staticArgMatch(k int) {
	sp := &c.subprogs[k]
	if !c.has(btfmodel.CapVerifierStaticArgMsg) || sp.fn == nil || sp.unreliable {
		return
	}
	proto, ok := sp.fn.Type.(*btf.FuncProto)
	if !ok {
		return
	}
	ret := btf.UnderlyingType(proto.Return)
	_, void := ret.(*btf.Void)
	if len(proto.Params) > 5 || !isScalarBTF(ret) && !(void && c.has(btfmodel.CapVerifierGlobalVoidReturn)) {
		sp.unreliable = true
		return
	}
	for _, p := range proto.Params {
		if !isScalarBTF(btf.UnderlyingType(p.Type)) {
			sp.unreliable = true // a pointer argument of a static function: -EINVAL, no message
			return
		}
	}
	for i := range proto.Params {
		regno := uint8(i + 1)
		if c.st.regs[regno].typ != scalarValue {
			c.logf("R%d is not a scalar", regno)
			sp.unreliable = true
			return
		}
	}
}

// forcePrune is 6.12's mark_force_checkpoint at a callback-calling helper: the state is
// compared (and recorded) at every visit, ancestors included, so iterations converge.
func (c *checker) forcePrune(i int) bool {
	in := &c.insns[i]
	return c.has(btfmodel.CapVerifierCallbackIterate) && in.code == clsJMP|0x80 && in.src == 0 &&
		(in.imm == helperLoop || in.imm == helperForEachMapElem) || c.iterNextAt(i) // kfunc.go
}

// checkCallChainDepth: 7.2 refuses, before do_check and with no message (EINVAL, "processed
// 0 insns"), a program whose static chain of bpf-to-bpf calls is longer than MAX_CALL_FRAMES
// frames and that hands a stack pointer to a callee (the static stack liveness pre-pass
// follows stack pointers along the call chain; the fuzz's 17-frame chains passing fp-8 show
// it). A deep chain that passes none, even one writing its own stack, reaches do_check's
// "the call stack of 17 frames is too deep" (subprog.json sj_chain_17_frames, fuzzfix.json
// ff_chain_17_frames_stack). Runs once recursion is ruled out: the graph is acyclic; and
// after check_attach_btf_id, which 7.2's bpf_check calls after check_cfg: fexit/do_exit
// with such a chain is refused for its __noreturn target (fuzzfix2.json).
func (c *checker) checkCallChainDepth() error {
	usesFP := false
	for i := range c.insns {
		// rN = r10 for an argument register: a stack pointer handed to a callee
		if in := &c.insns[i]; !in.filler && in.code == clsALU64|0xb0|0x08 && in.src == 10 && in.dst >= 1 && in.dst <= 5 {
			usesFP = true
		}
	}
	if !usesFP {
		return nil
	}
	memo := make([]int, len(c.subprogs))
	var frames func(k int) int
	frames = func(k int) int {
		if memo[k] > 0 {
			return memo[k]
		}
		deepest := 0
		for i := c.subprogs[k].start; i < c.subprogEnd(k); i++ {
			in := &c.insns[i]
			if !in.filler && in.class() == clsJMP && in.op() == 0x80 && in.src == pseudoCall {
				deepest = max(deepest, frames(c.subprogOf[i+int(in.imm)+1]))
			}
		}
		memo[k] = deepest + 1
		return memo[k]
	}
	if frames(0) > c.maxCallFrames() {
		return reject("EINVAL")
	}
	return nil
}
