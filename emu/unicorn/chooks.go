//go:build cgo

package unicorn

/*
#include "shim.h"
*/
import "C"

// Sentinels, instruction counts and precise faults: hooks that run in C only.

// AddSentinel places a sentinel of kind k at addr (which must be mapped for
// the instruction kinds) so that Run ends there without error.
func (e *Engine) AddSentinel(addr uint64, k SentinelKind) error {
	if e.uc == nil {
		return ErrClosed
	}
	if k == SentinelHook {
		if _, ok := e.stopAt[addr]; ok {
			return nil
		}
		var hh C.uc_hook
		if err := check("hook_add", C.tj_hook_stop_at(e.uc, &hh, e.st, C.uint64_t(addr))); err != nil {
			return err
		}
		e.cHooks[Hook(hh)] = struct{}{}
		e.stopAt[addr] = Hook(hh)
		return e.invalidate(addr, addr)
	}
	b := SentinelBytes(e.arch, k)
	if b == nil {
		return &Error{Op: "add_sentinel", Code: ErrArg, Msg: k.String()}
	}
	if err := e.Write(addr, b); err != nil {
		return err
	}
	e.sentinels[stopPC(e.arch, k, addr)] = addr
	return nil
}

// RemoveSentinel forgets the sentinel at addr (the instruction stays).
func (e *Engine) RemoveSentinel(addr uint64) error {
	if e.uc == nil {
		return ErrClosed
	}
	for pc, a := range e.sentinels {
		if a == addr {
			delete(e.sentinels, pc)
		}
	}
	if h, ok := e.stopAt[addr]; ok {
		delete(e.stopAt, addr)
		delete(e.cHooks, h)
		return check("hook_del", C.uc_hook_del(e.uc, C.uc_hook(h)))
	}
	return nil
}

// CountInsns installs a C code hook counting the instructions executed in
// [begin, end]; Exit.Count reports the total per run. It costs a C call per
// counted instruction, much less than a Go code hook.
func (e *Engine) CountInsns(begin, end uint64) (Hook, error) {
	if e.uc == nil {
		return 0, ErrClosed
	}
	var hh C.uc_hook
	if err := check("hook_add", C.tj_hook_count(e.uc, &hh, e.st, C.uint64_t(begin), C.uint64_t(end))); err != nil {
		return 0, err
	}
	e.cHooks[Hook(hh)] = struct{}{}
	return Hook(hh), e.invalidate(begin, end)
}

// SetPreciseFaults makes Fault.PC exact. By default Unicorn 2.0 only syncs
// the pc at block boundaries, so a fault inside a block reports the block's
// first instruction. Precise mode installs a C no-op hook on every load and
// store, which forces the pc sync (and the memory slow path): see the
// package doc for its cost.
func (e *Engine) SetPreciseFaults(on bool) error {
	if e.uc == nil {
		return ErrClosed
	}
	if on == (e.syncPC != 0) {
		return nil
	}
	if !on {
		h := e.syncPC
		e.syncPC = 0
		return e.Unhook(h)
	}
	var hh C.uc_hook
	if err := check("hook_add", C.tj_hook_sync_pc(e.uc, &hh)); err != nil {
		return err
	}
	e.cHooks[Hook(hh)] = struct{}{}
	e.syncPC = Hook(hh)
	return e.invalidate(1, 0)
}
