//go:build cgo

// The instruction budget of tj_run. uc_emu_start's own count calls a helper
// before every instruction, which cost two thirds of a checked batch run on
// libunicorn 2.1; this block hook adds each block's instruction count once
// per block instead, and stops the run in the block that goes past the
// budget (so a run that ends by budget did execute more than budget
// instructions, and at most one block more). It runs on every block of every
// run, so its hit path is kept a leaf: on arm64 a block's count is its size
// / 4; elsewhere a cache lookup, with Unicorn asked out of line on a miss.
#include <string.h>
#include "shim.h"

// budget_stop ends the run in the block that went past the budget.
static __attribute__((noinline)) void budget_stop(uc_engine *uc, tj_state *st)
{
	if (st->reason == TJ_STOP_NONE) {
		st->reason = TJ_STOP_BUDGET;
		uc_emu_stop(uc);
	}
}

static inline void budget_add(uc_engine *uc, tj_state *st, uint32_t n)
{
	st->used += n;
	if (st->used > st->budget)
		budget_stop(uc, st);
}

// budget_miss counts a block whose instruction count is not cached: it asks Unicorn's
// translation cache (the block is being executed, so it is there and is not
// retranslated) and fills the slot s. Out of line, so that the hit path is a leaf that
// saves no registers.
static __attribute__((noinline)) void budget_miss(uc_engine *uc, tj_state *st, tj_icount_slot *s,
						  uint64_t pc, uint32_t size)
{
	s[1] = s[0]; // the older entry goes to the second way
	st->icache_misses++;
	uc_tb tb;
	uint32_t n = size; // no smaller than the instruction count
	if (uc_ctl_request_cache(uc, pc, &tb) == UC_ERR_OK && tb.icount > 0)
		n = tb.icount;
	s->pc = pc;
	s->tag = st->code_gen << 32 | size;
	s->icount = n;
	budget_add(uc, st, n);
}

// tj_budget_cb adds the block's instruction count, cached by block address, size and
// code generation (a two-way set by Fibonacci hashing: with xor-folding the caller's
// loop (0x10150) and an arm64 kernel image block (0xffffa00080100040) shared a slot
// and evicted each other on every call).
static void tj_budget_cb(uc_engine *uc, uint64_t addr, uint32_t size, void *user)
{
	tj_state *st = user;
	if (st->budget == 0)
		return;
	uint64_t h = (addr * 0x9e3779b97f4a7c15ull) >> 52 & (TJ_ICOUNT_SLOTS - 2);
	tj_icount_slot *s = &st->icache[h];
	uint64_t tag = st->code_gen << 32 | size;
	if (s->pc == addr && s->tag == tag)
		budget_add(uc, st, s->icount);
	else if (s[1].pc == addr && s[1].tag == tag)
		budget_add(uc, st, s[1].icount);
	else
		budget_miss(uc, st, s, addr, size);
}

// tj_budget_fixed_cb is tj_budget_cb for fixed-width instructions (arm64): the block's
// size says its count.
static void tj_budget_fixed_cb(uc_engine *uc, uint64_t addr, uint32_t size, void *user)
{
	tj_state *st = user;
	(void)addr;
	if (st->budget != 0)
		budget_add(uc, st, size >> st->insn_shift);
}

uc_err tj_budget_hook(uc_engine *uc, tj_state *st)
{
	uc_hook hh;
	return uc_hook_add(uc, &hh, UC_HOOK_BLOCK, st->insn_shift ? (void *)tj_budget_fixed_cb : (void *)tj_budget_cb,
			   st, 1, 0);
}
