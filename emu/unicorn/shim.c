//go:build cgo

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include "shim.h"

// Implemented in Go (hook.go).
extern void tjGoCode(uintptr_t h, uint64_t addr, uint32_t size);
extern void tjGoMem(uintptr_t h, int type, uint64_t addr, int size,
		    int64_t value);
extern _Bool tjGoMemInvalid(uintptr_t h, int type, uint64_t addr, int size,
			    int64_t value);
extern void tjGoIntr(uintptr_t h, uint32_t intno);
extern _Bool tjGoInsnInvalid(uintptr_t h);
extern void tjGoInsn(uintptr_t h);

// Always-on interrupt hook. Any installed UC_HOOK_INTR makes Unicorn treat
// every interrupt as handled and resume after it, so unless Go hooks take
// over we stop here ourselves and remember which interrupt it was.
// riscv64 bit manipulation that libunicorn 2.1.4 (QEMU 5.0's riscv) does not decode, as
// the kernel's BPF JIT emits it on a CPU with Zba/Zbb (arch/riscv/net/bpf_jit.h: rvzbb_sextb,
// rvzbb_sexth, rvzbb_zexth, rvzba_zextw, rvzbb_rev8): the illegal-instruction exception
// (cause 2) arrives with the pc already past the instruction; compute its result, write rd
// and let the run go on. Returns whether it was one of them.
static bool tj_rv_bitmanip(uc_engine *uc, tj_state *st)
{
	uint64_t pc;
	uint32_t insn;
	if (uc_reg_read(uc, UC_RISCV_REG_PC, &pc) != UC_ERR_OK || pc < 4 ||
	    uc_mem_read(uc, pc - 4, &insn, 4) != UC_ERR_OK)
		return false;
	int rd = insn >> 7 & 31, rs1 = insn >> 15 & 31, rs2 = insn >> 20 & 31;
	uint64_t a = 0, b = 0, v;
	uc_reg_read(uc, UC_RISCV_REG_X0 + rs1, &a);
	uc_reg_read(uc, UC_RISCV_REG_X0 + rs2, &b);
	switch (insn & 0xfff0707f) {
	case 0x60401013: // sext.b
		v = (uint64_t)(int64_t)(int8_t)a;
		break;
	case 0x60501013: // sext.h
		v = (uint64_t)(int64_t)(int16_t)a;
		break;
	case 0x0800403b: // zext.h (rv64: packw rd, rs1, zero)
		v = a & 0xffff;
		break;
	case 0x6b805013: // rev8
		v = __builtin_bswap64(a);
		break;
	default:
		if ((insn & 0xfe00707f) != 0x0800003b) // add.uw (zext.w with rs2 = zero)
			return false;
		v = (a & 0xffffffff) + b;
	}
	if (rd != 0)
		uc_reg_write(uc, UC_RISCV_REG_X0 + rd, &v);
	st->rv_emulated++;
	return true;
}

static void tj_intr_cb(uc_engine *uc, uint32_t intno, void *user)
{
	tj_state *st = user;
	if (st->rv_bitmanip && intno == 2 && tj_rv_bitmanip(uc, st))
		return;
	if (st->go_intr)
		return;
	if (st->reason == TJ_STOP_NONE) {
		st->reason = TJ_STOP_INTR;
		st->intno = intno;
		uc_reg_read(uc, st->pc_reg, &st->intr_pc);
		if (st->rv_bitmanip && intno == 2)
			st->intr_pc -= 4; // reported past the illegal instruction
	}
	uc_emu_stop(uc);
}

// Always-on invalid-memory hook: records the first fault and declines it, so
// Go hooks installed later still get a chance to handle it.
static bool tj_mem_cb(uc_engine *uc, uc_mem_type type, uint64_t addr, int size,
		      int64_t value, void *user)
{
	tj_state *st = user;
	if (!st->has_fault) {
		st->has_fault = 1;
		st->fault_type = type;
		st->fault_addr = addr;
		st->fault_size = size;
		st->fault_value = value;
		uc_reg_read(uc, st->pc_reg, &st->fault_pc);
	}
	return false;
}

uc_err tj_install(uc_engine *uc, tj_state *st, uc_hook *intr, uc_hook *mem)
{
	uc_err err = uc_hook_add(uc, intr, UC_HOOK_INTR, tj_intr_cb, st, 1, 0);
	if (err != UC_ERR_OK)
		return err;
	err = tj_hook_fault(uc, st, mem, 1, 0);
	if (err != UC_ERR_OK)
		return err;
	return tj_budget_hook(uc, st);
}

uc_err tj_hook_fault(uc_engine *uc, tj_state *st, uc_hook *hh, uint64_t begin,
		     uint64_t end)
{
	return uc_hook_add(uc, hh, UC_HOOK_MEM_INVALID, tj_mem_cb, st, begin, end);
}

// The timeout is ours, not uc_emu_start's. libunicorn 2.0/2.1 starts its timer
// thread before the vcpu runs and calls uc_emu_stop once; a stop that lands
// before the vcpu loop starts is cleared by it, and a run of one chained
// self-looping block then never ends (seen under load with a 2 ms timeout;
// later Unicorn releases fixed the race with per-run frame states). This
// watchdog keeps asking until the run has returned. It waits on a condition the
// run's end signals, so a run that ends first does not wait for its deadline.
typedef struct tj_watchdog {
	uc_engine *uc;
	struct timespec deadline; // CLOCK_MONOTONIC
	pthread_mutex_t mu;
	pthread_cond_t cv; // signalled when done is set
	int done;	   // the run has returned (under mu)
} tj_watchdog;

#define TJ_WATCHDOG_REPEAT_NS 200000 // between repeated stop requests

static void tj_after(struct timespec *t, long ns)
{
	clock_gettime(CLOCK_MONOTONIC, t);
	t->tv_nsec += ns;
	t->tv_sec += t->tv_nsec / 1000000000;
	t->tv_nsec %= 1000000000;
}

static void *tj_watchdog_fn(void *arg)
{
	tj_watchdog *w = arg;
	pthread_mutex_lock(&w->mu);
	while (!w->done && pthread_cond_timedwait(&w->cv, &w->mu, &w->deadline) != ETIMEDOUT)
		;
	while (!w->done) {
		pthread_mutex_unlock(&w->mu);
		uc_emu_stop(w->uc);
		struct timespec t;
		tj_after(&t, TJ_WATCHDOG_REPEAT_NS);
		pthread_mutex_lock(&w->mu);
		if (!w->done)
			pthread_cond_timedwait(&w->cv, &w->mu, &t);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

// tj_watch starts w's thread; 0 when it runs.
static int tj_watch(tj_watchdog *w, pthread_t *th, uint64_t timeout_us)
{
	tj_after(&w->deadline, 0);
	uint64_t ns = (uint64_t)w->deadline.tv_nsec + (timeout_us % 1000000) * 1000;
	w->deadline.tv_sec += (time_t)(timeout_us / 1000000 + ns / 1000000000);
	w->deadline.tv_nsec = (long)(ns % 1000000000);
	w->done = 0;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	int rc = pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (rc != 0)
		return rc;
	if ((rc = pthread_mutex_init(&w->mu, NULL)) != 0) {
		pthread_cond_destroy(&w->cv);
		return rc;
	}
	if ((rc = pthread_create(th, NULL, tj_watchdog_fn, w)) != 0) {
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
	}
	return rc;
}

// tj_unwatch tells w's thread the run has returned and waits for it.
static void tj_unwatch(tj_watchdog *w, pthread_t th)
{
	pthread_mutex_lock(&w->mu);
	w->done = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(th, NULL);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
}

uc_err tj_emu_start(uc_engine *uc, tj_state *st, uint64_t begin, uint64_t until,
		    uint64_t timeout, uint64_t count)
{
	st->reason = TJ_STOP_NONE;
	st->has_fault = 0;
	st->icount = 0;
	tj_watchdog w = {.uc = uc};
	pthread_t th;
	int watching = 0;
	if (timeout > 0) {
		if (tj_watch(&w, &th, timeout) != 0)
			return UC_ERR_RESOURCE;
		watching = 1;
	}
	uc_err err = uc_emu_start(uc, begin, until, 0, (size_t)count);
	if (watching)
		tj_unwatch(&w, th);
	uc_reg_read(uc, st->pc_reg, &st->pc);
	return err;
}

uc_err tj_run(uc_engine *uc, tj_state *st, uint64_t begin, uint64_t until,
	      uint64_t budget, int *in, uint64_t *in_vals, int nin, int *out,
	      uint64_t *out_vals, int nout)
{
	uc_err err = tj_reg_write_batch(uc, in, in_vals, nin);
	if (err != UC_ERR_OK)
		return err;
	st->budget = budget;
	st->used = 0;
	err = tj_emu_start(uc, st, begin, until, 0, 0);
	st->budget = 0;
	uc_err rerr = tj_reg_read_batch(uc, out, out_vals, nout);
	return err != UC_ERR_OK ? err : rerr;
}

// Registers are read through a scratch buffer wide enough for any register
// (zmm is 64 bytes), so a wide register id cannot overrun the caller's
// uint64_t.
uc_err tj_reg_read(uc_engine *uc, int reg, uint64_t *val)
{
	uint64_t buf[8] = {0};
	uc_err err = uc_reg_read(uc, reg, buf);
	*val = buf[0];
	return err;
}

uc_err tj_reg_write(uc_engine *uc, int reg, uint64_t val)
{
	uint64_t buf[8] = {val};
	return uc_reg_write(uc, reg, buf);
}

#define TJ_BATCH 32

uc_err tj_reg_read_batch(uc_engine *uc, int *regs, uint64_t *vals, int n)
{
	uint64_t buf[TJ_BATCH][8];
	void *ptrs[TJ_BATCH];
	for (int off = 0; off < n; off += TJ_BATCH) {
		int m = n - off < TJ_BATCH ? n - off : TJ_BATCH;
		memset(buf, 0, sizeof(uint64_t) * 8 * m);
		for (int i = 0; i < m; i++)
			ptrs[i] = buf[i];
		uc_err err = uc_reg_read_batch(uc, regs + off, ptrs, m);
		if (err != UC_ERR_OK)
			return err;
		for (int i = 0; i < m; i++)
			vals[off + i] = buf[i][0];
	}
	return UC_ERR_OK;
}

uc_err tj_reg_write_batch(uc_engine *uc, int *regs, uint64_t *vals, int n)
{
	uint64_t buf[TJ_BATCH][8];
	void *ptrs[TJ_BATCH];
	for (int off = 0; off < n; off += TJ_BATCH) {
		int m = n - off < TJ_BATCH ? n - off : TJ_BATCH;
		memset(buf, 0, sizeof(uint64_t) * 8 * m);
		for (int i = 0; i < m; i++) {
			buf[i][0] = vals[off + i];
			ptrs[i] = buf[i];
		}
		uc_err err = uc_reg_write_batch(uc, regs + off, ptrs, m);
		if (err != UC_ERR_OK)
			return err;
	}
	return UC_ERR_OK;
}

uc_err tj_context_reg_read(uc_context *ctx, int reg, uint64_t *val)
{
	uint64_t buf[8] = {0};
	uc_err err = uc_context_reg_read(ctx, reg, buf);
	*val = buf[0];
	return err;
}

uc_err tj_context_reg_write(uc_context *ctx, int reg, uint64_t val)
{
	uint64_t buf[8] = {val};
	return uc_context_reg_write(ctx, reg, buf);
}

uc_err tj_set_cpu_model(uc_engine *uc, int model)
{
	return uc_ctl_set_cpu_model(uc, model);
}

// Unicorn 2.1 added a choice of TLB (UC_CTL_TLB_TYPE, control number 12).
// Its default, UC_TLB_CPU, runs x86_64 addresses through the CPU's
// physical address width (52 bits), so a fetch at 0xffffffff81200000 goes
// to 0xfffff81200000 and faults; UC_TLB_VIRTUAL maps virtual == physical
// over all 64 bits, as every 2.0 release did. The number is spelled out so
// that a 2.0 header can still drive a 2.1 library; the caller checks the
// library's version first (2.0 rejects unknown controls anyway).
#define TJ_CTL_TLB_TYPE 12
#define TJ_TLB_VIRTUAL 1
#if UC_API_MAJOR > 2 || (UC_API_MAJOR == 2 && UC_API_MINOR >= 1)
_Static_assert(UC_CTL_TLB_TYPE == TJ_CTL_TLB_TYPE, "UC_CTL_TLB_TYPE moved");
_Static_assert(UC_TLB_VIRTUAL == TJ_TLB_VIRTUAL, "UC_TLB_VIRTUAL moved");
#endif

// Without a UC_HOOK_TLB_FILL hook the virtual TLB grants each entry only the
// access that missed (read, write or fetch), so a page both loaded and
// stored, like the stack, refills on every switch, each time restoring the
// CPU state from the translated block: a 2-program x86 trampoline ran 4x
// slower than with the CPU TLB. This hook grants every access on the
// identity mapping; the regions' own protections are still checked on each
// access (UC_ERR_*_PROT) as before. A data access is granted read and write,
// not execute: Unicorn never marks a TLB entry that allows execution dirty
// (notdirty_write), so a stack filled with all three sent every store down
// the slow path (~40 ns each). A fetch still grants all three.
#define TJ_HOOK_TLB_FILL (1 << 17)
struct tj_tlb_entry {
	uint64_t paddr;
	int perms; // uc_prot
};
#if UC_API_MAJOR > 2 || (UC_API_MAJOR == 2 && UC_API_MINOR >= 1)
_Static_assert(UC_HOOK_TLB_FILL == TJ_HOOK_TLB_FILL, "UC_HOOK_TLB_FILL moved");
_Static_assert(sizeof(uc_tlb_entry) == sizeof(struct tj_tlb_entry) &&
		       offsetof(uc_tlb_entry, perms) == offsetof(struct tj_tlb_entry, perms),
	       "uc_tlb_entry changed");
#endif

static bool tj_tlb_fill_cb(uc_engine *uc, uint64_t vaddr, int type,
			   struct tj_tlb_entry *e, void *user)
{
	e->paddr = vaddr;
	e->perms = type == UC_MEM_FETCH ? UC_PROT_ALL : UC_PROT_READ | UC_PROT_WRITE;
	return true;
}

uc_err tj_set_tlb_virtual(uc_engine *uc)
{
	uc_err err = uc_ctl(uc, UC_CTL_WRITE(TJ_CTL_TLB_TYPE, 1), TJ_TLB_VIRTUAL);
	if (err != UC_ERR_OK)
		return err;
	uc_hook hh;
	return uc_hook_add(uc, &hh, TJ_HOOK_TLB_FILL, tj_tlb_fill_cb, NULL, 1, 0);
}

unsigned int tj_version(void)
{
	return uc_version(NULL, NULL);
}

// Hooks that act at translation time (code, block, valid memory accesses)
// do not reach blocks Unicorn 2.0 has already translated, and uc_mem_write
// leaves translations of overwritten code in place. tb_flush fixes both but
// costs 10 ms (seconds the first time), so we drop the translations of
// [addr, end) page by page instead: Unicorn resolves only the start address.
uc_err tj_tb_remove(uc_engine *uc, uint64_t addr, uint64_t end)
{
	while (addr < end) {
		uint64_t next = (addr | 4095) + 1;
		if (next > end || next == 0)
			next = end;
		uc_err err = uc_ctl(uc, UC_CTL_WRITE(UC_CTL_TB_REMOVE_CACHE, 2),
				    addr, next);
		if (err != UC_ERR_OK)
			return err;
		addr = next;
	}
	return UC_ERR_OK;
}

uc_err tj_tb_flush(uc_engine *uc)
{
	return uc_ctl(uc, UC_CTL_WRITE(UC_CTL_TB_FLUSH, 0));
}

uc_err tj_mem_write(uc_engine *uc, uint64_t addr, const void *p, size_t n)
{
	uc_err err = uc_mem_write(uc, addr, p, n);
	if (err != UC_ERR_OK || n == 0)
		return err;
	return tj_tb_remove(uc, addr, addr + n);
}

static void tj_code_cb(uc_engine *uc, uint64_t addr, uint32_t size, void *user)
{
	tjGoCode((uintptr_t)user, addr, size);
}

static void tj_gomem_cb(uc_engine *uc, uc_mem_type type, uint64_t addr,
			int size, int64_t value, void *user)
{
	tjGoMem((uintptr_t)user, type, addr, size, value);
}

static bool tj_gomem_invalid_cb(uc_engine *uc, uc_mem_type type, uint64_t addr,
				int size, int64_t value, void *user)
{
	return tjGoMemInvalid((uintptr_t)user, type, addr, size, value);
}

static void tj_gointr_cb(uc_engine *uc, uint32_t intno, void *user)
{
	tjGoIntr((uintptr_t)user, intno);
}

static bool tj_goinsn_invalid_cb(uc_engine *uc, void *user)
{
	return tjGoInsnInvalid((uintptr_t)user);
}

static void tj_goinsn_cb(uc_engine *uc, void *user)
{
	tjGoInsn((uintptr_t)user);
}

uc_err tj_hook_code(uc_engine *uc, uc_hook *hh, int type, uintptr_t user,
		    uint64_t begin, uint64_t end)
{
	return uc_hook_add(uc, hh, type, tj_code_cb, (void *)user, begin, end);
}

uc_err tj_hook_mem(uc_engine *uc, uc_hook *hh, int type, uintptr_t user,
		   uint64_t begin, uint64_t end)
{
	return uc_hook_add(uc, hh, type, tj_gomem_cb, (void *)user, begin, end);
}

uc_err tj_hook_mem_invalid(uc_engine *uc, uc_hook *hh, int type, uintptr_t user,
			   uint64_t begin, uint64_t end)
{
	return uc_hook_add(uc, hh, type, tj_gomem_invalid_cb, (void *)user,
			   begin, end);
}

uc_err tj_hook_intr(uc_engine *uc, uc_hook *hh, uintptr_t user)
{
	return uc_hook_add(uc, hh, UC_HOOK_INTR, tj_gointr_cb, (void *)user, 1,
			   0);
}

uc_err tj_hook_insn_invalid(uc_engine *uc, uc_hook *hh, uintptr_t user)
{
	return uc_hook_add(uc, hh, UC_HOOK_INSN_INVALID, tj_goinsn_invalid_cb,
			   (void *)user, 1, 0);
}

uc_err tj_hook_x86_insn(uc_engine *uc, uc_hook *hh, uintptr_t user,
			   int insn)
{
	return uc_hook_add(uc, hh, UC_HOOK_INSN, tj_goinsn_cb, (void *)user, 1,
			   0, insn);
}

static void tj_stop_at_cb(uc_engine *uc, uint64_t addr, uint32_t size,
			  void *user)
{
	tj_state *st = user;
	if (st->reason == TJ_STOP_NONE) {
		st->reason = TJ_STOP_AT;
		st->stop_pc = addr;
	}
	uc_emu_stop(uc);
}

uc_err tj_hook_stop_at(uc_engine *uc, uc_hook *hh, tj_state *st,
		       uint64_t addr)
{
	return uc_hook_add(uc, hh, UC_HOOK_CODE, tj_stop_at_cb, st, addr, addr);
}

static void tj_count_cb(uc_engine *uc, uint64_t addr, uint32_t size,
			void *user)
{
	((tj_state *)user)->icount++;
}

uc_err tj_hook_count(uc_engine *uc, uc_hook *hh, tj_state *st, uint64_t begin,
		     uint64_t end)
{
	return uc_hook_add(uc, hh, UC_HOOK_CODE, tj_count_cb, st, begin, end);
}

static void tj_nop_mem_cb(uc_engine *uc, uc_mem_type type, uint64_t addr,
			  int size, int64_t value, void *user)
{
}

uc_err tj_hook_sync_pc(uc_engine *uc, uc_hook *hh)
{
	return uc_hook_add(uc, hh, UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE,
			   tj_nop_mem_cb, NULL, 1, 0);
}
