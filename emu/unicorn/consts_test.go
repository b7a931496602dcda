//go:build cgo

package unicorn

import "testing"

// TestConstsMatchHeader checks the literal constants the !cgo build shares
// against the libunicorn header this build compiled with.
func TestConstsMatchHeader(t *testing.T) {
	cs := headerConsts()
	if len(cs) < 90 {
		t.Fatalf("only %d constants listed", len(cs))
	}
	for _, c := range cs {
		if c.lit != c.uc {
			t.Errorf("%s = %d, the header says %d", c.name, c.lit, c.uc)
		}
	}
}
