package main

import (
	"strings"
	"testing"
)

// kernel fetch, cases and capture take the profiles kernel/vm fetches (7.2 before the model
// knows it); the model's commands still refuse 7.2, and an unknown profile is a usage error.
func TestKernelProfiles(t *testing.T) {
	code, out, errs := trampjit("kernel", "cases", "--kernel", "7.2", "--arch", "arm64")
	if code != 0 || !strings.Contains(out, `"kind":"fsession"`) {
		t.Errorf("kernel cases --kernel 7.2: exit %d, %d bytes, %s", code, len(out), errs)
	}
	code, _, errs = trampjit("kernel", "cases", "--kernel", "7.3")
	if code != 2 || !strings.Contains(errs, "6.1, 6.12, 7.2") {
		t.Errorf("kernel cases --kernel 7.3: exit %d: %s", code, errs)
	}
	code, _, errs = trampjit("gen", "--kernel", "7.2", "--proto", "int f(int a)", "--fentry", "1")
	if code != 2 {
		t.Errorf("gen --kernel 7.2: exit %d, want the usage error of an unmodelled profile: %s", code, errs)
	}
}
