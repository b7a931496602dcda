package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecode feeds console lines to the frame decoder: kernel messages interleave with frames
// on the serial console, so any line must decode, be ignored, or be reported as damaged.
func FuzzDecode(f *testing.F) {
	good, _ := Encode(KindLog, "hello")
	f.Add(string(good))
	f.Add(strings.TrimSpace(string(good)))
	f.Add(Marker + "capture 00000000 e30=")
	f.Add("[    1.234] bpf: something @@trampjit log")
	f.Add(Marker)
	f.Fuzz(func(t *testing.T, line string) {
		fr, ok, err := Decode(line)
		if err != nil || !ok {
			return
		}
		// A frame that decodes re-encodes to a line that decodes to the same frame.
		again, err := Encode(fr.Kind, json.RawMessage(fr.JSON))
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		fr2, ok2, err := Decode(strings.TrimSpace(string(again)))
		var a, b bytes.Buffer
		json.Compact(&a, fr.JSON)
		json.Compact(&b, fr2.JSON)
		if err != nil || !ok2 || fr2.Kind != fr.Kind || a.String() != b.String() {
			t.Fatalf("round trip of %q: %+v %v %v", line, fr2, ok2, err)
		}
	})
}
