// Package unicorn is a small cgo binding to libunicorn 2.0 and 2.1 (Debian's
// libunicorn-dev 2.0.1 in bookworm, 2.1.4 in sid, which `make deps` fetches),
// covering what the trampoline harness needs on x86_64, arm64 and riscv64: engines,
// memory, registers, runs that end on a sentinel, hooks backed by Go
// callbacks or by C, and CPU contexts. Version reports the library the
// process runs on.
//
// Without cgo (CGO_ENABLED=0) the package keeps its types and constants
// (api.go, the numbers checked against the header by a cgo test) and every
// entry point returns ErrNotAvailable, so that the rest of trampjit builds
// anywhere.
//
// # Runs
//
// Open one Engine per arch and reuse it. Place a sentinel where emulated code
// should end (AddSentinel: SentinelHalt is hlt/wfi, SentinelTrap is
// int3/brk #0, SentinelHook is a C code hook on an address), then Run or
// RunRegs from the entry point. Everything that is not a sentinel is an
// error carrying Unicorn's message and the operation: a memory fault (with
// kind, address, size and pc), an interrupt (with its number), a halt
// elsewhere, an exhausted instruction count, a jump to address 0, or a
// panicking Go hook (recovered in the callback and returned as *PanicError;
// a Go panic must never unwind through Unicorn's C frames). C hooks that
// never call Go are always installed: one records invalid memory accesses,
// one records interrupts and stops the run (any installed interrupt hook
// makes Unicorn resume after the interrupt, so someone must stop it), one
// counts Run's budget per block, and on 2.1 one fills the TLB.
// FastStores(begin, end) leaves a writable region out of the fault hook, so
// that stores there stay on Unicorn's fast path; a fetch there is still
// reported as a FetchProt fault at its address.
//
// # Unicorn behaviour the binding compensates for
//
// 2.1:
//
//   - Its default TLB (UC_TLB_CPU) runs x86_64 addresses through the CPU's
//     52-bit physical width: a fetch at 0xffffffff81200000 faulted at
//     0xfffff81200000. Open selects UC_TLB_VIRTUAL (virtual == physical over
//     64 bits, as in 2.0) on every arch.
//   - The virtual TLB grants an entry only the access that missed, so a page
//     that is both loaded and stored (the stack) refilled on every switch,
//     each refill restoring the CPU state: 4x slower. An always-on C
//     UC_HOOK_TLB_FILL hook grants all three; region protections are still
//     checked on each access.
//   - A store takes the slow path (helper_le_stq_mmu: two memory-region
//     look-ups through flatview_translate, ~40 ns) until notdirty_write
//     marks its TLB entry dirty, which it never does for an entry that
//     allows execution or a page any invalid-access hook covers
//     (uc_mem_hook_installed). With the fill hook granting execute on data
//     pages and the fault hook over all of memory, every push was slow (half
//     of a checked batch run's instructions, callgrind). The fill hook grants
//     execute on fetches only, and FastStores takes a writable region (the
//     harness's stack) out of the fault hook.
//
// 2.0 and 2.1:
//
//   - uc_mem_write leaves translations of the code it overwrites in the
//     cache; Write invalidates the written pages.
//   - Code, block and valid-access hooks are compiled into translated blocks,
//     so a hook added after its range ran is silently skipped; adding one
//     invalidates its range (uc_ctl_remove_cache per page, not tb_flush).
//   - The pc seen by invalid-memory hooks is only synced at block starts:
//     SetPreciseFaults makes it exact.
//   - hlt (x86) and wfi (arm64 at EL1, the default) end uc_emu_start without
//     any hook; brk and udf/hlt on arm64 raise EXCP_BKPT (7) / EXCP_UDEF (1).
//
// # Cost model
//
// Measured with bench_test.go on a shared 2-core AMD EPYC (Go 1.26,
// libunicorn 2.0.1); ratios are steadier than absolute figures.
//
//   - A cgo call costs ~21 ns; a Go callback from C (any Go hook) ~45 ns.
//   - A bare run of 4 instructions (uc_emu_start entry, TB lookup, exit)
//     costs 230-330 ns. By sentinel, x86_64 / arm64: SentinelHook ~250 /
//     ~230 ns (cheapest: the stop request is seen at the next block
//     boundary), SentinelHalt ~300 / ~270 ns (the halt exception unwinds
//     with a longjmp), SentinelTrap ~330 / ~295 ns (exception plus the C
//     interrupt hook).
//   - RunRegs (3 registers in, 2 out, one cgo call) costs ~1.2x a bare run;
//     WriteRegs + Run + ReadRegs ~1.4x.
//   - A non-zero until costs ~3.5 µs per run: after each run Unicorn
//     invalidates the block containing until-1, which is retranslated next
//     time. Run uses until=0, which Unicorn never invalidates.
//   - A timeout costs a thread per run (45-80 µs, BenchmarkStartStop's
//     halt+timeout). The watchdog is the binding's (shim.c): it repeats
//     uc_emu_stop until the run returns, since a single stop that arrives
//     before libunicorn 2.1's vcpu loop starts is lost, and it waits on a
//     condition the run's end signals (it slept to its deadline at first: a
//     halting run with a 1 s timeout took 1 s; TestTimeoutRunEndsFirst).
//   - Start's count is Unicorn's: a C helper call per executed instruction
//     (two thirds of a checked batch run on 2.1), and switching between
//     count == 0 and count > 0 flushes the whole translation cache (~12 ms;
//     FlushCode costs the same, and seconds the first time). Run and
//     RunRegs budget by block instead (budget.c): an always-on C block hook
//     adds each block's instruction count (arm64: its size / 4; x86_64 and
//     riscv64: cached by address, size and code generation) and stops the
//     run in the block that goes past the budget; no flush. The hook is a
//     leaf that saves no registers: ~29 host instructions a block on x86_64,
//     ~11 on arm64 (callgrind), against ~46 when the cache miss was inlined.
//   - Loads cost ~2 ns, stores ~62 ns each on both arches in 2.0.x: every
//     store takes the not-dirty slow path and looks for code to invalidate
//     (fixed upstream in 2.1.0, commit d0103576; on 2.1.4 a store costs
//     about 40% of 2.0.1's, and BenchmarkTrampShape runs 2.7-3x faster; in
//     a FastStores region it takes the fast path, like a load). Stores dominate emulated
//     time: an x86 call/ret loop runs at ~70 ns per iteration (the call
//     pushes), the arm64 bl/ret loop at ~5 ns, and an x86 function shaped
//     like a 2-program trampoline (12 of 33 instructions store) at ~770 ns,
//     1.3 M hits/s. Budget batch-mode hits/s by counting stores.
//   - Indirect branches, and direct ones to another page, look the target
//     up in the tb jump cache: 4096 slots indexed by pc bits xor-folded
//     (page bits above 6 low pc bits; arm64 runs with 1 KiB pages, x86_64
//     4 KiB). Two hot blocks in one slot evict each other, and each miss
//     costs a tb_htable_lookup (~300-370 host instructions, callgrind). A
//     page's blocks share one row of 64 slots. The harness places its caller
//     where its slots are its own, and a stub's checks at the stub's own
//     address, or where no slot is shared when they do not fit there
//     (emu/layout.go placeChecks); what remains are the kernel's addresses
//     (the synthetic layout's functions all at 1 MiB boundaries: 5 misses
//     per checked arm64 batch hit).
//   - Unicorn 2.1 calls helper_check_exit_request at the start of every
//     block and after every guest store: 107 calls per checked x86_64 hit of
//     the 2-program 6.12 trampoline, 26 of them block starts (callgrind).
//   - Context save or restore: ~65 ns (x86_64), ~110 ns (arm64). Registers
//     only; memory is not part of a context.
//   - Open + first map + Close: 0.12-0.24 ms, plus translating code on its
//     first run.
//
// An Engine is not safe for concurrent use; hooks run on the goroutine that
// called Run.
package unicorn
