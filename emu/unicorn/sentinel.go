package unicorn

/*
#include "shim.h"
*/
import "C"

import "fmt"

// SentinelKind selects how a sentinel ends a run.
type SentinelKind int

// Sentinel kinds; see the package doc for what each costs.
const (
	// SentinelHalt is hlt (x86) or wfi (arm64): Unicorn leaves its CPU loop
	// by itself, no hook runs at all.
	SentinelHalt SentinelKind = iota
	// SentinelTrap is int3 (x86) or brk #0 (arm64), caught by the always-on
	// C interrupt hook, which calls uc_emu_stop.
	SentinelTrap
	// SentinelHook writes no instruction: a C code hook on the address stops
	// the run before the instruction there executes. The address must be
	// mapped executable, since Unicorn translates the instruction first.
	// It is the cheapest kind.
	SentinelHook
)

func (k SentinelKind) String() string {
	switch k {
	case SentinelHalt:
		return "halt"
	case SentinelTrap:
		return "trap"
	case SentinelHook:
		return "hook"
	}
	return fmt.Sprintf("SentinelKind(%d)", int(k))
}

// SentinelBytes returns the instruction encoding of a sentinel kind, or nil
// for SentinelHook.
func SentinelBytes(a Arch, k SentinelKind) []byte {
	switch {
	case a == X86_64 && k == SentinelHalt:
		return []byte{0xf4} // hlt
	case a == X86_64 && k == SentinelTrap:
		return []byte{0xcc} // int3
	case a == ARM64 && k == SentinelHalt:
		return []byte{0x7f, 0x20, 0x03, 0xd5} // wfi
	case a == ARM64 && k == SentinelTrap:
		return []byte{0x00, 0x00, 0x20, 0xd4} // brk #0
	}
	return nil
}

// stopPC is where the pc is reported after a sentinel at addr ends a run:
// after hlt/wfi/int3 (they complete), at brk (it faults).
func stopPC(a Arch, k SentinelKind, addr uint64) uint64 {
	if k == SentinelHook || (a == ARM64 && k == SentinelTrap) {
		return addr
	}
	return addr + uint64(len(SentinelBytes(a, k)))
}

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
