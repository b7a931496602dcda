package vm

import "syscall"

// setPdeathsig makes the child die with SIGKILL when the forking thread ends.
func setPdeathsig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
