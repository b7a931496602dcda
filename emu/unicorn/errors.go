package unicorn

/*
#include <unicorn/unicorn.h>
*/
import "C"

import (
	"errors"
	"fmt"
)

// Code is a Unicorn error code (uc_err). Codes are errors themselves, so
// errors.Is(err, ErrReadUnmapped) works on any error this package returns.
type Code int

// Unicorn error codes.
const (
	ErrNoMem          = Code(C.UC_ERR_NOMEM)
	ErrArch           = Code(C.UC_ERR_ARCH)
	ErrHandle         = Code(C.UC_ERR_HANDLE)
	ErrMode           = Code(C.UC_ERR_MODE)
	ErrReadUnmapped   = Code(C.UC_ERR_READ_UNMAPPED)
	ErrWriteUnmapped  = Code(C.UC_ERR_WRITE_UNMAPPED)
	ErrFetchUnmapped  = Code(C.UC_ERR_FETCH_UNMAPPED)
	ErrHook           = Code(C.UC_ERR_HOOK)
	ErrInsnInvalid    = Code(C.UC_ERR_INSN_INVALID)
	ErrMap            = Code(C.UC_ERR_MAP)
	ErrWriteProt      = Code(C.UC_ERR_WRITE_PROT)
	ErrReadProt       = Code(C.UC_ERR_READ_PROT)
	ErrFetchProt      = Code(C.UC_ERR_FETCH_PROT)
	ErrArg            = Code(C.UC_ERR_ARG)
	ErrReadUnaligned  = Code(C.UC_ERR_READ_UNALIGNED)
	ErrWriteUnaligned = Code(C.UC_ERR_WRITE_UNALIGNED)
	ErrFetchUnaligned = Code(C.UC_ERR_FETCH_UNALIGNED)
	ErrHookExist      = Code(C.UC_ERR_HOOK_EXIST)
	ErrResource       = Code(C.UC_ERR_RESOURCE)
	ErrException      = Code(C.UC_ERR_EXCEPTION)
)

// Error returns Unicorn's own message (uc_strerror).
func (c Code) Error() string { return C.GoString(C.uc_strerror(C.uc_err(c))) }

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

// check wraps a uc_err into an *Error, or returns nil for UC_ERR_OK.
func check(op string, err C.uc_err) error {
	if err == C.UC_ERR_OK {
		return nil
	}
	return &Error{Op: op, Code: Code(err)}
}
