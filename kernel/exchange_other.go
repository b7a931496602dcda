//go:build !linux

package kernel

import "golang.org/x/sys/unix"

// renameExchange has no portable equivalent: ENOSYS makes swapDirs move the
// old directory aside instead.
func renameExchange(a, b string) error { return unix.ENOSYS }
