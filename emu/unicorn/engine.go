//go:build cgo

package unicorn

/*
#cgo pkg-config: unicorn
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"
)

// Engine is one Unicorn instance. It is meant to be opened once per arch and
// reused for many runs: opening costs ~0.2 ms and every new engine
// retranslates its code; a run costs ~0.3 µs plus the code it executes.
// An Engine is not safe for concurrent use; hooks run on the goroutine that
// called Start or Run.
type Engine struct {
	uc    *C.uc_engine
	arch  Arch
	st    *C.tj_state // C memory: the C hooks keep a pointer to it
	pcReg Reg

	hooks     map[Hook]*hookRec // Go-backed hooks and their handles
	cHooks    map[Hook]struct{} // removable C-only hooks (sentinels, counters)
	contexts  map[*Context]struct{}
	host      map[uint64]hostMap // MapHost regions by address
	sentinels map[uint64]uint64  // pc after a sentinel stop -> sentinel address
	stopAt    map[uint64]Hook    // SentinelHook addresses -> their hook
	syncPC    Hook               // SetPreciseFaults hook, 0 if off
	faults    []C.uc_hook        // the always-on invalid-access hooks (faststore.go)
	quiet     [2]uint64          // [begin, end) they leave out, FastStores

	goIntr  int // Go interrupt hooks installed
	running bool
	stopReq bool
	panic   *PanicError
}

// Version returns the version of the libunicorn the process runs on (not
// the headers it was built with), e.g. "2.0.1" or "2.1.4".
func Version() string {
	v := uint32(C.tj_version())
	return fmt.Sprintf("%d.%d.%d", v>>24, v>>16&0xff, v>>8&0xff)
}

// budgetMisses counts the block sizes Run's budget had to ask Unicorn for.
func (e *Engine) budgetMisses() uint64 { return uint64(e.st.icache_misses) }

// tlbChoice reports whether the library has UC_CTL_TLB_TYPE (2.1 and later).
func tlbChoice() bool { return uint32(C.tj_version())>>16 >= 0x0201 }

// Open creates an engine for arch in 64-bit little-endian mode with the
// default CPU: qemu64 on x86_64, Cortex-A72 on arm64, where the BTI and PAC
// hint instructions (bti, paciasp, autiasp) execute as NOPs, and "any" on
// riscv64: RV64GC (compressed instructions decode). libunicorn 2.1.4 is
// QEMU 5.0's riscv, which predates the bit-manipulation extensions, so the
// always-on interrupt hook computes the ones the kernel's BPF JIT emits on a
// Zba/Zbb CPU (sext.b, sext.h, zext.h, zext.w/add.uw, rev8; shim.c
// tj_rv_bitmanip) and any other raises cause 2, an illegal instruction.
// arm64 runs at EL1, like the kernel; riscv64 in machine mode, where wfi
// halts. Open installs the always-on C hooks that record
// interrupts and invalid accesses.
func Open(arch Arch) (*Engine, error) { return OpenModel(arch, ModelDefault) }

// OpenModel is Open with an explicit CPU model (UC_CPU_X86_* or
// UC_CPU_ARM64_* value). Unicorn only accepts the model before its lazy
// initialisation, which the first hook or mapping triggers, so it cannot be
// changed later.
func OpenModel(arch Arch, model int) (*Engine, error) {
	var ucArch C.uc_arch
	var mode C.uc_mode
	var pc Reg
	switch arch {
	case X86_64:
		ucArch, mode, pc = C.UC_ARCH_X86, C.UC_MODE_64, RIP
	case ARM64:
		ucArch, mode, pc = C.UC_ARCH_ARM64, C.UC_MODE_ARM, PC
	case RISCV64:
		ucArch, mode, pc = C.UC_ARCH_RISCV, C.UC_MODE_RISCV64, RVPC
	default:
		return nil, &Error{Op: "open", Code: ErrArch, Msg: arch.String()}
	}
	e := &Engine{
		arch:      arch,
		pcReg:     pc,
		hooks:     map[Hook]*hookRec{},
		cHooks:    map[Hook]struct{}{},
		contexts:  map[*Context]struct{}{},
		host:      map[uint64]hostMap{},
		sentinels: map[uint64]uint64{},
		stopAt:    map[uint64]Hook{},
	}
	if err := check("open", C.uc_open(ucArch, mode, &e.uc)); err != nil {
		return nil, err
	}
	e.st = (*C.tj_state)(C.calloc(1, C.size_t(unsafe.Sizeof(C.tj_state{}))))
	e.st.pc_reg = C.int(pc)
	e.st.rv_bitmanip = C.int(map[bool]int{true: 1}[arch == RISCV64])
	if arch == ARM64 {
		e.st.insn_shift = 2 // the budget counts a block as its size / 4
	}
	if model != ModelDefault {
		if err := check("ctl_set_cpu_model", C.tj_set_cpu_model(e.uc, C.int(model))); err != nil {
			e.Close()
			err.(*Error).Msg = fmt.Sprintf("model %d", model)
			return nil, err
		}
	}
	// After the model (this initialises the engine): 2.1's default TLB cuts
	// x86_64 addresses to 52 bits; see tj_set_tlb_virtual.
	if tlbChoice() {
		if err := check("ctl_set_tlb_mode", C.tj_set_tlb_virtual(e.uc)); err != nil {
			e.Close()
			return nil, err
		}
	}
	// The always-on hooks are not in cHooks: Unhook must not remove them.
	var intr, mem C.uc_hook
	if err := check("hook_add", C.tj_install(e.uc, e.st, &intr, &mem)); err != nil {
		e.Close()
		return nil, err
	}
	e.faults = []C.uc_hook{mem}
	return e, nil
}

// Arch reports the engine's guest architecture.
func (e *Engine) Arch() Arch { return e.arch }

// Close frees the engine, its hooks (and their cgo handles), contexts and
// host mappings. It is safe to call twice.
func (e *Engine) Close() error {
	if e.uc == nil {
		return nil
	}
	if e.running {
		return &Error{Op: "close", Msg: "called from inside a run"}
	}
	for c := range e.contexts {
		c.free()
	}
	err := check("close", C.uc_close(e.uc))
	e.uc = nil
	for h, r := range e.hooks {
		r.handle.Delete()
		delete(e.hooks, h)
	}
	for addr, m := range e.host {
		C.free(m.ptr)
		delete(e.host, addr)
	}
	C.free(unsafe.Pointer(e.st))
	e.st = nil
	return err
}

// Start runs from begin like uc_emu_start: until a sentinel, the until
// address, Stop, the timeout (0: none) or count instructions (0: no limit).
// A non-zero until costs a translation-block invalidation per run and a
// timeout costs a thread per run; see the package doc. Interrupts that no Go
// hook handles stop the run and are returned as errors unless they are
// sentinels.
func (e *Engine) Start(begin, until uint64, timeout time.Duration, count uint64) (Exit, error) {
	if err := e.enter(); err != nil {
		return Exit{}, err
	}
	us := uint64(0)
	if timeout > 0 {
		us = max(uint64(timeout/time.Microsecond), 1)
	}
	rc := C.tj_emu_start(e.uc, e.st, C.uint64_t(begin), C.uint64_t(until), C.uint64_t(us), C.uint64_t(count))
	return e.exit(rc, until, count > 0 || timeout > 0)
}

// RunRegs is Run with the per-call register traffic folded into the same
// cgo call: it writes in[i] = inVals[i], runs, then reads out[i] into
// outVals[i] (also after a failed run).
func (e *Engine) RunRegs(begin, count uint64, in []Reg, inVals []uint64, out []Reg, outVals []uint64) (Exit, error) {
	if len(inVals) < len(in) || len(outVals) < len(out) {
		return Exit{}, &Error{Op: "run", Code: ErrArg, Msg: "fewer values than registers"}
	}
	if err := e.enter(); err != nil {
		return Exit{}, err
	}
	var pin, pout *C.int
	var vin, vout *C.uint64_t
	if len(in) > 0 {
		pin, vin = (*C.int)(unsafe.Pointer(&in[0])), (*C.uint64_t)(unsafe.Pointer(&inVals[0]))
	}
	if len(out) > 0 {
		pout, vout = (*C.int)(unsafe.Pointer(&out[0])), (*C.uint64_t)(unsafe.Pointer(&outVals[0]))
	}
	rc := C.tj_run(e.uc, e.st, C.uint64_t(begin), 0, C.uint64_t(count),
		pin, vin, C.int(len(in)), pout, vout, C.int(len(out)))
	x, err := e.exit(rc, 0, false)
	if err != nil {
		return x, err
	}
	return x, runCheck(x)
}

// enter starts a run: one at a time, state reset.
func (e *Engine) enter() error {
	if e.uc == nil {
		return ErrClosed
	}
	if e.running {
		return &Error{Op: "emu_start", Msg: "nested runs are not supported"}
	}
	e.running, e.stopReq, e.panic = true, false, nil
	return nil
}

// exit classifies how the run ended from Unicorn's return code and what the
// C hooks recorded.
func (e *Engine) exit(rc C.uc_err, until uint64, limited bool) (Exit, error) {
	e.running = false
	st := e.st
	x := Exit{PC: uint64(st.pc), Count: uint64(st.icount)}
	switch {
	case e.panic != nil:
		x.Reason = ReasonPanic
		p := e.panic
		e.panic = nil
		return x, p
	case rc != C.UC_ERR_OK:
		err := &Error{Op: "emu_start", Code: Code(rc)}
		x.Reason = ReasonError
		if st.has_fault != 0 && isMemCode(Code(rc)) {
			x.Reason = ReasonFault
			err.Fault = &Fault{Kind: Access(st.fault_type), Addr: uint64(st.fault_addr),
				Size: int(st.fault_size), Value: int64(st.fault_value), PC: uint64(st.fault_pc)}
		} else if f := e.quietFault(Code(rc), x.PC); f != nil {
			x.Reason = ReasonFault
			err.Fault = f
		}
		return x, err
	case st.reason == C.TJ_STOP_INTR:
		x.Intr = uint32(st.intno)
		if a, ok := e.sentinels[uint64(st.intr_pc)]; ok {
			x.Reason, x.Sentinel = ReasonSentinel, a
			return x, nil
		}
		x.Reason = ReasonIntr
		return x, &Error{Op: "emu_start", Code: ErrException,
			Intr: &Intr{No: uint32(st.intno), PC: uint64(st.intr_pc)}}
	case st.reason == C.TJ_STOP_AT:
		x.Reason, x.Sentinel = ReasonSentinel, uint64(st.stop_pc)
	case st.reason == C.TJ_STOP_BUDGET:
		x.Reason = ReasonBudget
	case e.stopReq:
		x.Reason = ReasonStopped
	case x.PC == until:
		x.Reason = ReasonUntil
	default:
		if a, ok := e.sentinels[x.PC]; ok {
			x.Reason, x.Sentinel = ReasonSentinel, a
		} else if limited && !e.haltedBefore(x.PC) {
			x.Reason = ReasonBudget
		} else {
			x.Reason = ReasonHalt
		}
	}
	return x, nil
}

// Run executes from begin until a sentinel stops it. Anything else is an
// error: halting elsewhere, exhausting count (0: no limit), reaching address
// 0, an interrupt, a fault. A Stop from a hook is not an error.
//
// Unlike Start's, this count is a budget checked once per translated block
// (budget.c), several times cheaper than Unicorn's per-instruction count: a
// run that ends by budget executed more than count instructions, at most one
// block more, and no translation is flushed when the count changes.
func (e *Engine) Run(begin, count uint64) (Exit, error) {
	// until=0 never invalidates translations; reaching 0 is reported by runCheck.
	return e.RunRegs(begin, count, nil, nil, nil, nil)
}

// Stop asks a run in progress to end (uc_emu_stop); call it from a hook.
// The run reports ReasonStopped.
func (e *Engine) Stop() error {
	if e.uc == nil {
		return ErrClosed
	}
	e.stopReq = true
	return check("emu_stop", C.uc_emu_stop(e.uc))
}

// haltedBefore reports whether the instruction ending at pc is a halt, to
// tell a hlt/wfi from an exhausted count.
func (e *Engine) haltedBefore(pc uint64) bool {
	b := SentinelBytes(e.arch, SentinelHalt)
	got := make([]byte, len(b))
	if pc < uint64(len(b)) || e.Read(pc-uint64(len(b)), got) != nil {
		return false
	}
	return string(got) == string(b)
}

// recordPanic is called by recovered hook callbacks; the first panic wins.
func (e *Engine) recordPanic(p *PanicError) {
	if e.panic == nil {
		e.panic = p
	}
	if e.uc != nil {
		C.uc_emu_stop(e.uc)
	}
}
