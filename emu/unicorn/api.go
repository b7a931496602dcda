package unicorn

// The binding's types and constants, the same with and without cgo (the
// values are libunicorn's; consts_cgo.go lets a test compare them with the
// headers the cgo build sees).

import "fmt"

// Arch selects the guest architecture of an Engine.
type Arch int

// Supported guest architectures.
const (
	X86_64 Arch = iota
	ARM64
	RISCV64
)

func (a Arch) String() string {
	switch a {
	case X86_64:
		return "x86_64"
	case ARM64:
		return "arm64"
	case RISCV64:
		return "riscv64"
	}
	return fmt.Sprintf("Arch(%d)", int(a))
}

// Reg is a Unicorn register id (the C enum value; the enums are not
// contiguous, so never compute ids arithmetically). Values are read and
// written as 64 bits; wider registers are truncated, narrower zero-extended.
type Reg int32

// CPU models for OpenModel (the defaults are marked).
const (
	ModelDefault   = -1
	X86Qemu64      = int(0)  // UC_CPU_X86_QEMU64: x86_64 default
	X86Haswell     = int(19) // UC_CPU_X86_HASWELL
	ARM64CortexA72 = int(2)  // UC_CPU_ARM64_A72: arm64 default: ARMv8.0, no PAC/BTI
	ARM64Max       = int(3)  // UC_CPU_ARM64_MAX: has PAC and BTI
	RISCV64Any     = int(0)  // UC_CPU_RISCV64_ANY: riscv64 default: RV64GC, no Zbb
)

// Reason says why a run ended.
type Reason int

// Run end reasons.
const (
	ReasonHalt     Reason = iota // hlt (x86) / wfi (arm64, riscv64) outside any sentinel
	ReasonSentinel               // a registered sentinel was reached
	ReasonUntil                  // the until address of Start was reached
	ReasonStopped                // Stop was called (from a hook)
	ReasonBudget                 // instruction count or timeout exhausted
	ReasonIntr                   // an interrupt that is not a sentinel
	ReasonFault                  // invalid memory access
	ReasonPanic                  // a Go hook panicked
	ReasonError                  // any other Unicorn error
)

var reasonNames = [...]string{"halt", "sentinel", "until", "stopped", "budget",
	"interrupt", "fault", "panic", "error"}

func (r Reason) String() string {
	if r >= 0 && int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// Exit describes how a run ended.
type Exit struct {
	Reason   Reason
	PC       uint64 // pc after the run
	Sentinel uint64 // the sentinel's address, for ReasonSentinel
	Intr     uint32 // interrupt number, for ReasonIntr and trap sentinels
	Count    uint64 // instructions counted by CountInsns hooks
}

// runCheck turns an exit that is not a sentinel (or Stop) into an error.
func runCheck(x Exit) error {
	switch x.Reason {
	case ReasonSentinel, ReasonStopped:
		return nil
	case ReasonUntil:
		return &Error{Op: "run", Msg: "jumped to address 0"}
	}
	return &Error{Op: "run", Msg: fmt.Sprintf("ended by %s at pc %#x, not at a sentinel", x.Reason, x.PC)}
}

func isMemCode(c Code) bool {
	switch c {
	case ErrReadUnmapped, ErrWriteUnmapped, ErrFetchUnmapped,
		ErrReadProt, ErrWriteProt, ErrFetchProt,
		ErrReadUnaligned, ErrWriteUnaligned, ErrFetchUnaligned:
		return true
	}
	return false
}

// Hook identifies an installed hook (Unicorn's uc_hook).
type Hook uintptr

// Access is the kind of a memory access (uc_mem_type).
type Access int

// Memory access kinds.
const (
	Read          = Access(16) // UC_MEM_READ
	Write         = Access(17) // UC_MEM_WRITE
	Fetch         = Access(18) // UC_MEM_FETCH
	ReadUnmapped  = Access(19) // UC_MEM_READ_UNMAPPED
	WriteUnmapped = Access(20) // UC_MEM_WRITE_UNMAPPED
	FetchUnmapped = Access(21) // UC_MEM_FETCH_UNMAPPED
	WriteProt     = Access(22) // UC_MEM_WRITE_PROT
	ReadProt      = Access(23) // UC_MEM_READ_PROT
	FetchProt     = Access(24) // UC_MEM_FETCH_PROT
	ReadAfter     = Access(25) // UC_MEM_READ_AFTER
)

var accessNames = map[Access]string{
	Read: "read", Write: "write", Fetch: "fetch",
	ReadUnmapped: "unmapped read", WriteUnmapped: "unmapped write",
	FetchUnmapped: "unmapped fetch", WriteProt: "protected write",
	ReadProt: "protected read", FetchProt: "protected fetch",
	ReadAfter: "read-after",
}

func (a Access) String() string {
	if s, ok := accessNames[a]; ok {
		return s
	}
	return fmt.Sprintf("Access(%d)", int(a))
}

// MemAccess is one memory access seen by a memory hook.
type MemAccess struct {
	Kind  Access
	Addr  uint64
	Size  int
	Value int64 // value written, for writes
}

// MemHooks selects valid accesses for HookMem.
type MemHooks int

// Valid-access hook kinds, combinable.
const (
	HookRead  = MemHooks(1024) // UC_HOOK_MEM_READ
	HookWrite = MemHooks(2048) // UC_HOOK_MEM_WRITE
	HookFetch = MemHooks(4096) // UC_HOOK_MEM_FETCH
)

// Prot is a page protection (uc_prot), combinable.
type Prot uint32

// Page protections.
const (
	ProtNone  = Prot(0) // UC_PROT_NONE
	ProtRead  = Prot(1) // UC_PROT_READ
	ProtWrite = Prot(2) // UC_PROT_WRITE
	ProtExec  = Prot(4) // UC_PROT_EXEC
	ProtAll   = Prot(7) // UC_PROT_ALL
)

// PageSize is the granularity of Map, Unmap and Protect.
const PageSize = 4096

// Region is a mapped range as reported by Regions.
type Region struct {
	Begin, End uint64 // inclusive
	Prot       Prot
}

func rangeMsg(addr, size uint64) string { return fmt.Sprintf("[%#x, +%#x)", addr, size) }

// X86 instructions HookX86Insn can hook.
const (
	X86InsSyscall  = int(699) // UC_X86_INS_SYSCALL
	X86InsSysenter = int(700) // UC_X86_INS_SYSENTER
)
