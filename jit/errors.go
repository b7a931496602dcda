package jit

import "fmt"

// Errno is the kernel error number with which the arch JIT or the trampoline code refuses an
// image. Backends wrap it: errors.Is(err, jit.ENOTSUPP) tells why a request was refused.
type Errno int

// The errnos trampoline generation fails with.
const (
	E2BIG    Errno = 7   // more than BPF_MAX_TRAMP_LINKS, or an image over its page (arm64 6.12)
	EFAULT   Errno = 14  // x86: image larger than the page (arch_prepare_bpf_trampoline)
	EINVAL   Errno = 22  // an instruction the JIT cannot encode
	EFBIG    Errno = 27  // arm64 6.1: image larger than its page
	ENOTSUPP Errno = 524 // more argument registers than the arch JIT saves, or no such target
)

var errnoNames = map[Errno]string{E2BIG: "E2BIG", EFAULT: "EFAULT", EINVAL: "EINVAL", EFBIG: "EFBIG", ENOTSUPP: "ENOTSUPP"}

// Name is the errno's symbolic name.
func (e Errno) Name() string {
	if n, ok := errnoNames[e]; ok {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}

func (e Errno) Error() string { return fmt.Sprintf("the kernel returns -%s (%d)", e.Name(), -int(e)) }

// Reject is a refusal with the kernel's errno and trampjit's explanation.
func Reject(errno Errno, format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), errno)
}
