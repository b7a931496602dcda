//go:build cgo

package unicorn

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Reg reads one register.
func (e *Engine) Reg(r Reg) (uint64, error) {
	if e.uc == nil {
		return 0, ErrClosed
	}
	var v C.uint64_t
	if err := check("reg_read", C.tj_reg_read(e.uc, C.int(r), &v)); err != nil {
		err.(*Error).Msg = fmt.Sprintf("reg %d", r)
		return 0, err
	}
	return uint64(v), nil
}

// SetReg writes one register.
func (e *Engine) SetReg(r Reg, v uint64) error {
	if e.uc == nil {
		return ErrClosed
	}
	if err := check("reg_write", C.tj_reg_write(e.uc, C.int(r), C.uint64_t(v))); err != nil {
		err.(*Error).Msg = fmt.Sprintf("reg %d", r)
		return err
	}
	return nil
}

// ReadRegs reads regs[i] into vals[i] in one cgo call.
func (e *Engine) ReadRegs(regs []Reg, vals []uint64) error {
	if e.uc == nil {
		return ErrClosed
	}
	if len(vals) < len(regs) {
		return &Error{Op: "reg_read_batch", Code: ErrArg, Msg: "vals shorter than regs"}
	}
	if len(regs) == 0 {
		return nil
	}
	return check("reg_read_batch", C.tj_reg_read_batch(e.uc, (*C.int)(unsafe.Pointer(&regs[0])),
		(*C.uint64_t)(unsafe.Pointer(&vals[0])), C.int(len(regs))))
}

// WriteRegs writes vals[i] to regs[i] in one cgo call.
func (e *Engine) WriteRegs(regs []Reg, vals []uint64) error {
	if e.uc == nil {
		return ErrClosed
	}
	if len(vals) < len(regs) {
		return &Error{Op: "reg_write_batch", Code: ErrArg, Msg: "vals shorter than regs"}
	}
	if len(regs) == 0 {
		return nil
	}
	return check("reg_write_batch", C.tj_reg_write_batch(e.uc, (*C.int)(unsafe.Pointer(&regs[0])),
		(*C.uint64_t)(unsafe.Pointer(&vals[0])), C.int(len(regs))))
}

// PC reads the program counter (rip or pc).
func (e *Engine) PC() (uint64, error) { return e.Reg(e.pcReg) }

// SP reads the stack pointer (rsp or sp).
func (e *Engine) SP() (uint64, error) {
	switch e.arch {
	case X86_64:
		return e.Reg(RSP)
	case RISCV64:
		return e.Reg(RVSP)
	}
	return e.Reg(SP)
}
