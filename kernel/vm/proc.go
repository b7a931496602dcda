package vm

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// StartTied starts cmd so that it cannot outlive trampjit: in its own process group (a
// terminal's Ctrl-C reaches trampjit only, and cancelling cmd's context kills the whole
// group), with SIGKILL as its parent-death signal (it dies even when trampjit is SIGKILLed).
//
// The kernel sends the parent-death signal when the *thread* that forked exits, and Go ends
// a thread when a goroutine locked to it returns. So the fork happens on a goroutine locked
// to its thread that stays parked, holding the thread, until release is called after
// cmd.Wait: the thread lives at least as long as the child.
func StartTied(cmd *exec.Cmd) (release func(), err error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setPdeathsig(cmd.SysProcAttr)
	cmd.Cancel = func() error { return killGroup(cmd) }
	started := make(chan error)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			<-done
		}
		// Unlock rather than return locked: the thread goes back to the pool, not away.
		runtime.UnlockOSThread()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }, nil
}

// killGroup SIGKILLs cmd's process group (its pgid is its pid, from Setpgid).
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
		return cmd.Process.Kill()
	}
	return nil
}
