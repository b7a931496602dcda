package kernel

import (
	"strings"
	"testing"
)

func TestOnly(t *testing.T) {
	ids := []string{"bpf_fentry_test2-fentry", "bpf_fentry_test2-fexit", "tcp_v4_connect-fentry", "lsm-file_open"}
	for _, c := range []struct {
		spec string
		want []string
		err  string
	}{
		{"", ids, ""},
		{"bpf_fentry_test2-fentry", []string{"bpf_fentry_test2-fentry"}, ""},
		{"bpf_fentry_test2-*", []string{"bpf_fentry_test2-fentry", "bpf_fentry_test2-fexit"}, ""},
		{"*-fentry, lsm-file_open", []string{"bpf_fentry_test2-fentry", "tcp_v4_connect-fentry", "lsm-file_open"}, ""},
		{"bpf_fentry_test2", nil, `"bpf_fentry_test2" matches no case`}, // exact, not a substring
		{"bpf_fentry_test2-fentri", nil, "did you mean bpf_fentry_test2-fentry"},
		{"[", nil, `"[" is not a valid glob`},
	} {
		o, err := ParseOnly(c.spec)
		if err == nil {
			err = o.Unmatched(ids)
		}
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.spec, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.spec, err)
			continue
		}
		var got []string
		for _, id := range ids {
			if o.Match(id) {
				got = append(got, id)
			}
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%q selects %v, want %v", c.spec, got, c.want)
		}
	}
}
