package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/kernel"
)

const corpora = "../../testdata/kernel/"

// TestDiffKernels runs `trampjit diff DIR_A DIR_B` on the committed 6.12 and 7.2 captures:
// they differ (exit 3), and the report names what 7.2 changed in bpf_fentry_test1-fentry-fexit
// (read off the two `trampjit gen` listings: a NOP5 at the start of each program block, the
// ip_after_call NOP5 after the return value store gone, no add $0x8,%rsp in the epilogue).
func TestDiffKernels(t *testing.T) {
	a, b := corpora+"6.12-amd64", corpora+"7.2-amd64"
	code, out, errOut := trampjit("diff", a, b, "--only", "bpf_fentry_test1-fentry-fexit,bpf_fentry_test1-fsession", "--color", "never")
	if code != exitDisagree {
		t.Fatalf("exit %d, want %d: %s%s", code, exitDisagree, out, errOut)
	}
	for _, want := range []string{
		"A: " + a + "  6.12.117+deb13-cloud-amd64, amd64, requests of profile 6.12",
		"B: " + b + "  7.2.13+deb14-cloud-amd64, amd64, requests of profile 7.2",
		"bpf_fentry_test1-fentry-fexit                           differs in fentry 1",
		"first difference: A 28: 31 ff  xor %edi,%edi",
		"                  B 28: 0f 1f 44 00 00  nopl (%rax,%rax)",
		"<fentry 1>",
		"*                                    |   28  nopl (%rax,%rax)",
		"    *   75  nopl (%rax,%rax)             |\n",
		"*   d2  add $0x8,%rsp",
		"... 9 identical (prologue, nr_args, arg spill, tramp_enter)",
		"bpf_fentry_test1-fsession                               only in B",
		"2 cases: differs 1, only in B 1",
		"sections changed (cases): epilogue 1, fentry N 1, fexit N 1, ip_after_call 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = trampjit("diff", a, b, "--format", "json")
	if code != exitDisagree {
		t.Fatalf("json: exit %d", code)
	}
	var cmp kernel.Comparison
	if err := json.Unmarshal([]byte(out), &cmp); err != nil {
		t.Fatal(err)
	}
	if cmp.A.Dir != a || cmp.B.Dir != b || len(cmp.Cases) != 423 || cmp.Summary.Verdicts[kernel.OnlyInB] == 0 || cmp.Summary.Sections["fentry N"] == 0 {
		t.Errorf("json: a %+v, b %+v, %d cases, summary %+v", cmp.A, cmp.B, len(cmp.Cases), cmp.Summary)
	}
}

func TestDiffKernelsAgree(t *testing.T) {
	dir := corpora + "6.12-arm64"
	code, out, errOut := trampjit("diff", dir, dir, "--color", "never")
	if code != 0 || !strings.Contains(out, "241 cases: identical 191, refused by both 50\n") || strings.Contains(out, "sections changed") {
		t.Errorf("a corpus against itself: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = trampjit("diff", dir, dir, "--all", "--only", "bpf_fentry_test1-fentry", "--color", "never")
	if code != 0 || !strings.Contains(out, "bpf_fentry_test1-fentry                                 identical") {
		t.Errorf("--all: exit %d\n%s", code, out)
	}
}

func TestDiffBadInput(t *testing.T) {
	partial := filepath.Join(t.TempDir(), "x.partial")
	if err := os.Mkdir(partial, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(partial, kernel.PartialNote), []byte("missing: a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"diff"}, exitUsage, "give --corpus DIR, or two corpus directories"},
		{[]string{"diff", corpora + "6.12-amd64"}, exitUsage, "give --corpus DIR, or two corpus directories"},
		{[]string{"diff", "--corpus", corpora + "6.12-amd64", corpora + "7.2-amd64"}, exitUsage, "not both"},
		{[]string{"diff", corpora + "6.12-amd64", corpora + "6.12-arm64"}, exitFailed, "A is an amd64 corpus and B an arm64 one"},
		{[]string{"diff", corpora + "6.12-amd64", partial}, exitFailed, "is an interrupted capture"},
		{[]string{"diff", corpora + "6.12-amd64", corpora}, exitFailed, "cases.jsonl"},
		{[]string{"diff", corpora + "6.12-amd64", corpora + "7.2-amd64", "--only", "nosuchcase"}, exitUsage, `--only: "nosuchcase" matches no case`},
		{[]string{"diff", "--corpus", corpora + "6.12-amd64", "--only", "nosuchcase"}, exitUsage, `--only: "nosuchcase" matches no case`},
		{[]string{"diff", "--corpus", corpora + "6.12-amd64", "--profile", "6.13"}, exitUsage, `--profile: unknown kernel profile "6.13"`},
	} {
		code, out, errOut := trampjit(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%s: exit %d, want %d with %q:\n%s%s", strings.Join(tc.args, " "), code, tc.code, tc.want, out, errOut)
		}
	}
}

// TestDiffProfile: the 6.12 capture against the 7.2 model shows what 7.2 changed (the same
// first difference as kernel against kernel), and the output says which model it used.
func TestDiffProfile(t *testing.T) {
	dir := corpora + "6.12-amd64"
	code, out, _ := trampjit("diff", "--corpus", dir, "--color", "never", "--only", "bpf_fentry_test1-*")
	if code != 0 || !strings.HasPrefix(out, "model: 6.12 (as the corpus's requests say)\n") {
		t.Errorf("own profile: exit %d\n%s", code, out)
	}
	code, out, _ = trampjit("diff", "--corpus", dir, "--profile", "7.2", "--color", "never", "--only", "bpf_fentry_test1-fentry-fexit")
	if code != exitDisagree || !strings.HasPrefix(out, "model: 7.2 (--profile)\n") ||
		!strings.Contains(out, "differ at 0x28\n    model:  28: 0f1f440000  nopl (%rax,%rax)\n    kernel: 28: 31ff  xor %edi,%edi") {
		t.Errorf("--profile 7.2: exit %d\n%s", code, out)
	}
	code, out, _ = trampjit("diff", "--corpus", dir, "--profile", "7.2", "--format", "json")
	var res diffJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if code != exitDisagree || res.Profile != "7.2" || res.Same != 0 || res.Images != 210 {
		t.Errorf("--profile 7.2 json: exit %d, profile %q, %d/%d identical", code, res.Profile, res.Same, res.Images)
	}
	code, out, _ = trampjit("diff", "--corpus", dir, "--format", "json", "--only", "bpf_fentry_test1-*")
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if code != 0 || res.Profile != "6.12" || len(res.Cases) != 6 {
		t.Errorf("json: exit %d, profile %q, %d cases", code, res.Profile, len(res.Cases))
	}
}

// TestDiffKernelsProfile labels both kernels' images with the 6.12 model: 7.2's NOP5 before
// the first program block has no counterpart there and reads as added to tramp_enter, the one
// before the fexit block aligns with 6.12's ip_after_call NOP5 (see the gen listings).
func TestDiffKernelsProfile(t *testing.T) {
	a, b := corpora+"6.12-amd64", corpora+"7.2-amd64"
	code, out, _ := trampjit("diff", a, b, "--profile", "6.12", "--only", "bpf_fentry_test1-fentry-fexit", "--color", "never")
	if code != exitDisagree || !strings.Contains(out, "sections: the 6.12 model's (--profile)\n") ||
		!strings.Contains(out, "sections changed (cases): epilogue 1, tramp_enter 1\n") {
		t.Errorf("exit %d\n%s", code, out)
	}
	code, out, _ = trampjit("diff", a, b, "--profile", "6.12", "--only", "bpf_fentry_test1-fentry-fexit", "--format", "json")
	var cmp kernel.Comparison
	if err := json.Unmarshal([]byte(out), &cmp); err != nil {
		t.Fatal(err)
	}
	if code != exitDisagree || cmp.A.Model != "6.12" || cmp.B.Model != "6.12" || cmp.Cases[0].B.Profile != "6.12" {
		t.Errorf("json: exit %d, models %q %q, case %+v", code, cmp.A.Model, cmp.B.Model, cmp.Cases[0].B)
	}
	code, out, _ = trampjit("diff", a, b, "--only", "bpf_fentry_test1-fentry-fexit", "--color", "always")
	if code != exitDisagree || !strings.Contains(out, "\x1b[31mdiffers\x1b[0m") || !strings.Contains(out, "\x1b[36m<fentry 1>\x1b[0m") {
		t.Errorf("--color always: exit %d\n%q", code, out)
	}
}
