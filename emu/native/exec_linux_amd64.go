//go:build linux && amd64 && cgo

package native

/*
#include <stdlib.h>
#include <string.h>
#include "exec.h"
*/
import "C"

import (
	"fmt"
	"syscall"
	"unsafe"
)

// Supported says whether this host can run x86-64 code natively.
const Supported = true

// ExitAddr is where sentinels branch to: the child's exit routine.
func ExitAddr() uint64 { return uint64(C.nx_exit_addr()) }

// Exec runs p in a forked child and returns what it reported.
func Exec(p *Plan) (*Result, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	// The plan is copied to C memory: the child reads it after the fork, and cgo forbids
	// C-held pointers into Go memory.
	var allocs []unsafe.Pointer
	defer func() {
		for _, a := range allocs {
			C.free(a)
		}
	}()
	cbytes := func(b []byte) *C.uint8_t {
		if len(b) == 0 {
			return nil
		}
		m := C.CBytes(b)
		allocs = append(allocs, m)
		return (*C.uint8_t)(m)
	}
	cp := (*C.struct_nx_plan)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_nx_plan{}))))
	allocs = append(allocs, unsafe.Pointer(cp))
	if n := len(p.Regions); n > 0 {
		rs := (*[1 << 16]C.struct_nx_region)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.struct_nx_region{}))))[:n:n]
		allocs = append(allocs, unsafe.Pointer(&rs[0]))
		for i, r := range p.Regions {
			rs[i] = C.struct_nx_region{addr: C.uint64_t(r.Addr), size: C.uint64_t(r.Size), data: cbytes(r.Data),
				len: C.uint64_t(len(r.Data)), prot: C.int(r.Prot)}
		}
		cp.regions, cp.nregions = &rs[0], C.int(n)
	}
	for i, ph := range p.Phases {
		c := &cp.phases[i]
		for k, v := range ph.Regs {
			c.regs[k] = C.uint64_t(v)
		}
		c.sp, c.entry = C.uint64_t(ph.SP), C.uint64_t(ph.Entry)
		if n := len(ph.Patches); n > 0 {
			ps := (*[1 << 16]C.struct_nx_patch)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.struct_nx_patch{}))))[:n:n]
			allocs = append(allocs, unsafe.Pointer(&ps[0]))
			for k, pt := range ph.Patches {
				ps[k] = C.struct_nx_patch{addr: C.uint64_t(pt.Addr), data: cbytes(pt.Data), len: C.uint64_t(len(pt.Data))}
			}
			c.patches, c.npatches = &ps[0], C.int(n)
		}
	}
	cp.nphases, cp.reps = C.int(len(p.Phases)), C.int(max(p.Reps, 1))
	cp.tick_ms, cp.deadline_ms = C.uint64_t(p.Tick.Milliseconds()), C.uint64_t(p.Deadline.Milliseconds())
	cp.rb_addr, cp.rb_len = C.uint64_t(p.Readback[0]), C.uint64_t(p.Readback[1])
	if p.Pin {
		cp.pin = 1
	}
	out := (*C.struct_nx_result)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_nx_result{}))))
	allocs = append(allocs, unsafe.Pointer(out))
	if rc := C.nx_exec(cp, out); rc != 0 {
		return nil, fmt.Errorf("native: %s (%v)", C.GoString(&out.msg[0]), syscall.Errno(-rc))
	}
	r := &Result{Status: Status(out.status), Signal: syscall.Signal(out.sig), Code: int(out.code),
		Addr: uint64(out.sigaddr), PC: uint64(out.pc), Sentinel: uint64(out.sentinel),
		Reps: int(out.reps_done), Phase: int(out.phase), Syscall: int(out.sysno), Deadline: out.deadline != 0}
	for i := range r.Regs {
		r.Regs[i] = uint64(out.gpr[i])
	}
	if r.Status == StatusSetup {
		return nil, fmt.Errorf("native: %s at %#x: %v", C.GoString(&out.msg[0]), uint64(out.setup_addr), syscall.Errno(out.err))
	}
	r.Readback = C.GoBytes(unsafe.Pointer(&out.readback[0]), C.int(min(p.Readback[1], C.NX_READBACK)))
	for rep := 0; rep < r.Reps; rep++ {
		var cyc, ns []uint64
		for ph := range p.Phases {
			cyc = append(cyc, uint64(out.cycles[rep][ph]))
			ns = append(ns, uint64(out.ns[rep][ph]))
		}
		r.Cycles, r.Nanos = append(r.Cycles, cyc), append(r.Nanos, ns)
	}
	return r, nil
}
