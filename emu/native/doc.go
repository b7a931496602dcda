// Package native runs x86-64 machine code natively, at fixed user-space addresses, in a
// forked child process: the engine behind emu's Options.Engine "native".
//
// # Why a child process
//
// Generated code is under test: a wrong displacement may jump anywhere, write anywhere or
// loop. Running it in the Go process would let a fault reach the Go runtime, which treats a
// SIGSEGV in foreign code as fatal ("signal arrived during cgo execution"), and overriding
// the runtime's handlers, even briefly, races with every other thread. So Exec forks (in C,
// from cgo; the child runs only C and the generated code, never Go), and the child maps the
// regions with MAP_FIXED_NOREPLACE (an address already in use is an error, never a silent
// overwrite of the parent's copy), installs its own handlers for SIGSEGV, SIGBUS, SIGILL,
// SIGTRAP, SIGFPE and SIGSYS on an alternate stack, arms a timer (SIGALRM) and a CPU limit
// (SIGXCPU, then the kernel's SIGKILL), and runs. Every ending writes a result into memory
// shared with the parent: the sentinel reached, or the signal with its code, faulting
// address, pc and every register. A child that dies without a result is an error, never a
// pass. The parent is never at risk. A run costs ~1.5 ms end to end in emu (generation,
// layout, fork, mapping; measured on the shared 2-vCPU VM), once per run, outside the
// timed section: batch mode (a Count) amortises it.
//
// # Entering and leaving generated code
//
// nx_enter saves the child's callee-saved registers, loads the phase's six callee-saved
// values (canaries) and stack pointer and jumps to the entry. Generated code ends at a
// sentinel: `movabs r11, ExitAddr(); call r11` (13 bytes, Sentinel). The exit routine stores
// every register, takes the sentinel's address from the return address its call pushed,
// and returns from nx_enter: a plain return to the caller, not a signal.
//
// # Timing
//
// Each (repetition, phase) is bracketed by lfence; rdtsc ... rdtscp; lfence and
// CLOCK_MONOTONIC, in the child, pinned to the CPU it started on (Plan.Pin). rdtsc counts
// reference cycles at the TSC's constant rate, not core cycles.
package native
