//go:build !cgo

package unicorn

import (
	"errors"
	"strings"
	"testing"
)

// TestNotAvailable checks a build without cgo says why it cannot emulate.
func TestNotAvailable(t *testing.T) {
	for _, a := range []Arch{X86_64, ARM64} {
		e, err := Open(a)
		if e != nil || !errors.Is(err, ErrNotAvailable) {
			t.Fatalf("Open(%v) = %v, %v; want ErrNotAvailable", a, e, err)
		}
		if !strings.Contains(err.Error(), "CGO_ENABLED=1") {
			t.Errorf("message %q does not say how to rebuild", err)
		}
	}
	if Version() != "" {
		t.Errorf("Version() = %q without a library", Version())
	}
}
