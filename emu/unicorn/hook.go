//go:build cgo

package unicorn

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"runtime/debug"
)

// hookRec is what a cgo.Handle of a Go hook points at.
type hookRec struct {
	e       *Engine
	handle  cgo.Handle
	intr    bool
	flush   bool // acts at translation time: drop cached translations
	begin   uint64
	end     uint64
	code    func(addr uint64, size uint32)
	mem     func(MemAccess)
	memInv  func(MemAccess) bool
	intrFn  func(intno uint32)
	insnInv func() bool
	insn    func()
}

// add registers r through the shim call fn, which gets the handle.
func (e *Engine) add(r *hookRec, fn func(hh *C.uc_hook, user C.uintptr_t) C.uc_err) (Hook, error) {
	if e.uc == nil {
		return 0, ErrClosed
	}
	r.e = e
	r.handle = cgo.NewHandle(r)
	var hh C.uc_hook
	if err := check("hook_add", fn(&hh, C.uintptr_t(r.handle))); err != nil {
		r.handle.Delete()
		return 0, err
	}
	e.hooks[Hook(hh)] = r
	if r.flush {
		if err := e.invalidate(r.begin, r.end); err != nil {
			return Hook(hh), err
		}
	}
	if r.intr {
		e.goIntr++
		e.st.go_intr = 1
	}
	return Hook(hh), nil
}

// HookCode calls fn before each instruction in [begin, end] (begin > end:
// everywhere). Only instructions in range pay for the call.
func (e *Engine) HookCode(begin, end uint64, fn func(addr uint64, size uint32)) (Hook, error) {
	return e.add(&hookRec{code: fn, flush: true, begin: begin, end: end}, func(hh *C.uc_hook, u C.uintptr_t) C.uc_err {
		return C.tj_hook_code(e.uc, hh, C.UC_HOOK_CODE, u, C.uint64_t(begin), C.uint64_t(end))
	})
}

// HookBlock calls fn at the start of each basic block in [begin, end].
func (e *Engine) HookBlock(begin, end uint64, fn func(addr uint64, size uint32)) (Hook, error) {
	return e.add(&hookRec{code: fn, flush: true, begin: begin, end: end}, func(hh *C.uc_hook, u C.uintptr_t) C.uc_err {
		return C.tj_hook_code(e.uc, hh, C.UC_HOOK_BLOCK, u, C.uint64_t(begin), C.uint64_t(end))
	})
}

// HookMem calls fn for valid accesses of the given kinds to [begin, end].
func (e *Engine) HookMem(kinds MemHooks, begin, end uint64, fn func(MemAccess)) (Hook, error) {
	return e.add(&hookRec{mem: fn, flush: true, begin: 1, end: 0}, func(hh *C.uc_hook, u C.uintptr_t) C.uc_err {
		return C.tj_hook_mem(e.uc, hh, C.int(kinds), u, C.uint64_t(begin), C.uint64_t(end))
	})
}

// HookMemInvalid calls fn for unmapped and protection-violating accesses to
// [begin, end]. Returning true claims the access (after mapping or
// re-protecting the memory) and emulation retries it; false lets the run
// fail with the fault. The run's error reports faults even without this hook.
func (e *Engine) HookMemInvalid(begin, end uint64, fn func(MemAccess) bool) (Hook, error) {
	return e.add(&hookRec{memInv: fn}, func(hh *C.uc_hook, u C.uintptr_t) C.uc_err {
		return C.tj_hook_mem_invalid(e.uc, hh, C.UC_HOOK_MEM_INVALID, u, C.uint64_t(begin), C.uint64_t(end))
	})
}

// HookIntr calls fn for interrupts and CPU exceptions (x86 vectors, arm64
// EXCP_* numbers). While any such hook is installed, interrupts no longer end
// runs by themselves: fn must call Stop or move the pc (after brk on arm64
// the pc still points at the brk), and trap sentinels are not recognised.
func (e *Engine) HookIntr(fn func(intno uint32)) (Hook, error) {
	return e.add(&hookRec{intrFn: fn, intr: true}, func(hh *C.uc_hook, u C.uintptr_t) C.uc_err {
		return C.tj_hook_intr(e.uc, hh, u)
	})
}

// HookInsnInvalid calls fn on an undefined instruction; returning true ends
// the run without error, false reports ErrInsnInvalid.
func (e *Engine) HookInsnInvalid(fn func() bool) (Hook, error) {
	return e.add(&hookRec{insnInv: fn}, func(hh *C.uc_hook, u C.uintptr_t) C.uc_err {
		return C.tj_hook_insn_invalid(e.uc, hh, u)
	})
}

// HookX86Insn calls fn when the x86 syscall or sysenter instruction executes.
func (e *Engine) HookX86Insn(insn int, fn func()) (Hook, error) {
	if e.arch != X86_64 {
		return 0, &Error{Op: "hook_add", Code: ErrArch, Msg: "x86 instruction hook"}
	}
	return e.add(&hookRec{insn: fn, flush: true, begin: 1, end: 0}, func(hh *C.uc_hook, u C.uintptr_t) C.uc_err {
		return C.tj_hook_x86_insn(e.uc, hh, u, C.int(insn))
	})
}

// FlushCode drops all translated code (tb_flush). It costs about 10 ms, and
// seconds the first time: prefer InvalidateCode.
func (e *Engine) FlushCode() error {
	if e.uc == nil {
		return ErrClosed
	}
	e.st.code_gen++
	return check("ctl_tb_flush", C.tj_tb_flush(e.uc))
}

// InvalidateCode drops translations of [begin, end] (begin > end: all
// mapped memory). Hooks and Write do this themselves; call it after changing
// code through a MapHost slice.
func (e *Engine) InvalidateCode(begin, end uint64) error {
	if e.uc == nil {
		return ErrClosed
	}
	return e.invalidate(begin, end)
}

// invalidate drops translations in the mapped parts of [begin, end].
func (e *Engine) invalidate(begin, end uint64) error {
	e.st.code_gen++
	if begin > end {
		begin, end = 0, ^uint64(0)
	}
	regs, err := e.Regions()
	if err != nil {
		return err
	}
	for _, r := range regs {
		lo, hi := max(r.Begin, begin), min(r.End, end)
		if lo > hi {
			continue
		}
		if err := check("ctl_remove_cache", C.tj_tb_remove(e.uc, C.uint64_t(lo), C.uint64_t(hi)+1)); err != nil {
			return err
		}
	}
	return nil
}

// Unhook removes a hook. Unicorn only marks it deleted (it is skipped from
// then on) and frees it at the end of the next run.
func (e *Engine) Unhook(h Hook) error {
	if e.uc == nil {
		return ErrClosed
	}
	r, goHook := e.hooks[h]
	if _, ok := e.cHooks[h]; !ok && !goHook {
		return &Error{Op: "hook_del", Code: ErrArg, Msg: fmt.Sprintf("unknown hook %#x", uintptr(h))}
	}
	for a, sh := range e.stopAt {
		if sh == h {
			delete(e.stopAt, a)
		}
	}
	err := check("hook_del", C.uc_hook_del(e.uc, C.uc_hook(h)))
	delete(e.cHooks, h)
	if goHook {
		// Safe even mid-run: a deleted hook is never called again.
		delete(e.hooks, h)
		r.handle.Delete()
		if r.intr {
			e.goIntr--
			if e.goIntr == 0 {
				e.st.go_intr = 0
			}
		}
	}
	return err
}

// rec resolves a handle. Unicorn never calls a deleted hook, so the handle
// is valid here.
func rec(h C.uintptr_t) *hookRec { return cgo.Handle(h).Value().(*hookRec) }

// guard turns a callback panic into a PanicError on the engine and stops the
// run: a Go panic must not unwind through Unicorn's C frames. It uses the
// resolved record, so a callback that unhooks itself and then panics is
// still reported.
func (r *hookRec) guard() {
	if v := recover(); v != nil {
		r.e.recordPanic(&PanicError{Value: v, Stack: debug.Stack()})
	}
}

//export tjGoCode
func tjGoCode(h C.uintptr_t, addr C.uint64_t, size C.uint32_t) {
	r := rec(h)
	defer r.guard()
	r.code(uint64(addr), uint32(size))
}

//export tjGoMem
func tjGoMem(h C.uintptr_t, typ C.int, addr C.uint64_t, size C.int, value C.int64_t) {
	r := rec(h)
	defer r.guard()
	r.mem(MemAccess{Kind: Access(typ), Addr: uint64(addr), Size: int(size), Value: int64(value)})
}

//export tjGoMemInvalid
func tjGoMemInvalid(h C.uintptr_t, typ C.int, addr C.uint64_t, size C.int, value C.int64_t) (ok C._Bool) {
	r := rec(h)
	defer r.guard()
	return C._Bool(r.memInv(MemAccess{Kind: Access(typ), Addr: uint64(addr), Size: int(size), Value: int64(value)}))
}

//export tjGoIntr
func tjGoIntr(h C.uintptr_t, intno C.uint32_t) {
	r := rec(h)
	defer r.guard()
	r.intrFn(uint32(intno))
}

//export tjGoInsnInvalid
func tjGoInsnInvalid(h C.uintptr_t) (ok C._Bool) {
	r := rec(h)
	defer r.guard()
	return C._Bool(r.insnInv())
}

//export tjGoInsn
func tjGoInsn(h C.uintptr_t) {
	r := rec(h)
	defer r.guard()
	r.insn()
}
