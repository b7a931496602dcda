package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestKernelCostRefuses: bad requests are refused before any guest boots.
func TestKernelCostRefuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--progs", "0"}, `--progs: "0" is not a program count 1..64`},
		{[]string{"--mech", "uprobe", "--progs", "1"}, `unknown mechanism "uprobe"`},
		{[]string{"--arch", "riscv64"}, `cost is measured on amd64 and arm64, not "riscv64"`},
		{[]string{"--batches", "-1"}, "--batches and --batch: want at least 1"},
		{[]string{"--format", "html"}, "html"},
	} {
		var o, e bytes.Buffer
		code := run(append([]string{"kernel", "cost"}, c.args...), &o, &e)
		if code == 0 || !strings.Contains(e.String(), c.want) {
			t.Errorf("kernel cost %v: exit %d, stderr %q; want an error saying %q", c.args, code, e.String(), c.want)
		}
	}
}
