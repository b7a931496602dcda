package vm

import "testing"

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"6.1.176-1", "6.1.176-1", 0},
		{"6.1.176-1", "6.1.192-1", -1},
		{"6.1.192-3", "6.1.192-1", 1},
		{"6.12.117-1", "6.12.57-1", 1},
		{"1.0~rc1-1", "1.0-1", -1},
		{"1:0.9", "2.0", 1},
		{"1.0a", "1.0+", -1},
		{"2.0", "2.0-0", 0},
	} {
		if got := CompareVersions(c.a, c.b); got != c.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := CompareVersions(c.b, c.a); got != -c.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", c.b, c.a, got, -c.want)
		}
	}
}
