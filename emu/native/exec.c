//go:build linux && amd64 && cgo

#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <x86intrin.h>

#include "confine.h"
#include "exec.h"

#define NX_MAGIC 0x6e617469766521ULL
#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1 // si_code of a seccomp trap
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

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

static int progress;           // rep * NX_MAX_PHASES + phase, for the watchdog
static int wd_seen;            // the watchdog has a previous sample
static int wd_progress;        // ... of progress
static uint64_t wd_r15;        // ... and of r15, the caller's loop counter

// on_signal ends the child on a fault of the generated code, a refused system call, a
// timeout or the CPU limit, recording where. SIGALRM is the watchdog: it ends the child
// only when no call has returned since its previous tick (same phase, same loop counter).
static void on_signal(int sig, siginfo_t *si, void *uctx) {
	ucontext_t *uc = uctx;
	if (sig == SIGALRM) {
		if (!res->entered)
			return; // the harness's own setup
		uint64_t r15 = (uint64_t)uc->uc_mcontext.gregs[REG_R15];
		if (!wd_seen || wd_progress != progress || wd_r15 != r15) {
			wd_seen = 1, wd_progress = progress, wd_r15 = r15;
			return;
		}
	}
	res->status = (sig == SIGALRM || sig == SIGXCPU) ? NX_TIMEOUT : NX_SIGNAL;
	res->sig = sig;
	res->code = si->si_code;
	res->sigaddr = (uint64_t)(uintptr_t)si->si_addr;
	for (int i = 0; i < 17; i++)
		res->gpr[i] = (uint64_t)uc->uc_mcontext.gregs[greg[i]];
	res->pc = res->gpr[16];
	if (sig == SIGSYS && si->si_code == SYS_SECCOMP) {
		res->status = NX_SYSCALL;
		res->sysno = si->si_syscall;
		res->sysarch = si->si_arch;
		res->pc = (uint64_t)(uintptr_t)si->si_call_addr - 2; // the syscall instruction
	}
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

enum { MAX_MPROT = 32 };
static struct nx_mprot mprots[MAX_MPROT];

// allowed_mprotects lists every mprotect that apply makes after the filter is on.
static int allowed_mprotects(void) {
	int n = 0;
	for (int ph = 0; ph < plan->nphases; ph++)
		for (int k = 0; k < plan->phases[ph].npatches; k++) {
			const struct nx_patch *pt = &plan->phases[ph].patches[k];
			uint64_t pg = pt->addr & ~4095ULL, end = (pt->addr + pt->len + 4095) & ~4095ULL;
			int prots[2] = {PROT_READ | PROT_WRITE, prot_of(pt->addr)};
			for (int j = 0; j < 2; j++) {
				int dup = 0;
				for (int i = 0; i < n; i++)
					dup |= mprots[i].addr == pg && mprots[i].len == end - pg && mprots[i].prot == prots[j];
				if (dup)
					continue;
				if (n == MAX_MPROT)
					setup_fail("too many patched pages for the seccomp filter", pt->addr, E2BIG);
				mprots[n++] = (struct nx_mprot){pg, end - pg, prots[j]};
			}
		}
	return n;
}

static void child(void) {
	// Its own process group, which the parent kills as a whole; no inherited descriptors.
	setpgid(0, 0);
	nx_close_fds();
	// Our own handlers, on their own stack: the generated code's rsp may be anything.
	void *alt = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (alt == MAP_FAILED)
		setup_fail("sigaltstack", 0, errno);
	stack_t ss = {.ss_sp = alt, .ss_size = 1 << 16};
	sigaltstack(&ss, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
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
	int nmp = allowed_mprotects();
	const char *lim = nx_limit(plan->deadline_ms / 1000 + 1);
	if (lim)
		setup_fail(lim, 0, errno);
	if ((lim = nx_drop_privs()))
		setup_fail(lim, 0, errno);
	// The watchdog ticks every tick_ms (the per-call budget); SIGXCPU and the hard limit's
	// SIGKILL, and the parent's deadline, are the backstops.
	uint64_t ms = plan->tick_ms;
	struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
	struct itimerval it = {.it_interval = tv, .it_value = tv};
	if (setitimer(ITIMER_REAL, &it, NULL))
		setup_fail("setitimer", 0, errno);

	for (int rep = 0; rep < plan->reps && rep < NX_MAX_REPS; rep++) {
		for (int ph = 0; ph < plan->nphases; ph++) {
			const struct nx_phase *p = &plan->phases[ph];
			if (plan->nphases > 1 || rep == 0)
				for (int k = 0; k < p->npatches; k++)
					apply(&p->patches[k]);
			if (!res->entered) {
				// From here on only what the harness needs: nx_seccomp's list.
				int e = nx_seccomp(mprots, nmp);
				if (e)
					setup_fail("seccomp filter", 0, -e);
				res->entered = 1;
			}
			res->phase = ph;
			progress = rep * NX_MAX_PHASES + ph;
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

static uint64_t now_ms(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

// await waits until the child has ended (without reaping it, so that its process group
// still exists) or deadline (CLOCK_MONOTONIC ms) has passed; it returns 1 on the latter.
static int await(pid_t pid, uint64_t deadline) {
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	for (;;) {
		uint64_t now = now_ms();
		if (now >= deadline) {
			if (pfd >= 0)
				close(pfd);
			return 1;
		}
		if (pfd >= 0) {
			struct pollfd pf = {.fd = pfd, .events = POLLIN};
			int left = deadline - now > 1000 ? 1000 : (int)(deadline - now);
			int n = poll(&pf, 1, left);
			if (n > 0) {
				close(pfd);
				return 0;
			}
			if (n < 0 && errno != EINTR) // EINTR: Go's signals
				close(pfd), pfd = -1;
			continue;
		}
		// No pidfd (before Linux 5.3): poll every 200 µs.
		siginfo_t si = {0};
		if (waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
			return 0;
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
}

// nx_exec forks a child that maps the plan's regions and runs it; out receives the
// child's result. It returns 0, or -errno when the child could not be started or died
// without a result before it ran generated code (the parent's out->msg says how). The
// parent never waits past the plan's deadline, and on every path SIGKILLs the child's
// process group before reaping it.
int nx_exec(const struct nx_plan *p, struct nx_result *out) {
	struct nx_result *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		return -errno;
	memset(shared, 0, sizeof *shared);
	uint64_t deadline = now_ms() + p->deadline_ms;
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
	setpgid(pid, pid); // as the child does: whichever runs first, the group exists
	int late = await(pid, deadline);
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	memcpy(out, shared, sizeof *out);
	munmap(shared, sizeof *shared);
	if (late) {
		memset(out->gpr, 0, sizeof out->gpr);
		out->status = NX_TIMEOUT, out->deadline = 1, out->sig = SIGKILL, out->pc = 0;
		snprintf(out->msg, sizeof out->msg, "killed at the deadline (%llu ms)", (unsigned long long)p->deadline_ms);
		return 0;
	}
	if (out->magic == NX_MAGIC)
		return 0;
	if (out->entered) {
		// Generated code ran and the child died without a word: the filter's kill (another
		// ABI's system call), or the image broke the harness's own memory.
		int sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
		out->status = sig == SIGSYS ? NX_SYSCALL : NX_KILLED;
		out->sysno = -1, out->sig = sig, out->pc = 0;
		snprintf(out->msg, sizeof out->msg, "child %s %d without a result", sig ? "killed by signal" : "exited with status",
			sig ? sig : WEXITSTATUS(st));
		return 0;
	}
	if (WIFSIGNALED(st))
		snprintf(out->msg, sizeof out->msg, "child killed by signal %d without a result", WTERMSIG(st));
	else
		snprintf(out->msg, sizeof out->msg, "child exited with status %d without a result", WEXITSTATUS(st));
	return -EPIPE;
}
