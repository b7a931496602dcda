package unicorn

import (
	"errors"
	"fmt"
)

// Code is a Unicorn error code (uc_err). Codes are errors themselves, so
// errors.Is(err, ErrReadUnmapped) works on any error this package returns.
type Code int

// Unicorn error codes.
const (
	ErrNoMem          = Code(1)  // UC_ERR_NOMEM
	ErrArch           = Code(2)  // UC_ERR_ARCH
	ErrHandle         = Code(3)  // UC_ERR_HANDLE
	ErrMode           = Code(4)  // UC_ERR_MODE
	ErrReadUnmapped   = Code(6)  // UC_ERR_READ_UNMAPPED
	ErrWriteUnmapped  = Code(7)  // UC_ERR_WRITE_UNMAPPED
	ErrFetchUnmapped  = Code(8)  // UC_ERR_FETCH_UNMAPPED
	ErrHook           = Code(9)  // UC_ERR_HOOK
	ErrInsnInvalid    = Code(10) // UC_ERR_INSN_INVALID
	ErrMap            = Code(11) // UC_ERR_MAP
	ErrWriteProt      = Code(12) // UC_ERR_WRITE_PROT
	ErrReadProt       = Code(13) // UC_ERR_READ_PROT
	ErrFetchProt      = Code(14) // UC_ERR_FETCH_PROT
	ErrArg            = Code(15) // UC_ERR_ARG
	ErrReadUnaligned  = Code(16) // UC_ERR_READ_UNALIGNED
	ErrWriteUnaligned = Code(17) // UC_ERR_WRITE_UNALIGNED
	ErrFetchUnaligned = Code(18) // UC_ERR_FETCH_UNALIGNED
	ErrHookExist      = Code(19) // UC_ERR_HOOK_EXIST
	ErrResource       = Code(20) // UC_ERR_RESOURCE
	ErrException      = Code(21) // UC_ERR_EXCEPTION
)

// ErrClosed is returned by every method of a closed Engine.
var ErrClosed = errors.New("unicorn: engine is closed")

// Error is a failed Unicorn call: which operation, Unicorn's code and, for a
// run that stopped on a bad access or an unexpected interrupt, the details.
type Error struct {
	Op    string // "mem_map", "emu_start", ...
	Code  Code   // zero when the failure is ours, not Unicorn's
	Fault *Fault // memory fault seen during a run, if any
	Intr  *Intr  // interrupt that stopped a run, if any
	Msg   string // extra context (addresses, register ids)
}

// Fault is an invalid memory access seen by the always-on hook.
type Fault struct {
	Kind  Access
	Addr  uint64
	Size  int
	Value int64 // value being written, for writes
	// PC of the faulting instruction; without SetPreciseFaults it may be
	// the first instruction of the faulting block instead.
	PC uint64
}

// Intr is an interrupt or CPU exception that stopped a run.
type Intr struct {
	No uint32 // Unicorn's interrupt number (x86 vector, arm EXCP_*)
	PC uint64 // pc reported when it was taken
}

func (e *Error) Error() string {
	s := "unicorn: " + e.Op
	if e.Msg != "" {
		s += " " + e.Msg
	}
	if e.Code != 0 {
		s += ": " + e.Code.Error()
	}
	if f := e.Fault; f != nil {
		s += fmt.Sprintf(": %s of %d bytes at %#x (pc %#x)", f.Kind, f.Size, f.Addr, f.PC)
	}
	if i := e.Intr; i != nil {
		s += fmt.Sprintf(": interrupt %d at pc %#x", i.No, i.PC)
	}
	return s
}

// Unwrap exposes the Unicorn code to errors.Is.
func (e *Error) Unwrap() error {
	if e.Code == 0 {
		return nil
	}
	return e.Code
}

// PanicError reports a Go hook callback that panicked. The panic was
// recovered inside the callback (a Go panic must not unwind through C) and
// emulation was stopped; the run that hit it returns this error.
type PanicError struct {
	Value any
	Stack []byte
}

func (p *PanicError) Error() string {
	return fmt.Sprintf("unicorn: hook callback panicked: %v\n%s", p.Value, p.Stack)
}
