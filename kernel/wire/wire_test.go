package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	b, err := Encode(KindCapture, CaptureResult{ID: "x", Code: []byte{0x55, 0xc3}, Image: 0xffffffffc0001000})
	if err != nil {
		t.Fatal(err)
	}
	// Kernel noise before the marker on the same line must not matter.
	line := "[    1.234] random: crng init done" + strings.TrimRight(string(b), "\n") + "\r"
	f, ok, err := Decode(strings.TrimRight(line, "\r"))
	if !ok || err != nil {
		t.Fatalf("Decode: ok=%v err=%v", ok, err)
	}
	var r CaptureResult
	if err := json.Unmarshal(f.JSON, &r); err != nil {
		t.Fatal(err)
	}
	if f.Kind != KindCapture || r.ID != "x" || string(r.Code) != "\x55\xc3" || r.Image != 0xffffffffc0001000 {
		t.Errorf("got %s %+v", f.Kind, r)
	}
}

func TestDecodeRejectsDamage(t *testing.T) {
	b, _ := Encode(KindLog, "hello world, a long enough message")
	s := strings.TrimRight(string(b), "\n")
	// A printk spliced into the payload.
	i := len(s) - 10
	for _, bad := range []string{s[:i] + "[ 3.1] x" + s[i:], s[:i] + "A" + s[i+1:], s[:len(s)-4]} {
		if _, ok, err := Decode(bad); !ok || err == nil {
			t.Errorf("damaged frame accepted: ok=%v err=%v", ok, err)
		}
	}
	if _, ok, _ := Decode("[    0.000000] Linux version 6.12"); ok {
		t.Error("a kernel line is not a frame")
	}
}
