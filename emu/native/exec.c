//go:build linux && amd64

#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <x86intrin.h>

#include "exec.h"

#define NX_MAGIC 0x6e617469766521ULL

// Only the child runs what follows nx_exec's fork: a single thread, no Go runtime, only
// async-signal-safe calls (no malloc, no stdio but snprintf into a buffer).

static struct nx_result *res; // shared with the parent (MAP_SHARED)
uint64_t nx_host_sp;          // the child's stack pointer while generated code runs
uint64_t nx_gpr[16];          // registers at the sentinel, filled by nx_exit
uint64_t nx_sentinel;         // return address of the sentinel's call: sentinel + 13

// nx_enter(phase) saves the callee-saved registers, loads the phase's canaries and stack
// pointer and jumps to its entry; generated code ends at a sentinel, `movabs r11, nx_exit;
// call r11`, and nx_exit stores every register and returns from nx_enter.
void nx_enter(const struct nx_phase *ph);
__asm__(
	".text\n"
	".globl nx_enter\n"
	".type nx_enter,@function\n"
	"nx_enter:\n"
	"  push %rbp\n  push %rbx\n  push %r12\n  push %r13\n  push %r14\n  push %r15\n"
	"  mov %rsp, nx_host_sp(%rip)\n"
	"  mov 0(%rdi), %rbx\n  mov 8(%rdi), %rbp\n  mov 16(%rdi), %r12\n"
	"  mov 24(%rdi), %r13\n  mov 32(%rdi), %r14\n  mov 40(%rdi), %r15\n"
	"  mov 48(%rdi), %rsp\n  mov 56(%rdi), %rax\n"
	"  jmp *%rax\n"
	".globl nx_exit\n"
	".type nx_exit,@function\n"
	"nx_exit:\n"
	"  mov %rax, nx_gpr+0(%rip)\n  mov %rbx, nx_gpr+8(%rip)\n  mov %rcx, nx_gpr+16(%rip)\n"
	"  mov %rdx, nx_gpr+24(%rip)\n  mov %rsi, nx_gpr+32(%rip)\n  mov %rdi, nx_gpr+40(%rip)\n"
	"  mov %rbp, nx_gpr+48(%rip)\n  mov %r8, nx_gpr+64(%rip)\n  mov %r9, nx_gpr+72(%rip)\n"
	"  mov %r10, nx_gpr+80(%rip)\n  mov %r11, nx_gpr+88(%rip)\n  mov %r12, nx_gpr+96(%rip)\n"
	"  mov %r13, nx_gpr+104(%rip)\n  mov %r14, nx_gpr+112(%rip)\n  mov %r15, nx_gpr+120(%rip)\n"
	"  pop %rax\n"
	"  mov %rax, nx_sentinel(%rip)\n"
	"  mov %rsp, nx_gpr+56(%rip)\n"
	"  mov nx_host_sp(%rip), %rsp\n"
	"  pop %r15\n  pop %r14\n  pop %r13\n  pop %r12\n  pop %rbx\n  pop %rbp\n"
	"  ret\n");

void nx_exit(void);

uint64_t nx_exit_addr(void) { return (uint64_t)(uintptr_t)nx_exit; }

static const struct nx_plan *plan;

static void copy_readback(void) {
	uint64_t n = plan->rb_len < NX_READBACK ? plan->rb_len : NX_READBACK;
	if (n)
		memcpy(res->readback, (const void *)(uintptr_t)plan->rb_addr, n);
}

static const int greg[17] = {REG_RAX, REG_RBX, REG_RCX, REG_RDX, REG_RSI, REG_RDI, REG_RBP, REG_RSP,
	REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};

// on_signal ends the child on a fault of the generated code, a timeout or the CPU limit,
// recording where.
static void on_signal(int sig, siginfo_t *si, void *uctx) {
	ucontext_t *uc = uctx;
	res->status = (sig == SIGALRM || sig == SIGXCPU) ? NX_TIMEOUT : NX_SIGNAL;
	res->sig = sig;
	res->code = si->si_code;
	res->sigaddr = (uint64_t)(uintptr_t)si->si_addr;
	for (int i = 0; i < 17; i++)
		res->gpr[i] = (uint64_t)uc->uc_mcontext.gregs[greg[i]];
	res->pc = res->gpr[16];
	copy_readback();
	res->magic = NX_MAGIC;
	_exit(0);
}

static void setup_fail(const char *what, uint64_t addr, int err) {
	res->status = NX_SETUP;
	res->err = err;
	res->setup_addr = addr;
	snprintf(res->msg, sizeof res->msg, "%s", what);
	res->magic = NX_MAGIC;
	_exit(0);
}

static int prot_of(uint64_t addr) {
	for (int i = 0; i < plan->nregions; i++)
		if (addr >= plan->regions[i].addr && addr < plan->regions[i].addr + plan->regions[i].size)
			return plan->regions[i].prot;
	return -1;
}

static void apply(const struct nx_patch *pt) {
	uint64_t pg = pt->addr & ~4095ULL, end = (pt->addr + pt->len + 4095) & ~4095ULL;
	int prot = prot_of(pt->addr);
	if (prot < 0 || mprotect((void *)(uintptr_t)pg, end - pg, PROT_READ | PROT_WRITE))
		setup_fail("patch outside the mapped regions", pt->addr, errno);
	memcpy((void *)(uintptr_t)pt->addr, pt->data, pt->len);
	if (mprotect((void *)(uintptr_t)pg, end - pg, prot))
		setup_fail("mprotect", pg, errno);
}

static void child(void) {
	// Our own handlers, on their own stack: the generated code's rsp may be anything.
	void *alt = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (alt == MAP_FAILED)
		setup_fail("sigaltstack", 0, errno);
	stack_t ss = {.ss_sp = alt, .ss_size = 1 << 16};
	sigaltstack(&ss, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigfillset(&sa.sa_mask);
	const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGALRM, SIGXCPU, SIGSYS};
	sigset_t unblock;
	sigemptyset(&unblock);
	for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		sigaction(sigs[i], &sa, NULL);
		sigaddset(&unblock, sigs[i]);
	}
	sigprocmask(SIG_UNBLOCK, &unblock, NULL);

	for (int i = 0; i < plan->nregions; i++) {
		const struct nx_region *r = &plan->regions[i];
		void *want = (void *)(uintptr_t)r->addr;
		void *got = mmap(want, r->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (got != want)
			setup_fail("mmap at a fixed address", r->addr, got == MAP_FAILED ? errno : EEXIST);
		if (r->len)
			memcpy(want, r->data, r->len);
		if (mprotect(want, r->size, r->prot))
			setup_fail("mprotect", r->addr, errno);
	}
	if (plan->pin) {
		int cpu = sched_getcpu();
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		sched_setaffinity(0, sizeof set, &set);
	}
	// A runaway image ends by SIGALRM; SIGXCPU and the hard limit's SIGKILL are the backstops.
	uint64_t ms = plan->timeout_ms;
	struct itimerval it = {.it_value = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000}};
	setitimer(ITIMER_REAL, &it, NULL);
	struct rlimit rl = {.rlim_cur = ms / 1000 + 2, .rlim_max = ms / 1000 + 3};
	setrlimit(RLIMIT_CPU, &rl);

	for (int rep = 0; rep < plan->reps && rep < NX_MAX_REPS; rep++) {
		for (int ph = 0; ph < plan->nphases; ph++) {
			const struct nx_phase *p = &plan->phases[ph];
			if (plan->nphases > 1 || rep == 0)
				for (int k = 0; k < p->npatches; k++)
					apply(&p->patches[k]);
			res->phase = ph;
			struct timespec t0, t1;
			unsigned aux;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			_mm_lfence();
			uint64_t c0 = __rdtsc();
			_mm_lfence();
			nx_enter(p);
			uint64_t c1 = __rdtscp(&aux);
			_mm_lfence();
			clock_gettime(CLOCK_MONOTONIC, &t1);
			res->cycles[rep][ph] = c1 - c0;
			res->ns[rep][ph] = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ULL + (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
			memcpy(res->gpr, nx_gpr, sizeof nx_gpr);
			res->gpr[16] = nx_sentinel - 13;
			res->sentinel = nx_sentinel - 13;
			res->reps_done = rep + 1;
			if (ph == plan->nphases - 1 && rep == plan->reps - 1)
				copy_readback();
		}
	}
	res->status = NX_SENTINEL;
	res->magic = NX_MAGIC;
	_exit(0);
}

// nx_exec forks a child that maps the plan's regions and runs it; out receives the
// child's result. It returns 0, or -errno when the child could not be started or died
// without a result (the parent's out->msg says how).
int nx_exec(const struct nx_plan *p, struct nx_result *out) {
	struct nx_result *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		return -errno;
	memset(shared, 0, sizeof *shared);
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		munmap(shared, sizeof *shared);
		return -e;
	}
	if (pid == 0) {
		res = shared;
		plan = p;
		child();
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	memcpy(out, shared, sizeof *out);
	munmap(shared, sizeof *shared);
	if (out->magic != NX_MAGIC) {
		if (WIFSIGNALED(st))
			snprintf(out->msg, sizeof out->msg, "child killed by signal %d without a result", WTERMSIG(st));
		else
			snprintf(out->msg, sizeof out->msg, "child exited with status %d without a result", WEXITSTATUS(st));
		return -EPIPE;
	}
	return 0;
}
