package kernel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// A capture's output directory is replaced whole or not at all: the files are written into
// a staging directory beside it (same filesystem), and the staging directory is swapped in
// with one rename. There is never a state where DIR is half old, half new.

// outFile is one file of an output directory.
type outFile struct {
	name string
	data []byte
}

// stagedHook, when set (tests), runs after each file is written into the staging directory.
var stagedHook func(name string)

// CheckOutDir checks, before anything boots, that dir can receive a capture: it is a
// directory or does not exist yet, and the directory that will hold it is writable (a probe
// file is created there and removed).
func CheckOutDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("output directory %s: exists and is not a directory", dir)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	// The nearest existing ancestor: commit creates what is missing below it.
	p := filepath.Dir(abs)
	for {
		fi, err := os.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("output directory %s: %s is not a directory", dir, p)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("output directory %s: %w", dir, err)
		}
		p = filepath.Dir(p)
	}
	probe, err := os.CreateTemp(p, ".trampjit-probe-")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("output directory %s: cannot write in %s: %w", dir, p, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// commitDir makes dir hold files: written into a staging directory beside dir, which also
// receives hard links to (or copies of) dir's other files when keepOthers, then swapped
// with dir in one rename. A ctx that ends before the swap leaves dir untouched and removes
// the staging directory.
func commitDir(ctx context.Context, dir string, files []outFile, keepOthers bool) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	parent, base := filepath.Dir(abs), filepath.Base(abs)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	stage, err := os.MkdirTemp(parent, base+".capture-tmp-")
	if err != nil {
		return err
	}
	defer func() {
		if stage != "" {
			os.RemoveAll(stage)
		}
	}()
	if err := os.Chmod(stage, 0o755); err != nil {
		return err
	}
	ours := map[string]bool{}
	for _, f := range files {
		ours[f.name] = true
	}
	old, statErr := os.Lstat(abs)
	exists := statErr == nil
	if exists {
		if !old.IsDir() {
			return fmt.Errorf("output directory %s: exists and is not a directory", dir)
		}
		if keepOthers {
			if err := carryOver(abs, stage, ours); err != nil {
				return fmt.Errorf("output directory %s: keeping its other files: %w", dir, err)
			}
		}
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := writeSynced(filepath.Join(stage, f.name), f.data); err != nil {
			return err
		}
		if stagedHook != nil {
			stagedHook(f.name)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !exists {
		if err := os.Rename(stage, abs); err != nil {
			return err
		}
		stage = ""
		return nil
	}
	if err := swapDirs(stage, abs); err != nil {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	return nil // stage now holds the old directory: the deferred RemoveAll removes it
}

// swapDirs exchanges two directories atomically (renameat2 RENAME_EXCHANGE). Where the
// filesystem cannot, the old one is moved aside and the new one renamed in: dir is then
// briefly absent, but never mixed. Either way stage ends up holding the old directory.
func swapDirs(stage, dir string) error {
	err := renameExchange(stage, dir)
	if err == nil || (err != unix.EINVAL && err != unix.ENOSYS) {
		return err
	}
	aside, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".old-")
	if err != nil {
		return err
	}
	if err := os.Rename(dir, aside); err != nil { // onto an empty directory: allowed
		os.Remove(aside)
		return err
	}
	if err := os.Rename(stage, dir); err != nil {
		os.Rename(aside, dir)
		return err
	}
	return os.Rename(aside, stage)
}

// carryOver links every entry of src not in skip into dst, so that replacing a corpus keeps
// what this capture does not write (a vmlinux.btf.xz captured before, a README).
func carryOver(src, dst string, skip map[string]bool) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if skip[e.Name()] {
			continue
		}
		s, d := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		fi, err := os.Lstat(s)
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			if err := os.Mkdir(d, fi.Mode().Perm()); err != nil {
				return err
			}
			if err := carryOver(s, d, nil); err != nil {
				return err
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(s)
			if err != nil {
				return err
			}
			if err := os.Symlink(t, d); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if os.Link(s, d) != nil {
				if err := copyFile(s, d, fi.Mode().Perm()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// writeSynced writes a new file and flushes it, so the swap never exposes an empty file.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
