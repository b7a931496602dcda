package verifier_test

import "testing"

// TestRealWorldLoaderSize: the sizes the harness gives maps the tools' loaders size at run
// time, and nothing else.
func TestRealWorldLoaderSize(t *testing.T) {
	for _, c := range []struct {
		typ            string
		value, entries uint32
		wantV, wantE   uint32
		changed        bool
	}{
		{"stack_trace", 0, 0, loaderStackValue, loaderMaxEntries, true},
		{"stacktrace", 0, 16, loaderStackValue, 16, true},
		{"array", 64, 0, 64, loaderMaxEntries, true},
		{"ringbuf", 0, 0, 0, loaderRingbuf, true},
		{"perf_event_array", 4, 0, 4, 0, false}, // libbpf sizes it (nr_cpus)
		{"hash", 8, 10240, 8, 10240, false},
		{"array", 0, 1, 0, 1, false}, // only stack traces get a value size
	} {
		v, e, what := loaderSize("m", c.typ, c.value, c.entries)
		if v != c.wantV || e != c.wantE || (what != "") != c.changed {
			t.Errorf("loaderSize(%s, %d, %d) = %d, %d, %q; want %d, %d, changed=%v", c.typ, c.value, c.entries, v, e, what, c.wantV, c.wantE, c.changed)
		}
	}
}

func TestRealWorldCounts(t *testing.T) {
	rej := rwAnswer{First: "func 'f' doesn't have 2-th argument", Error: "invalid bpf_context access off=8 size=8"}
	cases := []*rwCase{
		{Package: "p", Kernel: rwAnswer{Accepted: true}, Model: rwAnswer{Accepted: true}},
		{Package: "p", Kernel: rej, Model: rwAnswer{First: "func 'f' doesn't have 3-th argument", Error: "invalid bpf_context access off=16 size=8"}},
		{Package: "p", Kernel: rej, Model: rwAnswer{Error: "model: not modelled"}, Diff: "x"},
		{Package: "q", Kernel: rwAnswer{Stage: "map", Error: "BPF_MAP_CREATE"}},
	}
	var r rwReport
	r.count(cases)
	if r.Compared != 3 || r.Rejected != 2 || r.Verdicts != 3 || r.Messages != 1 || r.NotModel != 1 || len(r.NotJudged) != 1 || len(r.Disagree) != 1 {
		t.Errorf("count: %+v", r)
	}
	if r.VerdictPct != 100 || r.MessagePct != 50 {
		t.Errorf("percentages %.1f %.1f, want 100 and 50", r.VerdictPct, r.MessagePct)
	}
	if got := answerText(rej); got != "func 'f' doesn't have #-th argument … invalid bpf_context access off=# size=#" {
		t.Errorf("answerText = %q", got)
	}
}
