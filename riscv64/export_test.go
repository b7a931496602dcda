package riscv64

import (
	"testing"

	"github.com/trampjit/trampjit/jit"
)

// CheckFrame and FrameStats let the corpus tests (package riscv64_test) run checkFrame.
type FrameStats = frameStats

func CheckFrame(t *testing.T, name string, tr *jit.Tramp, img *jit.Image, st *FrameStats) *jit.Frame {
	t.Helper()
	return checkFrame(t, name, tr, img, st)
}

func (s FrameStats) Counts() (images, slots, accesses int) { return s.images, s.slots, s.accesses }
