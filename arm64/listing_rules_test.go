package arm64

import "testing"

// arm64 instructions are 4 bytes: a shorter tail is reported as truncated, for every
// length below 4, rather than read past its end.
func TestDecodeTruncated(t *testing.T) {
	for n := 0; n < 4; n++ {
		if _, err := (Disassembler{}).Decode(make([]byte, n), 0x1000); err == nil {
			t.Errorf("%d bytes decoded", n)
		}
	}
}
