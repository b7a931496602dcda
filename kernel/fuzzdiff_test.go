package kernel

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFuzzDiffUnmodelled: refusals random BTF functions meet that BTF cannot predict, as
// 6.12 x86_64 gave them (captured by kernel fuzz, seed 1): an __init function (EINVAL at
// attach), a FUNC without a kallsyms address (ENOENT at load), and the same ahead of the
// model's fmod_ret refusal. Diff alone calls them disagreements; fuzzDiff does not.
func TestFuzzDiffUnmodelled(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "fuzz", "6.12-amd64-unmodelled.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases, err := ParseCorpus(f, "unmodelled", filepath.Join("..", "testdata", "kernel", "6.12-amd64"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 3 {
		t.Fatalf("%d cases, want 3", len(cases))
	}
	for _, c := range cases {
		if d := Diff(&c); agrees(d.Verdict) {
			t.Errorf("%s: Diff says %s: the case no longer needs fuzzDiff's rule", c.ID, d.Verdict)
		}
		if d := fuzzDiff(&c); d.Verdict != Unmodelled {
			t.Errorf("%s (%s %s at %s): %s %s, want unmodelled", c.ID, c.Request.Func, c.Errno, c.Stage, d.Verdict, d.Note)
		}
	}
	// A distill refusal comes before the address lookup: still a disagreement.
	c := cases[2]
	c.Request.Func = "fuzz_no_such_func"
	if d := fuzzDiff(&c); d.Verdict == Unmodelled {
		t.Errorf("a model refusal other than the kernel's later checks became unmodelled: %s", d.Note)
	}
}

// TestFuzzImplicitArgsKfunc: kernel fuzz found 7.2 arm64 building fexit on the kfunc
// scx_bpf_cidperf_cap(s32) with two argument slots (its _impl twin's prototype, with the
// implicit struct bpf_prog_aux *). The captured image must regenerate byte for byte.
func TestFuzzImplicitArgsKfunc(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "fuzz", "7.2-arm64-implicit-args.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases, err := ParseCorpus(f, "implicit-args", filepath.Join("..", "testdata", "kernel", "7.2-arm64"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if d := Diff(&c); d.Verdict != Match {
			t.Errorf("%s (%s): %s at %#x: model %s, kernel %s (%s)", c.ID, c.Request.Func, d.Verdict, d.Offset, d.Model, d.Kernel, d.Note)
		}
	}
}

// TestFuzzLSMNotHook: kernel fuzz found 7.2 x86_64 refusing an lsm program on
// bpf_lsm_find_cgroup_shim, a bpf_lsm.c function and not an LSM hook ("attach_btf_id 65998
// points to wrong type name"), which the model, going by the prefix, accepted.
func TestFuzzLSMNotHook(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "fuzz", "7.2-amd64-lsm-not-hook.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases, err := ParseCorpus(f, "lsm-not-hook", filepath.Join("..", "testdata", "kernel", "7.2-amd64"))
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(&cases[0]); d.Verdict != Match {
		t.Errorf("%s (%s): %s: %s", cases[0].ID, cases[0].Request.Func, d.Verdict, d.Note)
	}
	// 36 programs, fsession among them, on avc_update_node (no kallsyms address): the
	// first load fails with ENOENT before the link limit (E2BIG at attach) is reached.
	if d := fuzzDiff(&cases[1]); d.Verdict != Unmodelled {
		t.Errorf("%s (%s): %s: %s, want unmodelled", cases[1].ID, cases[1].Request.Func, d.Verdict, d.Note)
	}
}
