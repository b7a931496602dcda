package kernel

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/jit"
)

// TestFuzz61LinkEFBIG: kernel fuzz on 6.1 arm64 (fuzz-1-6) linked 39 fentry/fexit programs
// to the BPF-program target tj_args3; the kernel refused the 38th attach with EFBIG (its
// arch_prepare_bpf_trampoline measures the image first and it no longer fits the page),
// before the 39th could meet the link limit. The model answered E2BIG for the count.
func TestFuzz61LinkEFBIG(t *testing.T) {
	cases := readFuzzCases(t, "6.1-arm64-efbig", "6.1-arm64")
	c := cases[0]
	if len(c.Request.Progs) != 39 || c.Errno != "EFBIG" || !strings.HasPrefix(c.Error, "attach program 38 ") {
		t.Fatalf("%s: %d programs, %s: %s: not the captured case", c.ID, len(c.Request.Progs), c.Errno, c.Error)
	}
	if d := Diff(&c); d.Verdict != Match {
		t.Errorf("%s: %s: %s", c.ID, d.Verdict, d.Note)
	}
	_, _, err := jit.Generate(c.Request)
	if !errors.Is(err, jit.EFBIG) || !strings.HasPrefix(err.Error(), "prog#38 (fentry): ") {
		t.Errorf("model: %v; want the 38th attach refused with EFBIG", err)
	}
	// The first 37 fit the page: the kernel attached them.
	req := *c.Request
	req.Progs = req.Progs[:37]
	if _, _, err := jit.Generate(&req); err != nil {
		t.Errorf("the first 37 programs: %v", err)
	}
}

// TestFuzz61NoFsession: 6.1's BTF has no session kfuncs (bpf_session_is_return came in
// 6.10), so the agent cannot build an fsession program and the loader refuses it before the
// kernel sees it: "kfunc bpf_session_is_return: not found" (fuzz-1-1 and fuzz-1-5 of the 6.1
// x86_64 sample, 13 of its 50). The generator draws no fsession program there.
func TestFuzz61NoFsession(t *testing.T) {
	for _, c := range readFuzzCases(t, "6.1-amd64-fsession", "6.1-amd64") {
		if c.Stage != "load" || !strings.HasSuffix(c.Error, "kfunc bpf_session_is_return: not found") {
			t.Errorf("%s: %s %q: not the loader's refusal", c.ID, c.Stage, c.Error)
		}
		if d := Diff(&c); agrees(d.Verdict) {
			t.Errorf("%s: Diff says %s: the loader's refusal is no longer a disagreement to keep out of the draws", c.ID, d.Verdict)
		}
	}
	p := fuzzPool(t, "6.1", "amd64")
	if p.sessionKfuncs {
		t.Fatal("the 6.1 x86_64 BTF has the session kfuncs")
	}
	cases := p.Generate(1, 2000)
	kinds := map[jit.Kind]int{}
	for _, c := range cases {
		for _, pr := range c.Progs {
			kinds[pr.Kind]++
		}
	}
	if kinds[jit.Fsession] != 0 {
		t.Errorf("%d fsession programs drawn for 6.1", kinds[jit.Fsession])
	}
	if kinds[jit.ModRet] == 0 || kinds[jit.Fentry] == 0 || kinds[jit.Fexit] == 0 || kinds[jit.LSM] == 0 {
		t.Errorf("kinds drawn: %v; want fentry, fexit, fmod_ret and lsm", kinds)
	}
	if reflect.DeepEqual(cases[1].Progs, readFuzzCases(t, "6.1-amd64-fsession", "6.1-amd64")[0].Request.Progs) {
		t.Error("fuzz-1-1 drew the captured fsession programs")
	}
}
