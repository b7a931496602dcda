package kernel

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/jit"
)

// TestFuzzDiffUnmodelled: refusals random BTF functions meet that BTF cannot predict, as
// 6.12 x86_64 gave them (captured by kernel fuzz, seed 1): an __init function (EINVAL at
// attach), a FUNC without a kallsyms address (ENOENT at load), and the same ahead of the
// model's fmod_ret refusal. Diff alone calls them disagreements; fuzzDiff does not.
func TestFuzzDiffUnmodelled(t *testing.T) {
	cases := readFuzzCases(t, "6.12-amd64-unmodelled", "6.12-amd64")
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
	cases := readFuzzCases(t, "7.2-arm64-implicit-args", "7.2-arm64")
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
	cases := readFuzzCases(t, "7.2-amd64-lsm-not-hook", "7.2-amd64")
	if d := Diff(&cases[0]); d.Verdict != Match {
		t.Errorf("%s (%s): %s: %s", cases[0].ID, cases[0].Request.Func, d.Verdict, d.Note)
	}
	// 36 programs, fsession among them, on avc_update_node (no kallsyms address): the
	// first load fails with ENOENT before the link limit (E2BIG at attach) is reached.
	if d := fuzzDiff(&cases[1]); d.Verdict != Unmodelled {
		t.Errorf("%s (%s): %s: %s, want unmodelled", cases[1].ID, cases[1].Request.Func, d.Verdict, d.Note)
	}
}

// readFuzzCases reads kernel/testdata/fuzz/<name>.jsonl against profile's corpus BTF.
func readFuzzCases(t *testing.T, name, profile string) []CorpusCase {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "fuzz", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases, err := ParseCorpus(f, name, filepath.Join("..", "testdata", "kernel", profile))
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestFuzzDiffRISCV64Init: kernel fuzz on 6.12 and 7.2 riscv64 found attach refused with
// ENOTSUPP on __init functions (release_early_probes, memmap_alloc; acpi_os_get_root_pointer
// with fsession programs): their text is freed, ftrace dropped their records, and riscv64's
// bpf_arch_text_poke refuses an address outside kernel text with -ENOTSUPP. The model, which
// BTF does not tell about __init, builds the image.
func TestFuzzDiffRISCV64Init(t *testing.T) {
	var cases []CorpusCase
	cases = append(cases, readFuzzCases(t, "6.12-riscv64-unmodelled", "6.12-riscv64")...)
	cases = append(cases, readFuzzCases(t, "7.2-riscv64-unmodelled", "7.2-riscv64")[:1]...)
	if len(cases) != 3 {
		t.Fatalf("%d cases, want 3", len(cases))
	}
	for _, c := range cases {
		if c.Errno != "ENOTSUPP" || c.Stage != "attach" {
			t.Fatalf("%s: %s at %s, want the captured ENOTSUPP at attach", c.ID, c.Errno, c.Stage)
		}
		if d := Diff(&c); d.Verdict != ModelAccept {
			t.Errorf("%s (%s): Diff says %s (%s): the case no longer needs fuzzDiff's rule", c.ID, c.Request.Func, d.Verdict, d.Note)
		}
		if d := fuzzDiff(&c); d.Verdict != Unmodelled || !strings.Contains(d.Note, "__init") {
			t.Errorf("%s (%s): %s %s, want unmodelled (freed __init text)", c.ID, c.Request.Func, d.Verdict, d.Note)
		}
	}
	// arm64's ENOTSUPP is Diff's not-ftrace-managed rule; on x86_64 ENOTSUPP at attach is
	// the arch JIT's and must be modelled.
	c := cases[0]
	req := *c.Request
	req.Arch, c.Request = "amd64", &req
	c.Request.SetDir(filepath.Join("..", "testdata", "kernel", "6.12-amd64"))
	if d := fuzzDiff(&c); d.Verdict == Unmodelled {
		t.Errorf("amd64 ENOTSUPP at attach counted as freed __init text: %s", d.Note)
	}
}

// TestFuzzDiffEarlierAttach: 7.2 riscv64 refused the first attach of 39 programs on
// riscv_get_elf_hwcap (and of 38 on gen_pool_dma_zalloc_algo) with EFAULT: not
// ftrace-managed. The model refuses the set with E2BIG (54 and 47 trampoline nodes), which
// the kernel would say only at the attach that passes BPF_MAX_TRAMP_LINKS: the kernel
// attaches one program at a time and fails the first before the count matters.
func TestFuzzDiffEarlierAttach(t *testing.T) {
	cases := readFuzzCases(t, "7.2-riscv64-unmodelled", "7.2-riscv64")[1:]
	if len(cases) != 2 {
		t.Fatalf("%d cases, want 2", len(cases))
	}
	for _, c := range cases {
		if c.AttachIndex() != 1 || c.Errno != "EFAULT" {
			t.Fatalf("%s: attach %d %s, want the captured EFAULT at attach 1", c.ID, c.AttachIndex(), c.Errno)
		}
		if d := Diff(&c); d.Verdict != Unmodelled || !strings.Contains(d.Note, "E2BIG") {
			t.Errorf("%s (%s, %d programs): %s %s, want unmodelled with the model's later E2BIG", c.ID, c.Request.Func, len(c.Request.Progs), d.Verdict, d.Note)
		}
	}
	for _, tc := range []struct {
		stage, err string
		want       int
	}{
		{"attach", "attach program 12 (fexit) to f: bad address", 12}, // the capture's words
		{"attach", "attach program 3: device or resource busy", 3},    // the cost run's
		{"attach", "attach program 1x (fentry) to f: bad address", 0},
		{"load", "attach program 2 (fentry) to f: bad address", 0},
	} {
		c := CorpusCase{Stage: tc.stage, Error: tc.err}
		if n := c.AttachIndex(); n != tc.want {
			t.Errorf("%s %q: attach %d, want %d", tc.stage, tc.err, n, tc.want)
		}
	}
	// fuzz-1-26's 27th program (fentry, fsession and fexit programs; an fsession takes two
	// nodes) brings the nodes to 39, one over the limit: a refusal there is the model's own
	// attach, and EFAULT instead of E2BIG there is a disagreement; at the 26th it is not.
	at := func(n int, c CorpusCase) *CorpusCase {
		c.Error = fmt.Sprintf("attach program %d (%s) to %s: bad address", n, c.Request.Progs[n-1].Kind, c.Request.Func)
		return &c
	}
	if d := Diff(at(26, cases[0])); d.Verdict != Unmodelled {
		t.Errorf("EFAULT at attach 26 of fuzz-1-26: %s %s, want unmodelled", d.Verdict, d.Note)
	}
	for _, n := range []int{27, 39} {
		if d := Diff(at(n, cases[0])); agrees(d.Verdict) {
			t.Errorf("EFAULT at attach %d, where the model says E2BIG: %s %s, want a disagreement", n, d.Verdict, d.Note)
		}
	}
	// A model refusal at load is not a later attach: the kernel loaded every program first.
	c := cases[0]
	req := *c.Request
	req.Progs = clone(req.Progs)
	req.Progs[len(req.Progs)-1].Sleepable = true
	c.Request = &req
	if d := Diff(&c); agrees(d.Verdict) {
		t.Errorf("a model refusal at load behind a not-ftrace-managed attach: %s %s, want a disagreement", d.Verdict, d.Note)
	}
	// The same on x86_64 (EBUSY): irqentry_exit, captured on 6.12 with one fentry, refused at
	// its first attach; with 39 programs the model's E2BIG comes at the 39th.
	amd := corpusCase(t, "6.12-amd64", "irqentry_exit-fentry")
	if d := Diff(amd); d.Verdict != Unmodelled {
		t.Fatalf("%s: %s %s, want unmodelled", amd.ID, d.Verdict, d.Note)
	}
	req = *amd.Request
	for len(req.Progs) < 39 {
		req.Progs = append(req.Progs, jit.Prog{Kind: jit.Fentry})
	}
	amd.Request = &req
	if d := Diff(amd); d.Verdict != Unmodelled || !strings.Contains(d.Note, "E2BIG") {
		t.Errorf("%s with 39 programs: %s %s, want unmodelled with the model's later E2BIG", amd.ID, d.Verdict, d.Note)
	}
	amd.Error = "attach program 39 (fentry) to irqentry_exit: device or resource busy"
	if d := Diff(amd); agrees(d.Verdict) {
		t.Errorf("EBUSY at the attach the model refuses with E2BIG: %s %s, want a disagreement", d.Verdict, d.Note)
	}
}

// corpusCase is one case of a committed corpus.
func corpusCase(t *testing.T, profile, id string) *CorpusCase {
	t.Helper()
	cases, err := ReadCorpus(filepath.Join("..", "testdata", "kernel", profile))
	if err != nil {
		t.Fatal(err)
	}
	for i := range cases {
		if cases[i].ID == id {
			return &cases[i]
		}
	}
	t.Fatalf("no case %s in the %s corpus", id, profile)
	return nil
}

// TestFuzzDiffLaterProgram: kernel fuzz found 6.12 x86_64 failing the first program's load
// on radix_tree_node_alloc, a FUNC without a kallsyms address (ENOENT), where the model
// refuses the second, an fsession program 6.12 cannot load (fuzz-1-1713, 3 programs, and
// its minimised 2). The agent loads in attach order and stops at the first failure, so a
// refusal of a later program comes second; one of the program that failed does not.
func TestFuzzDiffLaterProgram(t *testing.T) {
	cases := readFuzzCases(t, "6.12-amd64-later-program", "6.12-amd64")
	if len(cases) != 2 {
		t.Fatalf("%d cases, want 2", len(cases))
	}
	for _, c := range cases {
		if c.LoadIndex() != 1 {
			t.Errorf("%s: LoadIndex %d of %q, want 1", c.ID, c.LoadIndex(), c.Error)
		}
		if d := Diff(&c); agrees(d.Verdict) {
			t.Errorf("%s: Diff says %s: the case no longer needs fuzzDiff's rule", c.ID, d.Verdict)
		}
		if d := fuzzDiff(&c); d.Verdict != Unmodelled {
			t.Errorf("%s: %s %s, want unmodelled", c.ID, d.Verdict, d.Note)
		}
	}
	// The fsession program first: the model refuses the program whose load failed, with
	// a check the kernel makes before the address lookup. Still a disagreement.
	c := cases[1]
	req := *c.Request
	req.Progs = []jit.Prog{req.Progs[1], req.Progs[0]}
	c.Request = &req
	if d := fuzzDiff(&c); agrees(d.Verdict) {
		t.Errorf("fsession first: %s %s, want a disagreement", d.Verdict, d.Note)
	}
}
