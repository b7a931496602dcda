package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trampjit/trampjit/kernel"
)

// TestKernelCaptureExtraChecked: a bad extra-cases.jsonl in -o DIR is refused, naming the file
// and line, before anything boots, with or without --merge; an --only pattern is matched
// against the directory's extra cases too.
func TestKernelCaptureExtraChecked(t *testing.T) {
	dir := t.TempDir()
	good := `{"id":"fuzz-a","func":"bpf_lsm_cred_free","progs":[{"kind":"lsm","func_ip":true}]}`
	extra := filepath.Join(dir, kernel.ExtraCasesFile)
	for _, c := range []struct {
		content string
		args    []string
		code    int
		want    string
	}{
		{good + "\n{\"id\":\"fuzz-b\",\"func\":\"f\",\"progs\":[{\"kind\":\"kprobe\"}]}\n", nil, 1, extra + `:2: case fuzz-b: program 1: kind "kprobe"`},
		{good + "\n{\"id\":\"fuzz-b\",\"func\":\"f\",\"progs\":[{\"kind\":\"kprobe\"}]}\n", []string{"--merge"}, 1, extra + ":2: "},
		{good + "\n", []string{"--only", "fuzz-b"}, 2, `--only: "fuzz-b" matches no case (did you mean fuzz-a?)`},
	} {
		if err := os.WriteFile(extra, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		args := append([]string{"kernel", "capture", "--kernel", "6.12", "--arch", "amd64", "-o", dir}, c.args...)
		code, _, errOut := trampjit(args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, errOut, c.code, c.want)
		}
		if d := time.Since(t0); d > 3*time.Second || strings.Contains(errOut, "guests") {
			t.Errorf("%v: refused after %v, output %q: the check must come before the guest", c.args, d, errOut)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("%v: %d files in DIR, want the extra file alone", c.args, len(ents))
		}
	}
}
