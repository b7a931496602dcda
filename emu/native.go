package emu

import (
	"encoding/binary"
	"fmt"

	uc "github.com/trampjit/trampjit/emu/unicorn"
)

// Checking in emulated code. Go hooks cost about 0.2 µs each and a call through a
// 2-program trampoline meets ten of them, which is more than the emulation itself. So by
// default the oracle's expectation is compiled into a script in guest memory, and every
// stub compares what it is given with its script entry using loads and compares only
// (stores cost ~62 ns each in libunicorn 2.0.x; loads ~2 ns): its own identity (the call
// order), the pointers and values passed, the ctx words, the cookie behind run_ctx, and a
// bpf_session_cookie program's slot (which its stub then stores its mark into). A
// cursor register walks the script. Any difference sends the call to a fail address, a
// sentinel: all of them, the identity too (past the script's last entry the script area
// reads zeros, which match no stub), are or-ed into r11 (arm64 x15, both caller-saved
// scratch that any helper may clobber) and tested once, where the stub returns: a
// conditional move picks the return address or the fail address and one indirect jump
// goes there (finish; riscv64, without a conditional move, selects with a mask). Under
// Unicorn every conditional branch ends a translated block and blocks are what a call
// costs.
// Nothing is stored before the test; a load through a bad pointer faults, and a fault
// ends the run like a fail. The harness then replays the call with the Go hooks
// (Options.Trace) to say precisely what differed. The report of a passing run is the expectation itself, which
// every call has just been checked to equal.
//
// Harness registers, preserved by any correct trampoline (it never touches them):
// x86 r12 = cursor, r13 = the latest enter's run_ctx, r15 = loop counter; arm64 x21,
// x22, x28.

// Script layout: one entry per expected event.
const (
	scriptBase  = 0x200000
	scriptSize  = 0x10000
	entrySize   = 256
	entID       = 0   // the stub's identity
	entPtr      = 8   // prog pointer, im
	entVal      = 16  // enter: what to return; exit: the start it must get
	entCookie   = 24  // run_ctx->bpf_cookie
	entCtx      = 32  // ctx[-2] at entCtx, ctx[-1], ctx[0..n] after it
	entSess     = 248 // a session cookie program: its cookie slot's value (after ctx[maxSlots])
	idProgBase  = 100
	idOriginal  = 250
	maxEventsNC = scriptSize / entrySize
)

// ctxOff is the script offset of ctx[k] (k >= -2).
func ctxOff(k int) int { return entCtx + 8*(k+2) }

// nativeCfg is what native stubs need to know about the trampoline.
type nativeCfg struct {
	nregs   int
	ipArg   bool
	retSlot []bool // per attach index
	locs    []slotLoc
	// sessIdx is the cookie index of each program calling bpf_session_cookie: its stub
	// checks the slot at ctx - 8*index against the script and stores its mark there.
	sessIdx map[int]int
}

// buildScript writes the expectation as script entries; ids maps helper names to ids.
func buildScript(dst []byte, x *expectation, ids map[string]int) (int, error) {
	if len(x.events) > maxEventsNC {
		return 0, fmt.Errorf("emu: %d events do not fit the script", len(x.events))
	}
	for i := range dst {
		dst[i] = 0
	}
	for i := range x.events {
		e := &x.events[i]
		b := dst[i*entrySize : (i+1)*entrySize]
		id := 0
		switch e.kind {
		case evProg:
			id = idProgBase + e.prog
		case evOrig:
			id = idOriginal
		default:
			id = ids[e.name]
		}
		put := func(off int, v uint64) { binary.LittleEndian.PutUint64(b[off:], v) }
		put(entID, uint64(id))
		put(entPtr, e.ptr)
		put(entCookie, e.cookie)
		switch e.kind {
		case evEnter:
			put(entVal, startValue)
		case evExit:
			put(entVal, startValue)
		case evProg:
			put(ctxOff(-2), x.fn)
			put(ctxOff(-1), e.nargs)
			for k := 0; k < e.n; k++ {
				put(ctxOff(k), e.ctx[k])
			}
			put(ctxOff(e.n), e.ret)
			put(entSess, e.sess)
		case evOrig:
			for k := 0; k < e.n; k++ {
				put(ctxOff(k), e.ctx[k])
			}
		}
	}
	// A missed program's enter returns 0, and its exit gets 0.
	for i := range x.events {
		e := &x.events[i]
		if e.kind != evEnter || x.progs[e.prog].ran {
			continue
		}
		binary.LittleEndian.PutUint64(dst[i*entrySize+entVal:], 0)
		for j := i + 1; j < len(x.events); j++ {
			if x.events[j].kind == evExit && x.events[j].prog == e.prog {
				binary.LittleEndian.PutUint64(dst[j*entrySize+entVal:], 0)
				break
			}
		}
	}
	return len(x.events) * entrySize, nil
}

// callerCheck is what the native caller loop verifies after each call.
type callerCheck struct {
	scriptEnd uint64
	ret       uint64
	retMask   uint64 // the bits of ret compared: all, a member's width, or none (void)
	canaries  map[uc.Reg]uint64
}
