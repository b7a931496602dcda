//go:build cgo

// The instruction budget of tj_run. uc_emu_start's own count calls a helper
// before every instruction, which cost two thirds of a checked batch run on
// libunicorn 2.1; this block hook adds each block's instruction count once
// per block instead, and stops the run in the block that goes past the
// budget (so a run that ends by budget did execute more than budget
// instructions, and at most one block more).
#include <string.h>
#include "shim.h"

// icount returns the instruction count of the block at pc, from the cache or
// from Unicorn's translation cache (the block is being executed, so it is
// there and is not retranslated).
static int hit(const tj_icount_slot *s, const tj_state *st, uint64_t pc, uint32_t size)
{
	return s->pc == pc && s->size == size && s->gen == st->code_gen && s->icount;
}

static uint32_t icount(uc_engine *uc, tj_state *st, uint64_t pc, uint32_t size)
{
	// Two-way set by Fibonacci hashing: with xor-folding the caller's loop
	// (0x10150) and an arm64 kernel image block (0xffffa00080100040) shared a
	// slot and evicted each other on every call.
	uint64_t h = (pc * 0x9e3779b97f4a7c15ull) >> 52 & (TJ_ICOUNT_SLOTS - 2);
	tj_icount_slot *s = &st->icache[h];
	if (hit(s, st, pc, size))
		return s->icount;
	if (hit(s + 1, st, pc, size))
		return s[1].icount;
	s[1] = s[0]; // the older entry goes to the second way
	st->icache_misses++;
	uc_tb tb;
	uint32_t n = size; // no smaller than the instruction count
	if (uc_ctl_request_cache(uc, pc, &tb) == UC_ERR_OK && tb.icount > 0)
		n = tb.icount;
	s->pc = pc;
	s->size = size;
	s->icount = n;
	s->gen = st->code_gen;
	return n;
}

static void tj_budget_cb(uc_engine *uc, uint64_t addr, uint32_t size, void *user)
{
	tj_state *st = user;
	if (st->budget == 0)
		return;
	st->used += icount(uc, st, addr, size);
	if (st->used > st->budget && st->reason == TJ_STOP_NONE) {
		st->reason = TJ_STOP_BUDGET;
		uc_emu_stop(uc);
	}
}

uc_err tj_budget_hook(uc_engine *uc, tj_state *st)
{
	uc_hook hh;
	return uc_hook_add(uc, &hh, UC_HOOK_BLOCK, tj_budget_cb, st, 1, 0);
}
