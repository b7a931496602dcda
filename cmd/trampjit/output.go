package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// outFile is where -o writes: a temporary file beside the target, renamed over it by commit,
// so that the target is either the complete new output or what it was before. abort (also
// called by a failed commit, and on SIGINT/SIGTERM) removes the temporary file.
//
// The target's kind is respected: a regular file is replaced (keeping its mode), a new file
// gets 0644 less the umask, a symbolic link is followed (the file it points to is replaced,
// the link stays), and a directory, FIFO, socket or device is refused.
type outFile struct {
	*os.File
	target string
	mode   fs.FileMode
	done   bool
}

func createOutput(path string) (*outFile, error) {
	target, mode, err := outputTarget(path)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(target), ".trampjit-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("-o %s: %w", path, err)
	}
	o := &outFile{File: f, target: target, mode: mode}
	pending.add(o)
	return o, nil
}

// outputTarget resolves -o PATH to the regular file that will be replaced, and its mode.
func outputTarget(path string) (string, fs.FileMode, error) {
	target := path
	fi, err := os.Lstat(path)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if target, err = filepath.EvalSymlinks(path); err != nil {
			return "", 0, fmt.Errorf("-o %s: a symbolic link to a missing file (%v); give the file's own path", path, err)
		}
		fi, err = os.Stat(target)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		old := unix.Umask(0)
		unix.Umask(old)
		return target, 0o644 &^ fs.FileMode(old), nil
	case err != nil:
		return "", 0, fmt.Errorf("-o %s: %w", path, err)
	case fi.Mode().IsRegular():
		return target, fi.Mode().Perm(), nil
	}
	kind := "not a regular file"
	switch m := fi.Mode(); {
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a FIFO"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeDevice != 0:
		kind = "a device"
	}
	return "", 0, fmt.Errorf("-o %s: is %s; trampjit writes only regular files (use standard output to write elsewhere)", path, kind)
}

func (o *outFile) commit() error {
	if o.done {
		return nil
	}
	err := o.Sync()
	if cerr := o.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(o.Name(), o.mode)
	}
	if err == nil {
		err = os.Rename(o.Name(), o.target)
	}
	if err != nil {
		o.abort()
		return fmt.Errorf("-o %s: %w", o.target, err)
	}
	o.done = true
	pending.remove(o)
	return nil
}

func (o *outFile) abort() {
	if o.done {
		return
	}
	o.done = true
	o.Close()
	os.Remove(o.Name())
	pending.remove(o)
}

// pending are the temporary files not yet committed; an interrupt removes them before exiting.
var pending = &pendingFiles{files: map[*outFile]bool{}}

type pendingFiles struct {
	mu    sync.Mutex
	files map[*outFile]bool
	once  sync.Once
}

func (p *pendingFiles) add(o *outFile) {
	p.once.Do(func() {
		c := make(chan os.Signal, 1)
		signal.Notify(c, os.Interrupt, syscall.SIGTERM)
		go func() {
			s := <-c
			p.mu.Lock()
			for o := range p.files {
				o.Close()
				os.Remove(o.Name())
			}
			p.mu.Unlock()
			fmt.Fprintf(os.Stderr, "trampjit: %v: stopped, nothing written\n", s)
			os.Exit(exitInterrupted)
		}()
	})
	p.mu.Lock()
	p.files[o] = true
	p.mu.Unlock()
}

func (p *pendingFiles) remove(o *outFile) {
	p.mu.Lock()
	delete(p.files, o)
	p.mu.Unlock()
}

// stdoutChecker remembers the first failed write to standard output, so that a command whose
// output was lost (a full disk, a closed descriptor) exits non-zero.
type stdoutChecker struct {
	w   io.Writer
	err error
}

func (c *stdoutChecker) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// Fd lets colour detection see the terminal behind the checker.
func (c *stdoutChecker) Fd() uintptr {
	if f, ok := c.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}

// readLimited reads a whole input file of at most limit bytes; a larger one (or an endless
// one such as /dev/zero) is refused with the limit named, before it is held in memory.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d MiB, the most trampjit reads from such a file", path, limit>>20)
	}
	return data, nil
}
