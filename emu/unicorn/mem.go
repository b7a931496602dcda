//go:build cgo

package unicorn

/*
#include <stdlib.h>
#include <string.h>
#include "shim.h"
*/
import "C"

import (
	"encoding/binary"
	"unsafe"
)

// hostMap is a MapHost region: C memory Unicorn uses as guest RAM.
type hostMap struct {
	ptr  unsafe.Pointer
	size uint64
}

// Map maps [addr, addr+size) with prot; both must be page aligned.
func (e *Engine) Map(addr, size uint64, prot Prot) error {
	if e.uc == nil {
		return ErrClosed
	}
	if err := check("mem_map", C.uc_mem_map(e.uc, C.uint64_t(addr), C.size_t(size), C.uint32_t(prot))); err != nil {
		err.(*Error).Msg = rangeMsg(addr, size)
		return err
	}
	return nil
}

// MapHost maps [addr, addr+size) onto zeroed C memory and returns it as a
// slice, so Go can read guest memory (stub recordings, stacks) without a
// cgo call. Writing code through the slice bypasses Unicorn's
// self-modifying-code tracking: write code with Write instead. The slice is
// valid until Unmap of exactly this range or Close.
func (e *Engine) MapHost(addr, size uint64, prot Prot) ([]byte, error) {
	if e.uc == nil {
		return nil, ErrClosed
	}
	if size == 0 || size%PageSize != 0 {
		return nil, &Error{Op: "mem_map_ptr", Code: ErrArg, Msg: rangeMsg(addr, size)}
	}
	ptr := C.aligned_alloc(PageSize, C.size_t(size))
	if ptr == nil {
		return nil, &Error{Op: "mem_map_ptr", Code: ErrNoMem, Msg: rangeMsg(addr, size)}
	}
	C.memset(ptr, 0, C.size_t(size))
	if err := check("mem_map_ptr", C.uc_mem_map_ptr(e.uc, C.uint64_t(addr), C.size_t(size), C.uint32_t(prot), ptr)); err != nil {
		C.free(ptr)
		err.(*Error).Msg = rangeMsg(addr, size)
		return nil, err
	}
	e.host[addr] = hostMap{ptr: ptr, size: size}
	return unsafe.Slice((*byte)(ptr), size), nil
}

// Unmap unmaps [addr, addr+size); a MapHost region must be unmapped whole.
func (e *Engine) Unmap(addr, size uint64) error {
	if e.uc == nil {
		return ErrClosed
	}
	if m, ok := e.host[addr]; ok && m.size != size {
		return &Error{Op: "mem_unmap", Code: ErrArg, Msg: rangeMsg(addr, size) + " splits a MapHost region"}
	}
	if err := check("mem_unmap", C.uc_mem_unmap(e.uc, C.uint64_t(addr), C.size_t(size))); err != nil {
		err.(*Error).Msg = rangeMsg(addr, size)
		return err
	}
	if m, ok := e.host[addr]; ok {
		C.free(m.ptr)
		delete(e.host, addr)
	}
	return nil
}

// Protect changes the protection of [addr, addr+size).
func (e *Engine) Protect(addr, size uint64, prot Prot) error {
	if e.uc == nil {
		return ErrClosed
	}
	if err := check("mem_protect", C.uc_mem_protect(e.uc, C.uint64_t(addr), C.size_t(size), C.uint32_t(prot))); err != nil {
		err.(*Error).Msg = rangeMsg(addr, size)
		return err
	}
	return nil
}

// Read fills buf from guest memory at addr (ignoring protections).
func (e *Engine) Read(addr uint64, buf []byte) error {
	if e.uc == nil {
		return ErrClosed
	}
	if len(buf) == 0 {
		return nil
	}
	if err := check("mem_read", C.uc_mem_read(e.uc, C.uint64_t(addr), unsafe.Pointer(&buf[0]), C.size_t(len(buf)))); err != nil {
		err.(*Error).Msg = rangeMsg(addr, uint64(len(buf)))
		return err
	}
	return nil
}

// Write copies data to guest memory at addr (ignoring protections) and
// invalidates translated code it overwrites.
func (e *Engine) Write(addr uint64, data []byte) error {
	if e.uc == nil {
		return ErrClosed
	}
	if len(data) == 0 {
		return nil
	}
	e.st.code_gen++ // the budget's block sizes may be stale now
	if err := check("mem_write", C.tj_mem_write(e.uc, C.uint64_t(addr), unsafe.Pointer(&data[0]), C.size_t(len(data)))); err != nil {
		err.(*Error).Msg = rangeMsg(addr, uint64(len(data)))
		return err
	}
	return nil
}

// ReadU64 reads a little-endian 64-bit word.
func (e *Engine) ReadU64(addr uint64) (uint64, error) {
	var b [8]byte
	err := e.Read(addr, b[:])
	return binary.LittleEndian.Uint64(b[:]), err
}

// WriteU64 writes a little-endian 64-bit word.
func (e *Engine) WriteU64(addr, v uint64) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return e.Write(addr, b[:])
}

// Regions lists the mapped ranges in address order.
func (e *Engine) Regions() ([]Region, error) {
	if e.uc == nil {
		return nil, ErrClosed
	}
	var regs *C.uc_mem_region
	var n C.uint32_t
	if err := check("mem_regions", C.uc_mem_regions(e.uc, &regs, &n)); err != nil {
		return nil, err
	}
	defer C.uc_free(unsafe.Pointer(regs))
	out := make([]Region, n)
	for i, r := range unsafe.Slice(regs, n) {
		out[i] = Region{Begin: uint64(r.begin), End: uint64(r.end), Prot: Prot(r.perms)}
	}
	return out, nil
}
