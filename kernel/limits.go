package kernel

import (
	"fmt"
	"io"
	"os"
)

// Input limits. Files are read through a size limit (a cases file of /dev/zero must not eat
// the memory), and the counts inside are bounded by the kernel's own limits where it has them.
const (
	// MaxCasesFileSize bounds a --cases file: the whole catalogue of a kernel is about 26 KB.
	MaxCasesFileSize = 4 << 20
	// MaxCases bounds the cases of one capture: the catalogues have about 200, and a guest
	// spends seconds on each.
	MaxCases = 4096
	// MaxCaseProgs bounds a case's programs. The kernel refuses a trampoline past
	// BPF_MAX_TRAMP_LINKS (38) links with -E2BIG; a case needs one more to see it.
	MaxCaseProgs = 64
	// MaxVerifyFileSize bounds a JSON instruction list for kernel verify: room for a program
	// of MaxProgramInsns instructions at about 40 bytes each.
	MaxVerifyFileSize = 64 << 20
	// MaxVerifyPrograms bounds the programs of one verify run (the verifier corpus has 238).
	MaxVerifyPrograms = 4096
	// MaxProgramInsns is BPF_COMPLEXITY_LIMIT_INSNS: bpf_prog_load refuses a longer program
	// with -E2BIG even for a privileged loader (BPF_MAXINSNS, 4096, is the unprivileged one).
	MaxProgramInsns = 1_000_000
)

// ReadFileLimit reads a whole file, refusing one larger than limit bytes (what describes the
// file in the error, e.g. "cases file"). It reads through the limit rather than trusting
// the file's size, so devices and pipes are bounded too.
func ReadFileLimit(path, what string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s: is a directory, not a %s", path, what)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than the %s limit of a %s", path, sizeString(limit), what)
	}
	return data, nil
}

func sizeString(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
