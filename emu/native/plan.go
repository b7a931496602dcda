package native

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"time"
)

// Limits of one plan (exec.h).
const (
	MaxReps     = 256
	MaxPhases   = 4
	MaxReadback = 4096
)

// Region is memory the child maps at Addr: Size bytes (page-aligned), Data at its start,
// zeros after, then protected with Prot (PROT_* bits).
type Region struct {
	Addr, Size uint64
	Data       []byte
	Prot       int
}

// Page protections for Region.Prot.
const (
	ProtRX = syscall.PROT_READ | syscall.PROT_EXEC
	ProtR  = syscall.PROT_READ
	ProtRW = syscall.PROT_READ | syscall.PROT_WRITE
)

// Patch overwrites mapped memory before a phase runs (outside the timed section).
type Patch struct {
	Addr uint64
	Data []byte
}

// Phase is one entry into the generated code: Regs are rbx, rbp, r12, r13, r14, r15.
type Phase struct {
	Regs    [6]uint64
	SP      uint64
	Entry   uint64
	Patches []Patch
}

// Plan is what a child runs: every repetition runs every phase in order.
type Plan struct {
	Regions []Region
	Phases  []Phase
	Reps    int
	// Tick is the per-call budget: the child's watchdog samples the phase and r15 (the
	// harness caller's loop counter, which counts calls down) every Tick, and a run whose
	// sample has not changed since the previous tick ends as StatusTimeout: a call took
	// longer than Tick, whatever the number of calls.
	Tick time.Duration
	// Deadline bounds the whole child: then the parent SIGKILLs its process group and
	// reports StatusTimeout with Result.Deadline.
	Deadline time.Duration
	Readback [2]uint64 // address and length of memory to return (at most MaxReadback)
	Pin      bool      // pin the child to one CPU (for timing)
}

func (p *Plan) check() error {
	switch {
	case len(p.Phases) == 0 || len(p.Phases) > MaxPhases:
		return fmt.Errorf("native: %d phases (1..%d)", len(p.Phases), MaxPhases)
	case p.Reps > MaxReps:
		return fmt.Errorf("native: %d repetitions (at most %d)", p.Reps, MaxReps)
	case p.Tick < time.Millisecond || p.Deadline < p.Tick:
		return fmt.Errorf("native: tick %v, deadline %v (at least 1ms, and the deadline no shorter)", p.Tick, p.Deadline)
	case p.Readback[1] > MaxReadback:
		return fmt.Errorf("native: readback of %d bytes (at most %d)", p.Readback[1], MaxReadback)
	}
	for _, r := range p.Regions {
		if r.Addr%4096 != 0 || r.Size%4096 != 0 || uint64(len(r.Data)) > r.Size {
			return fmt.Errorf("native: region %#x+%#x with %d bytes is not page-aligned or too small", r.Addr, r.Size, len(r.Data))
		}
	}
	return nil
}

// Status says how a child ended.
type Status int

// How a child ended.
const (
	StatusSentinel Status = 1 // every phase reached a sentinel
	StatusSignal   Status = 2 // the generated code faulted
	StatusTimeout  Status = 3 // a call outlasted Plan.Tick, or the child Plan.Deadline
	StatusSetup    Status = 4 // (reported as an error by Exec)
	StatusSyscall  Status = 5 // the generated code made a system call, which was refused
	StatusKilled   Status = 6 // the child died without a result after generated code ran
)

// Register indexes into Result.Regs.
const (
	RAX = iota
	RBX
	RCX
	RDX
	RSI
	RDI
	RBP
	RSP
	R8
	R9
	R10
	R11
	R12
	R13
	R14
	R15
	RIP
)

// Result is what the child reported.
type Result struct {
	Status   Status
	Signal   syscall.Signal // StatusSignal, StatusTimeout
	Code     int            // si_code
	Addr     uint64         // si_addr: the faulting address
	PC       uint64         // rip at the signal, or the last sentinel
	Sentinel uint64         // the last sentinel reached (StatusSentinel)
	Regs     [17]uint64     // at the signal or the last sentinel (rip last)
	Reps     int            // repetitions completed
	Syscall  int            // StatusSyscall: its number (-1: another ABI's, killed outright)
	Deadline bool           // StatusTimeout: killed by the parent at Plan.Deadline
	Phase    int            // the phase running at the end
	Readback []byte
	// Cycles[rep][phase] (rdtsc) and Nanos[rep][phase] (CLOCK_MONOTONIC) per entry.
	Cycles, Nanos [][]uint64
}

// SentinelLen is the length of Sentinel's code.
const SentinelLen = 13

// Sentinel is the code that ends a run: movabs r11, ExitAddr(); call r11.
func Sentinel() []byte {
	b := []byte{0x49, 0xbb}
	b = binary.LittleEndian.AppendUint64(b, ExitAddr())
	return append(b, 0x41, 0xff, 0xd3)
}
