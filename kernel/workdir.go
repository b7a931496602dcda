package kernel

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// A work directory (agent, initramfs, console logs) is removed by its cleanup on every
// exit trampjit sees, signals included. SIGKILL it cannot see: so each work directory holds
// an flock on its lockName file for as long as its trampjit lives, and the next trampjit
// removes the directories whose lock nobody holds. flock, not a pid, so that a trampjit in
// another pid namespace sharing the temporary directory is never mistaken for dead.
const lockName = ".trampjit-lock"

// makeWorkDir makes a temporary directory named prefix*, first removing abandoned ones.
func makeWorkDir(prefix string) (dir string, cleanup func(), err error) {
	sweepWorkDirs(prefix)
	if dir, err = os.MkdirTemp("", prefix); err != nil {
		return "", nil, err
	}
	// Lock under another name, then rename: a sweeper never sees an unlocked lockName.
	tmp := filepath.Join(dir, lockName+".new")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		if err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err == nil {
			err = os.Rename(tmp, filepath.Join(dir, lockName))
		}
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir); f.Close() }, nil
}

// sweepWorkDirs removes the prefix* directories in the temporary directory whose trampjit
// died without removing them. A directory without a lock file is being made, or is not ours.
func sweepWorkDirs(prefix string) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, d := range dirs {
		f, err := os.Open(filepath.Join(d, lockName))
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			os.RemoveAll(d)
		}
		f.Close()
	}
}
