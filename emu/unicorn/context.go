//go:build cgo

package unicorn

/*
#include "shim.h"
*/
import "C"

import "fmt"

// Context is a saved CPU state (uc_context). It holds registers only, not
// memory. Contexts belong to their engine and are freed by Close.
type Context struct {
	e *Engine
	c *C.uc_context
}

// NewContext allocates a context and saves the current CPU state into it.
func (e *Engine) NewContext() (*Context, error) {
	if e.uc == nil {
		return nil, ErrClosed
	}
	c := &Context{e: e}
	if err := check("context_alloc", C.uc_context_alloc(e.uc, &c.c)); err != nil {
		return nil, err
	}
	e.contexts[c] = struct{}{}
	if err := c.Save(); err != nil {
		c.Free()
		return nil, err
	}
	return c, nil
}

// Save copies the engine's current CPU state into c.
func (c *Context) Save() error {
	if c.c == nil || c.e.uc == nil {
		return ErrClosed
	}
	return check("context_save", C.uc_context_save(c.e.uc, c.c))
}

// Restore loads c into the engine's CPU.
func (c *Context) Restore() error {
	if c.c == nil || c.e.uc == nil {
		return ErrClosed
	}
	return check("context_restore", C.uc_context_restore(c.e.uc, c.c))
}

// Reg reads a register from the saved state.
func (c *Context) Reg(r Reg) (uint64, error) {
	if c.c == nil {
		return 0, ErrClosed
	}
	var v C.uint64_t
	if err := check("context_reg_read", C.tj_context_reg_read(c.c, C.int(r), &v)); err != nil {
		err.(*Error).Msg = fmt.Sprintf("reg %d", r)
		return 0, err
	}
	return uint64(v), nil
}

// SetReg writes a register in the saved state.
func (c *Context) SetReg(r Reg, v uint64) error {
	if c.c == nil {
		return ErrClosed
	}
	if err := check("context_reg_write", C.tj_context_reg_write(c.c, C.int(r), C.uint64_t(v))); err != nil {
		err.(*Error).Msg = fmt.Sprintf("reg %d", r)
		return err
	}
	return nil
}

// Free releases the context; using it afterwards returns ErrClosed.
func (c *Context) Free() error {
	if c.c == nil {
		return nil
	}
	c.free()
	return nil
}

func (c *Context) free() {
	C.uc_context_free(c.c)
	c.c = nil
	delete(c.e.contexts, c)
}
