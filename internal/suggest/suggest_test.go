package suggest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClosest(t *testing.T) {
	names := []string{"tcp_v4_connect", "tcp_v6_connect", "tcp_connect", "udp_sendmsg", "x", "y"}
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"tcp_v4_conect", []string{"tcp_v4_connect", "tcp_v6_connect"}},  // one deletion; two edits
		{"tcp_v4_cnonect", []string{"tcp_v4_connect", "tcp_v6_connect"}}, // a transposition is one edit
		{"udp_sendmgs", []string{"udp_sendmsg"}},
		{"z", []string{"x", "y"}},
		{"completely_different", nil},
		{"tcp_v4_connect", []string{"tcp_v6_connect"}}, // the name itself is not suggested
	} {
		if got := Closest(c.in, names, 3); !cmp.Equal(got, c.want) {
			t.Errorf("Closest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got, want := Hint("fentr", []string{"fentry", "fexit"}, "--"), " (did you mean --fentry?)"; got != want {
		t.Errorf("Hint = %q, want %q", got, want)
	}
	if got := Hint("qqqqqq", []string{"fentry"}, "--"); got != "" {
		t.Errorf("Hint of a far name = %q, want none", got)
	}
}
