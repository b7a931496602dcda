// The forked child that runs generated code natively (see doc.go).
#include <stdint.h>

enum { NX_MAX_REPS = 256, NX_MAX_PHASES = 4, NX_READBACK = 4096 };

struct nx_region { uint64_t addr, size; const uint8_t *data; uint64_t len; int prot; };
struct nx_patch { uint64_t addr; const uint8_t *data; uint64_t len; };

struct nx_phase {
	uint64_t regs[6]; // rbx, rbp, r12, r13, r14, r15 at entry
	uint64_t sp, entry;
	struct nx_patch *patches;
	int npatches;
};

struct nx_plan {
	struct nx_region *regions;
	int nregions;
	struct nx_phase phases[NX_MAX_PHASES];
	int nphases, reps;
	uint64_t tick_ms;     // the watchdog's period: the per-call budget
	uint64_t deadline_ms; // the whole child: then the parent kills its process group
	uint64_t rb_addr, rb_len; // memory copied back after the run
	int pin;                  // pin the child to the CPU it starts on
};

// Status of a run.
enum { NX_SENTINEL = 1, NX_SIGNAL = 2, NX_TIMEOUT = 3, NX_SETUP = 4, NX_SYSCALL = 5, NX_KILLED = 6 };

struct nx_result {
	uint64_t magic;
	int status, sig, code, err;
	uint64_t sigaddr, pc, sentinel;
	uint64_t gpr[17]; // rax rbx rcx rdx rsi rdi rbp rsp r8..r15, rip
	uint64_t setup_addr;
	int reps_done, phase;
	int sysno;        // NX_SYSCALL: the refused call (-1: another ABI, killed by the filter)
	uint32_t sysarch; // its AUDIT_ARCH_*
	int entered;      // generated code has run (confined from then on)
	int deadline;     // NX_TIMEOUT: killed by the parent at the deadline
	uint64_t cycles[NX_MAX_REPS][NX_MAX_PHASES], ns[NX_MAX_REPS][NX_MAX_PHASES];
	uint8_t readback[NX_READBACK];
	char msg[128];
};

int nx_exec(const struct nx_plan *p, struct nx_result *out);
uint64_t nx_exit_addr(void);
