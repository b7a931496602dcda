package kernel

import "golang.org/x/sys/unix"

// renameExchange swaps two paths atomically (renameat2 RENAME_EXCHANGE).
func renameExchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
