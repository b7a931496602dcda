package emu

import (
	"fmt"
	"io"
	"strings"
)

// Options says how to call a trampoline.
type Options struct {
	// Args are the argument words, one per ctx slot (a 9..16-byte struct takes two), in
	// argument order; empty means DefaultArgs. Narrow arguments are passed as full
	// registers: the kernel neither extends nor truncates them.
	Args []uint64
	// RetValues is what each fmod_ret program returns (LSM programs on non-void hooks
	// included), in attach order; missing values are 0.
	RetValues []uint64
	// Miss lists programs (0-based attach indexes) whose enter helper reports a
	// recursion miss (returns 0), so that the program must be skipped.
	Miss []int
	// Clobber makes every stub (helpers, programs, the original) overwrite all
	// caller-saved registers it does not return in.
	Clobber bool
	// Count is the number of calls; above 1 the caller loops inside emulated code
	// (batch mode) and every call is checked.
	Count int
	// Engine is "unicorn" (or empty) or "native" (x86_64 hosts: the image runs on the
	// CPU in a forked child, checked by the same code; engine_native.go).
	Engine string
	// UntrustedNative lets RunImage run bytes trampjit did not generate natively: on this
	// CPU, in a confined child (no descriptors, seccomp, rlimits; emu/native's doc).
	UntrustedNative bool
	// TargetRet makes the original return this value instead of its hash of the
	// arguments, to reproduce a recorded call of a real kernel function.
	TargetRet *uint64
	// Budget is the instruction budget per call (0: DefaultBudget); natively, where
	// nothing counts instructions, a timeout of 0.25 s plus Budget ns per call.
	Budget uint64
	// Trace records every call with Go hooks and checks it in Go. By default the
	// checks run in emulated code and only a failing call is replayed with tracing,
	// which is several times faster (see native.go).
	Trace bool
}

// DefaultBudget is the per-call instruction budget: a 38-program trampoline with its
// stubs runs about 3,000 instructions.
const DefaultBudget = 100000

// Report is the outcome of a run; its JSON form is a public contract (trampjit run
// --format json).
type Report struct {
	OK             bool         `json:"ok"`
	Engine         string       `json:"engine"`
	Args           []uint64     `json:"args"`
	Ret            uint64       `json:"ret"`
	OriginalCalled bool         `json:"original_called"`
	Programs       []ProgReport `json:"programs"`
	Checks         []Check      `json:"checks"`
	Hits           uint64       `json:"hits"`
	HitsPerSec     float64      `json:"hits_per_sec"`
	// Libunicorn is the version of the libunicorn a Unicorn run ran on (uc_version),
	// e.g. "2.1.4"; emulation speed and some behaviour depend on it.
	Libunicorn string `json:"libunicorn,omitempty"`
	// StructOps is the ops table member of a struct_ops image ("tcp_congestion_ops.cong_avoid"),
	// called through the table's pointer by the harness's caller; empty for a trampoline of a
	// traced function.
	StructOps string `json:"struct_ops,omitempty"`
}

// ProgReport is what one program saw on the first call, in attach order. Ctx holds the
// argument slots and, for fexit and fmod_ret programs, the return value slot after them
// (ctx[nr_args], what bpf_get_func_ret reads).
type ProgReport struct {
	Kind   string   `json:"kind"`
	Index  int      `json:"index"`
	Ran    bool     `json:"ran"`
	Ctx    []uint64 `json:"ctx"`
	Cookie uint64   `json:"cookie"`

	// NArgs is ctx[-1] (bpf_get_func_arg_cnt), IP ctx[-2] (bpf_get_func_ip, meaningful
	// with IP_ARG only); not part of the JSON contract.
	NArgs uint64 `json:"-"`
	IP    uint64 `json:"-"`

	// Session is an fsession program's two runs (Ran and Ctx above are the entry's); nil
	// for other kinds.
	Session *SessionReport `json:"session,omitempty"`
}

// SessionReport is what an fsession program saw on entry and on exit (nil: that run was
// skipped by a recursion miss).
type SessionReport struct {
	Entry *SessionRun `json:"entry"`
	Exit  *SessionRun `json:"exit"`
}

// SessionRun is one run of an fsession program.
type SessionRun struct {
	FuncMeta uint64 `json:"func_meta"` // ctx[-1]: nr_args | cookie index<<8 | is_return<<63
	IsReturn bool   `json:"is_return"` // bpf_session_is_return
	// Ctx are the argument slots, on exit with the return value slot after them.
	Ctx []uint64 `json:"ctx"`
	// Cookie is what a program calling bpf_session_cookie found in its slot: 0 on entry,
	// and on exit what its entry run stored (the stub stores a marker).
	Cookie *uint64 `json:"session_cookie,omitempty"`
}

// Check is one verdict of the oracle.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Check names, in report order.
const (
	CheckRun         = "run"          // emulation ended at the caller, not by an error
	CheckMemory      = "memory"       // no access outside the mapped regions
	CheckBudget      = "budget"       // within the instruction budget
	CheckOrder       = "order"        // helpers, programs and the original called in order
	CheckHelperArgs  = "helper_args"  // prog/im pointers, run_ctx, cookie, start passed on
	CheckCtx         = "ctx"          // each program's argument slots
	CheckNrArgs      = "nr_args"      // ctx[-1]
	CheckFuncIP      = "func_ip"      // ctx[-2] with IP_ARG
	CheckRetval      = "retval"       // ctx[nr_args] for fexit and fmod_ret (fsession: 0 on entry)
	CheckSession     = "session"      // fsession: func_meta's is_return and cookie index, session cookies
	CheckOriginal    = "original"     // called iff it must be, with the arguments
	CheckRet         = "ret"          // what the caller gets back
	CheckCalleeSaved = "callee_saved" // callee-saved registers intact
	CheckSP          = "sp"           // stack pointer intact
	CheckStackArgs   = "stack_args"   // stack arguments and the caller's frame untouched
	CheckLanding     = "landing"      // struct_ops: the entry is a legal indirect call target (IBT/BTI, kCFI hash)
)

var checkOrder = []string{CheckRun, CheckMemory, CheckBudget, CheckOrder, CheckHelperArgs, CheckCtx,
	CheckNrArgs, CheckFuncIP, CheckRetval, CheckSession, CheckOriginal, CheckRet, CheckCalleeSaved, CheckSP, CheckStackArgs, CheckLanding}

// Failed returns the checks that failed.
func (r *Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// WriteText writes the report for people: the call, what each program saw, the checks.
func (r *Report) WriteText(w io.Writer) error {
	verdict := "ok"
	if !r.OK {
		verdict = "FAILED"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s  (%s, %d call(s)", verdict, r.Engine, r.Hits)
	if r.HitsPerSec > 0 {
		fmt.Fprintf(&b, ", %.0f calls/s", r.HitsPerSec)
	}
	if r.Libunicorn != "" {
		fmt.Fprintf(&b, ", libunicorn %s", r.Libunicorn)
	}
	fmt.Fprintf(&b, ")\n")
	if r.StructOps != "" {
		fmt.Fprintf(&b, "called    %s through the ops table's pointer\n", r.StructOps)
	}
	fmt.Fprintf(&b, "args      %s\nreturned  %#x", hexList(r.Args), r.Ret)
	if !r.OriginalCalled && r.StructOps == "" {
		b.WriteString("  (original skipped)")
	}
	kw := 9 // the KIND column, wider for struct_ops
	for _, p := range r.Programs {
		kw = max(kw, len(p.Kind))
	}
	fmt.Fprintf(&b, "\n\nPROG  %-*s RAN  COOKIE              CTX\n", kw, "KIND")
	for _, p := range r.Programs {
		ran := "no"
		if p.Ran {
			ran = "yes"
		}
		fmt.Fprintf(&b, "%-5d %-*s %-4s %-19s %s\n", p.Index, kw, p.Kind, ran, fmt.Sprintf("%#x", p.Cookie), hexList(p.Ctx))
		if p.Session != nil {
			for _, r := range []struct {
				name string
				run  *SessionRun
			}{{"entry", p.Session.Entry}, {"exit", p.Session.Exit}} {
				if r.run == nil {
					fmt.Fprintf(&b, "      %-5s did not run\n", r.name)
					continue
				}
				fmt.Fprintf(&b, "      %-5s func_meta %#x is_return %v", r.name, r.run.FuncMeta, r.run.IsReturn)
				if r.run.Cookie != nil {
					fmt.Fprintf(&b, " session_cookie %#x", *r.run.Cookie)
				}
				fmt.Fprintf(&b, " ctx %s\n", hexList(r.run.Ctx))
			}
		}
	}
	b.WriteString("\nCHECK         OK    DETAIL\n")
	for _, c := range r.Checks {
		ok := "ok"
		if !c.OK {
			ok = "FAIL"
		}
		fmt.Fprintf(&b, "%-13s %-5s %s\n", c.Name, ok, c.Detail)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func hexList(v []uint64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%#x", x)
	}
	return "[" + strings.Join(s, " ") + "]"
}
