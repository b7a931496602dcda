// Package emu runs trampoline images under the Unicorn CPU emulator, x86-64, arm64 and
// riscv64, against a synthetic traced function and stub programs and helpers, and checks
// what they do against an oracle derived from the request alone.
//
// It may import amd64, arm64, riscv64, jit and btfmodel.
//
// # API
//
//	Run(req, opts)              generate trampjit's image for req and call it (a struct_ops
//	                            request: through the ops pointer, structops.go)
//	RunImage(req, code, opts)   call given bytes, e.g. a corpus case's kernel image with
//	                            its request (the kernel's own addresses)
//	NewHarness(arch).Load(...)  one engine per arch; Loaded.Call(n), Loaded.SetImage
//	Mutants(arch, code)         displacement/immediate mutants of an image
//	NativeAddrs(kernel, n)      jit.Synthetic's x86_64 layout moved to user space
//	NativeCost(req, calls, reps) cycles and ns per hit natively: plain call, stubs, trampoline
//
// Options.Engine "native" (x86_64 Linux hosts, NativeSupported) runs the image on the CPU
// instead: same harness, same oracle, same checks in the generated code; see below.
//
// Options.Args are the argument words, one per ctx slot; RetValues what each fmod_ret
// program returns (attach order); Miss the programs whose enter helper reports a
// recursion miss; Clobber makes every stub overwrite all caller-saved registers; Count
// calls in one run, the caller looping in emulated code. Report marshals to the public
// JSON contract of `trampjit run --format json`.
//
// # What is mapped
//
// Everything sits at the addresses the request gives (a corpus case's are the kernel's;
// otherwise jit.Synthetic's), read-only and executable, next to the harness's caller,
// stack and script below 4 MiB:
//
//   - the image;
//   - the traced function: x86 `call image` at ip (6.12, 7.2: after the 4-byte sealed ENDBR
//     poison at func; 6.1: at func), or `jmp image` in jmp mode (7.2, CapX86JmpMode, for a
//     trampoline with CALL_ORIG and without SKIP_FRAME: it returns straight to the
//     caller, so the stack it sees has no return address of the patch site), arm64 `mov x9, x30` (a BPF program's
//     `add x9, x30, #0`) then `bl image`, or `bl` to a veneer doing `br x17` when the
//     image is out of range, as ftrace_caller does; riscv64 `auipc t0; jalr t0` at func
//     (ftrace_make_call; a BPF program's `auipc t1; jalr t0`, bpf_arch_text_poke), so the
//     image is entered with t0 = func+8, where the original resumes, and ra = the caller's
//     return; with CALL_OPS (CapRiscvCallOps: 7.2) the site calls
//     a stand-in for ftrace_caller that loads the image through the ftrace_ops pointer
//     stored before func (ld t1, -16(t0); ld t1, direct_call(t1); jr t1), and an image
//     beyond auipc's ±2 GiB is reached the same way; then the original's body, which
//     computes h = h*31 + w over every argument slot as it receives them (registers,
//     stack slots, both halves of 16-byte structs) from 0x1f2e3d4c and returns it at the
//     declared width (zero-extended; riscv64 sign-extends a 4-byte value, as its psABI
//     keeps 32-bit values in registers; void leaves all 64 bits). The riscv64 caller
//     passes slot k in a<k> for k < 8 and at sp+8(k-8) above, so a 16-byte struct with
//     only a7 left is split between a7 and the stack, as the psABI does;
//   - a stub at every helper address, every program's bpf_func, and the return thunk;
//     enter helpers return a non-zero start (0 on a recursion miss); void helpers leave
//     garbage in the return register; programs return 0 (fmod_ret: RetValues); a riscv64
//     program stub returns like a JITed program, a5 = R0 and a0 = sext32(R0), and the
//     oracle expects the trampoline to keep and test a0 (fmod_ret's short-circuit).
//
// # The oracle
//
// From the request, its function model and the options (never from a backend) the
// oracle derives the calls the trampoline must make and what each must see: flags
// (bpf_trampoline_update), emission order (fentry, fmod_ret, fexit; newest link first),
// the enter/exit pair (the _recur pair for tracing programs, plain for LSM: Debian
// 6.1.176 behaves like 6.12), __bpf_tramp_enter/exit(im) around CALL_ORIG trampolines,
// each enter(prog, &run_ctx) with the link's cookie in run_ctx, each program's ctx
// (argument slots as full 64-bit words; ctx[-1] = slot count; ctx[-2] = func with
// IP_ARG; ctx[nr_args] = the return value for fexit and fmod_ret, zero for the first
// fmod_ret), exit(prog, start, &run_ctx) with enter's start (0 after a miss) and the same
// run_ctx, fmod_ret short-circuit (the first non-zero return skips the other fmod_ret
// programs and the original, and is what fexit and the caller see), fsession
// (session.go: the program's block in the fentry and in the fexit list, each with its own
// enter/exit; ctx[-1] is func_meta, nr_args | cookie index<<8 | is_return<<63, as the
// kernel stores it before each cookie program's block and once at do_fexit, so fmod_ret
// and fexit programs see it too; the return value slot zero on entry; a program calling
// bpf_session_cookie finds its slot at ctx - 8*index zeroed on entry and, on exit, the
// mark its stub stored on entry), the original called
// with the arguments (6.12 x86 zeroes the upper half of a lone stack slot when the last
// argument is at most 4 bytes, clean_stack_garbage, except when a fentry-only trampoline
// returns into the original, which then reads the caller's own slot; 7.2 arm64 clears the
// unused high bytes of a narrow stack-passed argument in the programs' copy only). After
// each call:
// the caller's return value, callee-saved registers and sp intact, stack arguments and
// the caller's frame untouched; throughout: no access outside the mapped regions, at
// most Options.Budget instructions per call. Every discrepancy names its check, the
// expected and observed values and the call site (image+offset) or faulting pc.
//
// # struct_ops images (structops.go)
//
// A request with struct_ops has no traced function: the caller loads the member's
// arguments (its model from the kernel's BTF, stack slots as the ABI places them) and calls
// image + cfi_get_offset() through a register (x86 call *%r11, arm64 blr x16, riscv64 jalr
// ra, t1), as a subsystem calls ops->member(...): x86 executes the image's endbr64, and the
// landing check requires one with features.ibt, a bti c or bti jc on arm64 with BTI (blr's
// BTYPE), and with kCFI the member's hash where the caller's check reads it; under FineIBT
// the caller calls a stand-in for the rewritten call site (fineibt_caller: the hash in r10d,
// or eax with CapX86FineIBTEAX, then a jump to the preamble at the image's start). The oracle
// expects one __bpf_prog_enter/exit (or the _sleepable pair: struct_ops programs are not
// recursion-checked) around the program, which sees the arguments as fentry does, and
// nothing else; the caller gets the program's return value (Options.RetValues[0], else a
// value negative in every width) in the member's width, all 64 bits on riscv64, where a0 is
// re-derived from a5 by the member's type; a void member requires nothing of the return
// register; a recursion miss returns the return value slot as the trampoline found it (the
// harness's stack poison). riscv64 program stubs keep a5 (BPF R0) when they clobber.
//
// # Two ways of checking, one verdict
//
// By default the expectation is compiled into a script in guest memory and every stub
// checks its call with loads and compares (native.go), or-ing the differences together
// and branching once: Go hooks cost ~0.2 µs each and a 2-program call meets ten of them. A failing run is replayed with Options.Trace, where
// Go hooks record every call and the Go oracle explains the failure. (The emulated checks
// compare the caller's frame once, after the run, and use r12/r13 (x21/x22, s9/s10) as the
// script cursor and run_ctx, which a trampoline that touched them fails anyway.) The
// tests run both
// modes on every case and require the same report; a replay that passes where the
// emulated checks failed is reported as a failure, never a pass.
//
// # riscv64
//
// riscv64 runs on libunicorn's RV64GC: compressed instructions decode; the bit-manipulation
// extensions do not (QEMU 5.0's riscv), so the engine computes the Zba/Zbb instructions
// the kernel's JIT emits with Features.Zbb (sext.b, sext.h, zext.h, zext.w, rev8) when
// they raise their illegal-instruction exception (emu/unicorn). The checks in emulated
// code use t4-t6 as scratch and s11 as the caller's loop counter.
//
// # The native engine
//
// Run and RunImage with Options.Engine "native" lay out exactly what Unicorn maps (prepare:
// the traced function, the checking stubs, the caller, its frame and the script, at the
// same addresses) and hand it to emu/native, which forks a child that maps it with
// MAP_FIXED_NOREPLACE and runs it. The only difference is the x86 target's exit flavour:
// where Unicorn stops on hlt (a halt sentinel), native code calls back into the child's
// exit routine (`movabs r11, exit; call r11`), which returns to the C caller with every
// register. Requests without addrs get NativeAddrs (image, programs, function and
// helpers within rel32 reach around 0x7e0000000000); kernel addresses and arm64 images are
// refused. A run that fails natively (a check, a signal, a timeout, a changed frame) is
// replayed under Unicorn with Go hooks at the same addresses to say what differed, and the
// run check adds what the CPU did (signal, faulting address, pc). Crashes never reach the
// Go process: the child has its own signal handlers on an alternate stack. It is confined
// (emu/native's doc): its own process group, no descriptors, no capabilities, no new
// privileges, rlimits, and a seccomp filter that refuses every system call the harness does
// not make, so a system call in an image is reported as a violation and never runs.
// Natively the budget is a per-call time tick, independent of the call count, and a hard
// deadline for the whole run, after which the process group is killed. Bytes that are not
// trampjit's own (RunImage: a corpus case's image) run natively only with
// Options.UntrustedNative.
// Reports equal Unicorn's except for the engine's name, the rate and the budget's wording.
//
// Native cost (cost_native.go, BenchmarkNativeCost, docs/cost.md): one child runs, per
// repetition, a plain call of the function (patch site nop5), a replay of the stub calls
// the trampoline makes, and the trampoline, interleaved, with stubs that only return.
// Checked native calls run at ~40 M hits/s (BenchmarkNativeChecked).
//
// # Frames (frame.go)
//
// ObserveFrame calls an image once with a memory hook over the stack and a code hook that
// knows which instruction runs; CheckFrame holds what it saw against the backend's
// jit.Frame (the slots listings name and `trampjit frame` draws): slots do not overlap;
// every load and store of the image, in its frame or its caller's, and every access of
// other code above the image's sp (the entering call's push, a return thunk's ret, the
// original reading its stack arguments) lands in a declared slot, by an instruction the
// slot lists as its writer or reader; a listed writer that ran stored there; the pointers
// the stubs get are their slots' addresses (ctx at ctx[0] with nr_args/func_meta, ip and
// the return value around it, run_ctx at run_ctx.cookie with saved_run_ctx after it, the
// original's stack arguments at the outgoing copies); sp after the prologue is SPBase below
// the base; and every slot is touched by someone or its Note says why not. The tests run it
// over every golden case and every corpus image trampjit reproduces (TestFrameGolden,
// TestFrameStructOpsGoldens, TestFrameCorpus), each also with every fmod_ret returning
// non-zero and with the first program missed, and check that moving or dropping any slot
// of a golden frame is caught (TestCheckFrameCatchesMovedSlots).
//
// # Cost (BenchmarkBatch, BenchmarkPerCall; one pinned core of a shared 2-core Xeon VM)
//
// 2-program image (fentry + fexit, 6.12), every call checked; best of 5 rounds, ns per hit,
// libunicorn 2.1.4 (2.0.1 in brackets); the README has medians and how they were taken:
//
//	                                      x86-64               arm64
//	batch (Count 20000)                   862  (2739)  1.16 M/s  1008 (2265)  0.99 M/s
//	batch, same loop bare                 770  (2724)            1005 (2330)
//	batch, bare with minimal stubs        328  (2488)             465 (2637)
//	per call (Call(1))                    1665 (4247)            2123 (3819)
//	bare start/stop, same instructions    1394 (4861)            1769 (3918)  (1.2x, 1.2x)
//	per call traced by Go hooks           7878                   9289
//
// On 2.1 what a checked call costs is per translated block: each pays the budget's block
// hook (budget.c: a third of x86-64's host instructions, a fifth of arm64's) and Unicorn's
// exit check, and each return or indirect branch a jump-cache lookup. So the stubs' checks
// or their differences into one register and branch once (native.go); which compare failed
// is for the replay to say. Stores are on Unicorn's fast path only on the stack, which the
// harness takes out of the always-on fault hook (Engine.FastStores): before, every push
// took the slow path and cost a third of an x86-64 call. 2.0.x sends every store down its
// not-dirty path (~62 ns), whatever the harness does.
package emu
