package kernel

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWorkDirSweep: a work directory whose trampjit died (its lock held by nobody, as after
// SIGKILL) is removed by the next one; a live one's, and directories without a lock, stay.
func TestWorkDirSweep(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := filepath.Join(tmp, "trampjit-guest-dead")
	foreign := filepath.Join(tmp, "trampjit-guest-nolock")
	for _, d := range []string{dead, foreign} {
		if err := os.MkdirAll(filepath.Join(d, "boots"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dead, lockName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	live, cleanLive, err := makeWorkDir("trampjit-guest-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("abandoned work directory kept (%v)", err)
	}
	other, cleanOther, err := makeWorkDir("trampjit-guest-")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{live, foreign, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed by the sweep: %v", d, err)
		}
	}
	cleanLive()
	cleanOther()
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s left after cleanup", d)
		}
	}
}
