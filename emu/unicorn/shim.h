// C side of the trampjit Unicorn binding: non-variadic wrappers for
// uc_hook_add and uc_ctl (cgo cannot call variadic functions) and the
// always-on hooks that record why a run stopped without entering Go.
#ifndef TJ_SHIM_H
#define TJ_SHIM_H

#include <stdint.h>
#include <unicorn/unicorn.h>

// Reasons recorded by the C hooks; 0 means none of them fired.
enum {
	TJ_STOP_NONE = 0,
	TJ_STOP_INTR = 1, // an interrupt/exception that no Go hook claimed
	TJ_STOP_AT = 2,   // a tj_hook_stop_at hook fired
	TJ_STOP_BUDGET = 3, // the instruction budget of tj_run ran out
};

// Instruction counts of translated blocks, by block address (budget.c).
#define TJ_ICOUNT_SLOTS 4096
typedef struct tj_icount_slot {
	uint64_t pc;
	uint64_t tag;    // tj_state.code_gen when filled << 32 | the block's size in bytes
	uint64_t icount; // (64 bits: the slot stays 24 bytes and aligned)
} tj_icount_slot;

// Per-engine state written by the C hooks during a run. Allocated in C so
// hooks may keep a pointer to it.
typedef struct tj_state {
	int reason;       // TJ_STOP_*
	uint32_t intno;   // interrupt number for TJ_STOP_INTR
	uint64_t intr_pc; // pc when the interrupt was taken
	int go_intr;      // Go interrupt hooks decide; the C hook only records

	int has_fault;    // an invalid memory access was seen
	int fault_type;   // uc_mem_type
	uint64_t fault_addr;
	int fault_size;
	int64_t fault_value;
	uint64_t fault_pc;

	uint64_t icount;  // instructions counted by tj_hook_count hooks
	uint64_t stop_pc; // address of the tj_hook_stop_at hook that fired

	uint64_t pc;      // pc after the run (filled by tj_emu_start)
	int pc_reg;       // the arch's pc register id
	int rv_bitmanip;  // riscv64: run the Zba/Zbb instructions libunicorn lacks (tj_rv_bitmanip)
	uint64_t rv_emulated; // instructions tj_rv_bitmanip ran

	uint64_t budget;   // instructions tj_run may execute, 0: no limit
	uint64_t used;     // instructions of the blocks entered so far
	uint64_t code_gen; // bumped whenever code may have changed
	uint64_t icache_misses; // block counts looked up in Unicorn (budget.c)
	uint32_t insn_shift; // non-zero: every instruction is 1 << insn_shift bytes
	tj_icount_slot icache[TJ_ICOUNT_SLOTS];
} tj_state;

uc_err tj_install(uc_engine *uc, tj_state *st, uc_hook *intr, uc_hook *mem);
// tj_hook_fault adds the C hook recording invalid accesses to [begin, end].
uc_err tj_hook_fault(uc_engine *uc, tj_state *st, uc_hook *hh, uint64_t begin,
		     uint64_t end);
uc_err tj_emu_start(uc_engine *uc, tj_state *st, uint64_t begin, uint64_t until,
		    uint64_t timeout, uint64_t count);

// tj_run is one per-call round trip in a single cgo call: write the inputs,
// run, read the outputs (read even after a failed run, for diagnostics).
uc_err tj_run(uc_engine *uc, tj_state *st, uint64_t begin, uint64_t until,
	      uint64_t budget, int *in, uint64_t *in_vals, int nin, int *out,
	      uint64_t *out_vals, int nout);

// tj_budget_hook is the always-on block hook that enforces tj_run's budget.
uc_err tj_budget_hook(uc_engine *uc, tj_state *st);

uc_err tj_reg_read(uc_engine *uc, int reg, uint64_t *val);
uc_err tj_reg_write(uc_engine *uc, int reg, uint64_t val);
uc_err tj_reg_read_batch(uc_engine *uc, int *regs, uint64_t *vals, int n);
uc_err tj_reg_write_batch(uc_engine *uc, int *regs, uint64_t *vals, int n);
uc_err tj_context_reg_read(uc_context *ctx, int reg, uint64_t *val);
uc_err tj_context_reg_write(uc_context *ctx, int reg, uint64_t val);

uc_err tj_set_cpu_model(uc_engine *uc, int model);
uc_err tj_set_tlb_virtual(uc_engine *uc);
// tj_version is uc_version's packed major<<24 | minor<<16 | patch<<8 | extra.
unsigned int tj_version(void);
uc_err tj_tb_flush(uc_engine *uc);
uc_err tj_tb_remove(uc_engine *uc, uint64_t addr, uint64_t end);
uc_err tj_mem_write(uc_engine *uc, uint64_t addr, const void *p, size_t n);

// Go-backed hooks; user is a runtime/cgo.Handle.
uc_err tj_hook_code(uc_engine *uc, uc_hook *hh, int type, uintptr_t user,
		    uint64_t begin, uint64_t end);
uc_err tj_hook_mem(uc_engine *uc, uc_hook *hh, int type, uintptr_t user,
		   uint64_t begin, uint64_t end);
uc_err tj_hook_mem_invalid(uc_engine *uc, uc_hook *hh, int type, uintptr_t user,
			   uint64_t begin, uint64_t end);
uc_err tj_hook_intr(uc_engine *uc, uc_hook *hh, uintptr_t user);
uc_err tj_hook_insn_invalid(uc_engine *uc, uc_hook *hh, uintptr_t user);
uc_err tj_hook_x86_insn(uc_engine *uc, uc_hook *hh, uintptr_t user,
			   int insn);

// C-only code hook that stops emulation; used to measure hook costs and as a
// stop-at-address mechanism that does not invalidate translations.
uc_err tj_hook_stop_at(uc_engine *uc, uc_hook *hh, tj_state *st,
		       uint64_t addr);
// C-only no-op hook on every data access: its mere presence makes Unicorn
// sync the pc before each load and store, so fault pcs become exact.
uc_err tj_hook_sync_pc(uc_engine *uc, uc_hook *hh);
// C-only code hook that counts executed instructions in [begin, end] into
// st->icount.
uc_err tj_hook_count(uc_engine *uc, uc_hook *hh, tj_state *st, uint64_t begin,
		     uint64_t end);

#endif
