package main

import (
	"strings"
	"testing"
)

// kernel fetch, cases and capture take every profile, 7.2 with its fsession cases; an unknown
// profile is a usage error that lists the profiles, on the kernel commands and on gen alike.
func TestKernelProfiles(t *testing.T) {
	code, out, errs := trampjit("kernel", "cases", "--kernel", "7.2", "--arch", "arm64")
	if code != 0 || !strings.Contains(out, `"kind":"fsession"`) {
		t.Errorf("kernel cases --kernel 7.2: exit %d, %d bytes, %s", code, len(out), errs)
	}
	code, _, errs = trampjit("kernel", "cases", "--kernel", "7.3")
	if code != 2 || !strings.Contains(errs, "6.1, 6.12, 7.2") {
		t.Errorf("kernel cases --kernel 7.3: exit %d: %s", code, errs)
	}
	code, _, errs = trampjit("gen", "--kernel", "7.3", "--proto", "int f(int a)", "--fentry", "1")
	if code != 2 || !strings.Contains(errs, "6.1, 6.12 or 7.2") {
		t.Errorf("gen --kernel 7.3: exit %d, want the usage error of an unknown profile: %s", code, errs)
	}
}
