// Confinement of the child that runs generated code (confine.c, doc.go).

// nx_mprot is one mprotect call the filter allows: exactly these pages, this protection.
struct nx_mprot { unsigned long long addr, len; int prot; };

int nx_close_fds(void);
const char *nx_limit(unsigned long long cpu_s);
const char *nx_drop_privs(void);
int nx_seccomp(const struct nx_mprot *mp, int nmp);
