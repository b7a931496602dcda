//go:build linux && amd64 && cgo

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "confine.h"

// Confinement of the child before it runs generated code (see doc.go). Every call here
// is async-signal-safe: the child of a multi-threaded Go process may not malloc.

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#define X32_SYSCALL_BIT 0x40000000u

// nx_close_fds closes every descriptor: the child reports through shared memory only.
int nx_close_fds(void) {
	if (syscall(SYS_close_range, 0u, ~0u, 0u) == 0)
		return 0;
	// Before Linux 5.9: every number up to the limit.
	struct rlimit rl;
	unsigned long n = 1 << 16;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < n)
		n = rl.rlim_cur;
	for (unsigned long fd = 0; fd < n; fd++)
		close((int)fd);
	return 0;
}

// vm_size is the child's address-space size in bytes (/proc/self/statm's first field),
// or 0 when it cannot be read.
static unsigned long long vm_size(void) {
	char buf[64];
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	unsigned long long pages = 0;
	for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
		pages = pages * 10 + (unsigned)(buf[i] - '0');
	return pages * (unsigned long long)sysconf(_SC_PAGESIZE);
}

// nx_limit sets the child's resource limits: no files, processes or core dumps, the
// address space it has now plus a little (its mappings are all made), cpu_s of CPU.
// It returns the failing resource's name, or NULL.
const char *nx_limit(unsigned long long cpu_s) {
	unsigned long long as = vm_size();
	struct { int res; unsigned long long cur, max; const char *name; } lim[] = {
		{RLIMIT_CORE, 0, 0, "RLIMIT_CORE"},
		{RLIMIT_FSIZE, 0, 0, "RLIMIT_FSIZE"},
		{RLIMIT_NPROC, 0, 0, "RLIMIT_NPROC"},
		{RLIMIT_NOFILE, 0, 0, "RLIMIT_NOFILE"},
		{RLIMIT_CPU, cpu_s, cpu_s + 1, "RLIMIT_CPU"},
		{RLIMIT_AS, as + (64ULL << 20), as + (64ULL << 20), "RLIMIT_AS"},
	};
	for (unsigned i = 0; i < sizeof lim / sizeof lim[0]; i++) {
		if (lim[i].res == RLIMIT_AS && as == 0)
			continue;
		struct rlimit rl = {.rlim_cur = lim[i].cur, .rlim_max = lim[i].max};
		if (setrlimit(lim[i].res, &rl))
			return lim[i].name;
	}
	return NULL;
}

// nx_drop_privs drops every capability (root's CAP_SYS_RESOURCE would lift
// RLIMIT_NPROC), makes the child undumpable and sets no_new_privs, which seccomp needs.
// It returns the failing step's name, or NULL.
const char *nx_drop_privs(void) {
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};
	if (syscall(SYS_capset, &h, d))
		return "capset";
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		return "PR_SET_DUMPABLE";
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return "PR_SET_NO_NEW_PRIVS";
	return NULL;
}

enum { MAX_FILTER = 1024 };
static struct sock_filter filt[MAX_FILTER];
static int nf, block, jeqs[16], njeq;

#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#define ARG_HI(i) (ARG_LO(i) + 4)

static void emit(struct sock_filter f) {
	if (nf < MAX_FILTER)
		filt[nf] = f;
	nf++;
}

// A block allows one system call when its arguments have the given values; any
// mismatch jumps to the next block, which reloads the number.
static void block_start(int nr) {
	block = nf, njeq = 0;
	emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
	jeqs[njeq++] = nf;
	emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 0));
}

static void block_arg(int i, unsigned long long v) {
	emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(i)));
	jeqs[njeq++] = nf;
	emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)v, 0, 0));
	emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HI(i)));
	jeqs[njeq++] = nf;
	emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)(v >> 32), 0, 0));
}

static void block_end(void) {
	emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
	for (int k = 0; k < njeq && nf <= MAX_FILTER; k++)
		filt[jeqs[k]].jf = (unsigned char)(nf - jeqs[k] - 1);
	(void)block;
}

// nx_seccomp installs the filter the child runs generated code under: another ABI (i386
// int 0x80, x32) kills the process; exit, exit_group and rt_sigreturn (the watchdog's
// return) are allowed, clock_gettime(CLOCK_MONOTONIC) (the timing, should the vDSO fall
// back to the system call) and mprotect of exactly the given pages to exactly the given
// protections (the patches between phases); anything else traps, SIGSYS, so that the
// child can say which call it was: the kernel never runs it, and a second one inside the
// handler, where SIGSYS is blocked, kills the process. It returns 0 or -errno.
int nx_seccomp(const struct nx_mprot *mp, int nmp) {
	nf = 0;
	emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
	emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
	emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
	emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
	emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 1));
	emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
	const int plain[] = {SYS_exit, SYS_exit_group, SYS_rt_sigreturn};
	for (unsigned i = 0; i < sizeof plain / sizeof plain[0]; i++) {
		block_start(plain[i]);
		block_end();
	}
	block_start(SYS_clock_gettime);
	block_arg(0, CLOCK_MONOTONIC);
	block_end();
	for (int i = 0; i < nmp; i++) {
		block_start(SYS_mprotect);
		block_arg(0, mp[i].addr);
		block_arg(1, mp[i].len);
		block_arg(2, (unsigned long long)mp[i].prot);
		block_end();
	}
	emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP));
	if (nf > MAX_FILTER)
		return -E2BIG;
	struct sock_fprog prog = {.len = (unsigned short)nf, .filter = filt};
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0))
		return -errno;
	return 0;
}
