package kernel

import (
	"strings"
	"testing"
)

// TestDiffNoBTFTarget: a kernel whose BTF has no FUNC for the target (7.3.4's inlined
// __bpf_sk_lookup) is refused by the loader in its own words; the model, given that BTF,
// refuses it as not found: the same reason. A case the guest died on compares nothing.
func TestDiffNoBTFTarget(t *testing.T) {
	cases, err := ReadCorpus("../testdata/kernel/7.2-amd64")
	if err != nil {
		t.Fatal(err)
	}
	var base *CorpusCase
	for i := range cases {
		if cases[i].ID == "bpf_fentry_test1-fentry-fexit" {
			base = &cases[i]
		}
	}
	if base == nil {
		t.Fatal("no bpf_fentry_test1-fentry-fexit in the 7.2-amd64 corpus")
	}
	refused := func(fn, msg string) *CorpusCase {
		c := *base
		req := *base.Request
		req.Func, req.Addrs = fn, nil
		c.Request, c.Image, c.Stage, c.Error, c.Errno = &req, "", "load", msg, ""
		return &c
	}
	for _, tc := range []struct {
		name string
		c    *CorpusCase
		want string
		note string
	}{
		// The loader's wording (cilium/ebpf, the agent's fsession loader) for a name the
		// kernel's BTF lacks; the model finds no such FUNC in the same BTF.
		{"fentry", refused("tj_no_such_function", "load program 1 (fentry): attach Tracing/TraceFEntry: fentry tj_no_such_function not supported"), Match, "no BTF FUNC for the target"},
		{"fsession", refused("tj_no_such_function", "load program 1 (fsession): fsession target tj_no_such_function: not found"), Match, "no BTF FUNC"},
		// The same words about a function that is in BTF: the model would attach, so it
		// is not this refusal.
		{"in BTF", refused("bpf_fentry_test1", "load program 1 (fentry): attach Tracing/TraceFEntry: fentry bpf_fentry_test1 not supported"), ModelAccept, "kernel:"},
		// Another function's name in the message is not this case's target.
		{"other name", refused("tj_no_such_function", "load program 1 (fentry): attach Tracing/TraceFEntry: fentry bpf_fentry_test1 not supported"), Differ, "not found in BTF"},
	} {
		d := Diff(tc.c)
		if d.Verdict != tc.want || !strings.Contains(d.Note, tc.note) {
			t.Errorf("%s: %s (%s), want %s with %q", tc.name, d.Verdict, d.Note, tc.want, tc.note)
		}
	}

	died := *base
	died.Image, died.Stage, died.Error = "", "guest", "agent crashed: Kernel panic - not syncing: Fatal exception"
	if d := Diff(&died); d.Verdict != NotCaptured || !strings.Contains(d.Note, "Kernel panic") {
		t.Errorf("a case the guest died on: %s (%s), want %s", d.Verdict, d.Note, NotCaptured)
	}
	cmp, err := CompareCorpora([]CorpusCase{died}, []CorpusCase{*base}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Cases[0]; d.Verdict != NotCapturedBy || !strings.Contains(d.Note, "A's guest failed") || cmp.Agrees() {
		t.Errorf("CompareCorpora: %s (%s), agrees %v; want %s by A's guest", d.Verdict, d.Note, cmp.Agrees(), NotCapturedBy)
	}
}
