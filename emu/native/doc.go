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
// SIGTRAP, SIGFPE, SIGALRM, SIGXCPU and SIGSYS on an alternate stack, and runs. Every ending
// writes a result into memory shared with the parent: the sentinel reached, or the signal
// with its code, faulting address, pc and every register. A child that dies without a result
// is an error before it ran generated code and StatusKilled after, never a pass. The parent
// is never at risk. A run costs ~1.5 ms end to end in emu (generation, layout, fork,
// mapping; measured on the shared 2-vCPU VM), once per run, outside the timed section: batch
// mode (a Count) amortises it.
//
// # Confinement (confine.c)
//
// The code may not be trampjit's (emu's Options.UntrustedNative), and a wrong displacement
// may reach a syscall instruction. So the child, before the first generated instruction:
// makes itself a process group (the parent SIGKILLs the whole group before reaping it, on
// every path); closes every descriptor (the result travels in the shared page); sets
// RLIMIT_CORE, RLIMIT_FSIZE, RLIMIT_NPROC and RLIMIT_NOFILE to 0, RLIMIT_AS to its size plus
// 64 MiB and RLIMIT_CPU to the deadline; drops every capability (root's CAP_SYS_RESOURCE
// would lift RLIMIT_NPROC); is made undumpable; sets no_new_privs; and installs a seccomp
// filter. The filter kills the process for another ABI (i386 int 0x80, x32) and allows exit,
// exit_group, rt_sigreturn (the watchdog returns from its handler), clock_gettime of
// CLOCK_MONOTONIC (the timing, should the vDSO fall back to the system call) and mprotect of
// exactly the pages and protections the plan's patches need; anything else traps (SIGSYS,
// SECCOMP_RET_TRAP rather than KILL_PROCESS, so that the result names the call): the kernel
// never runs it, and the handler ends the child with StatusSyscall. A second refused call
// inside a handler, where SIGSYS is blocked, kills the process. The filter is installed after
// the first phase's patches, right before nx_enter: nothing of it is in the timed section
// (rdtsc is not a system call). What confinement cannot do: the code shares the child's
// memory, so a hostile image could forge its own result.
//
// # Budgets
//
// Plan.Tick is the per-call budget: a periodic SIGALRM samples the phase and r15 (the
// harness caller's loop counter, which counts calls down); a sample equal to the previous
// one means no call returned for a whole tick, StatusTimeout, whatever the number of calls.
// Plan.Deadline bounds the whole child (code that keeps changing r15 fools the watchdog):
// the parent waits on a pidfd (or polls waitid) until then, SIGKILLs the group and reports
// StatusTimeout with Result.Deadline. The parent never waits longer.
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
