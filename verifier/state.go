package verifier

import (
	"github.com/cilium/ebpf/btf"
)

// regType is the base type of a register (enum bpf_reg_type, the subset trampoline
// programs meet).
type regType uint8

const (
	notInit regType = iota
	scalarValue
	ptrToCtx
	ptrToStack
	ptrToBTFID
	ptrToMapValue
	constPtrToMap
	ptrToMem
	ptrToFunc   // ld_imm64 BPF_PSEUDO_FUNC: a callback's subprogram (subprog)
	ptrToMapKey // a for_each callback's key argument
)

// typeFlag are the bpf_type_flag modifiers the model tracks.
type typeFlag uint16

const (
	flagMaybeNull typeFlag = 1 << iota
	flagRdonly
	flagUser
	flagPercpu
	flagRCU
	flagUntrusted
	flagTrusted
	flagRingbuf // MEM_RINGBUF (6.1 MEM_ALLOC): a bpf_ringbuf_reserve record
	flagLockVal // not a kernel flag: a map value holding a bpf_spin_lock keeps its id
)

// reg is struct bpf_reg_state, reduced: off is reg->off (the fixed pointer offset), v the
// scalar value or a pointer's variable part (var_off and its bounds).
type reg struct {
	typ   regType
	flags typeFlag
	off   int32
	v     scalar
	id    uint32
	// refObjID is ref_obj_id: the acquired reference this pointer must be released through.
	refObjID uint32
	// PTR_TO_BTF_ID: the pointee struct or union (modifiers skipped) and its name.
	btfType btf.Type
	// PTR_TO_MAP_VALUE / CONST_PTR_TO_MAP: index into Program.Maps.
	mapIdx int
	// PTR_TO_MEM: accessible size.
	memSize int
	// frameno is the frame a PTR_TO_STACK points into (0 = the main program's).
	frameno uint8
	// subprog is PTR_TO_FUNC's subprogram index.
	subprog int
	// path names what the pointer points at, for load explanations ("sk", "sk->sk_socket").
	path string
	// written marks REG_LIVE_WRITTEN for the log's "_w" suffix (not part of equality).
	written bool
}

func mkScalar(s scalar) reg { return reg{typ: scalarValue, v: s} }

func (r *reg) isPtr() bool { return r.typ != notInit && r.typ != scalarValue }

// isTrusted is is_trusted_reg for PTR_TO_BTF_ID.
func (r *reg) isTrusted() bool {
	return r.typ == ptrToBTFID && r.flags&flagTrusted != 0 && r.flags&flagUntrusted == 0
}

const (
	stackSize = 512 // MAX_BPF_STACK
	regSize   = 8
)

// slotKind is the per-byte stack slot type (STACK_INVALID, STACK_MISC, STACK_ZERO,
// STACK_SPILL).
type slotKind uint8

const (
	stackInvalid slotKind = iota
	stackMisc
	stackZero
	stackSpill
)

// frame is struct bpf_func_state: one call frame's registers and stack.
type frame struct {
	regs  [11]reg
	stack [stackSize]slotKind
	spill [stackSize / regSize]reg // spilled register per 8-byte slot (byte 0 = fp-512)
	// allocated is allocated_stack: the deepest byte written, rounded up to 8. 6.1 bounds
	// direct reads by it (6.3 let privileged programs read any stack).
	allocated int
	// callsite is the call insn that made this frame (-1 in the main frame); subprog its
	// subprogram index.
	callsite, subprog int
	// callback marks a callback frame (in_callback_fn), cbRange its return range and
	// cbRefs the references held when it was entered.
	callback   bool
	cbLo, cbHi int64
	cbRefs     int
	// helper is the helper id that made a callback frame (bpf_loop, for_each).
	helper int32
	// cbDepth is callback_depth: how often this frame's callback was entered in a row.
	cbDepth int
}

// state is one verifier state (struct bpf_verifier_state): the current frame, embedded,
// and the frames of its callers (frame number = len(callers)).
type state struct {
	frame
	callers []frame
	// written is the slots fully written since the last checkpoint (REG_LIVE_WRITTEN).
	written uint64
	// refs are the acquired references (acquired_refs), in the order taken.
	refs []refState
	// rcuLock is active_rcu_lock (7.2: active_rcu_locks, a depth): kfunc.go.
	rcuLock int
	// preemptLock is active_preempt_lock(s): bpf_preempt_disable depth (kfunc_special.go).
	preemptLock int
	// iterDepth is the active iterator's depth (bpf_iter state.depth; kfunc.go).
	iterDepth int
	// lock is active_lock: the bpf_spin_lock held (helper_spinlock.go).
	lock   spinLock
	parent *visit
	// iters are the live iterators on the stack and their references (iter.go).
	iters []iterSlot
	// dynptrs are the initialised dynptrs on the stack (STACK_DYNPTR, dynptr.go).
	dynptrs []dynptrSlot
	// hist is the path since the last checkpoint (jmp_history; histLost: it outgrew
	// maxHist), for the loop message's precision marks (loopdump.go).
	hist     []histStep
	histLost bool
}

// visit is a state recorded at a prune point, chained to the path that reached it.
type visit struct {
	insn   int
	st     *state
	parent *visit
	// Stack liveness as the kernel tracks it (REG_LIVE_READ / REG_LIVE_WRITTEN on each 8-byte
	// slot, bit spi): read marks the slots a later path read before writing them;
	// written the slots fully written in the segment that ended here.
	read, written uint64
	// regRead is the registers a later path read before writing them (REG_LIVE_READ).
	regRead  regset
	ancestor uint64 // the checker's epoch when last found on the current path
}

func (s *state) clone() *state {
	c := *s
	c.refs = append([]refState(nil), s.refs...)
	c.callers = append([]frame(nil), s.callers...)
	c.iters = append([]iterSlot(nil), s.iters...)
	c.dynptrs = append([]dynptrSlot(nil), s.dynptrs...)
	c.hist = s.hist[:len(s.hist):len(s.hist)] // appends copy: branches share no steps
	return &c
}

// curframe is the current frame's number.
func (s *state) curframe() int { return len(s.callers) }

// frameAt is frame n of the call stack.
func (s *state) frameAt(n int) *frame {
	if n >= len(s.callers) {
		return &s.frame
	}
	return &s.callers[n]
}

// slotIndex maps a stack offset (negative, relative to fp) to the byte index.
func slotIndex(off int) int { return stackSize + off }
