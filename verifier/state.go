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

// state is one verifier state (a single frame: subprogram calls are not modelled).
type state struct {
	regs  [11]reg
	stack [stackSize]slotKind
	spill [stackSize / regSize]reg // spilled register per 8-byte slot (byte 0 = fp-512)
	// allocated is allocated_stack: the deepest byte written, rounded up to 8. 6.1 bounds
	// direct reads by it (6.3 let privileged programs read any stack).
	allocated int
	// written is the slots fully written since the last checkpoint (REG_LIVE_WRITTEN).
	written uint64
	// refs are the acquired references (acquired_refs), in the order taken.
	refs   []refState
	parent *visit
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
	ancestor      uint64 // the checker's epoch when last found on the current path
}

func (s *state) clone() *state {
	c := *s
	c.refs = append([]refState(nil), s.refs...)
	return &c
}

// slotIndex maps a stack offset (negative, relative to fp) to the byte index.
func slotIndex(off int) int { return stackSize + off }
