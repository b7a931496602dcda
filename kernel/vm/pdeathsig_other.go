//go:build !linux

package vm

import "syscall"

// setPdeathsig does nothing where the kernel has no parent-death signal; the
// process group still lets cancellation kill the child.
func setPdeathsig(*syscall.SysProcAttr) {}
