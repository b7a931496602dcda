package kernel

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trampjit/trampjit/kernel/vm"
	"github.com/trampjit/trampjit/kernel/wire"
)

func retProgram(t *testing.T, name string) wire.VerifyProgram {
	var b wire.Bytecode
	if err := b.UnmarshalText([]byte("b700000000000000 9500000000000000")); err != nil {
		t.Fatal(err)
	}
	return wire.VerifyProgram{Name: name, Type: "tracing", AttachType: "fentry", AttachTo: "f", License: "GPL", Insns: b}
}

// TestVerifyRetry: the guest dies on program b; b is blamed, and c is verified by a second
// guest (whose request holds c alone, at index 0).
func TestVerifyRetry(t *testing.T) {
	hello := frameLine(t, wire.KindHello, wire.Hello{Release: "fake"})
	script := "if [ ! -e $STATE/booted ]; then\ntouch $STATE/booted\n" + hello +
		frameLine(t, wire.KindVerify, wire.VerifyResult{Index: 0, Name: "a", Accepted: true}) +
		"echo 'BUG: unable to handle page fault'\necho 'Kernel panic - not syncing: Fatal exception'\nexit 0\nfi\n" +
		hello + frameLine(t, wire.KindVerify, wire.VerifyResult{Index: 0, Name: "c", Errno: "EACCES", Stage: "load",
		Error: "R0 !read_ok", Log: []string{"0: (95) exit", "R0 !read_ok"}}) +
		frameLine(t, wire.KindDone, wire.Done{Programs: 1})
	fakeGuest(t, script)
	res, err := Verify(context.Background(), VerifyOptions{Kernel: "6.12", Arch: "amd64", Timeout: 20 * time.Second,
		Programs: []wire.VerifyProgram{retProgram(t, "a"), retProgram(t, "b"), retProgram(t, "c")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || !res[0].Accepted || res[0].Name != "a" {
		t.Fatalf("results %+v", res)
	}
	if b := res[1]; b.Name != "b" || b.Stage != "guest" || !strings.Contains(b.Error, string(vm.ReasonAgentCrashed)) ||
		!strings.Contains(strings.Join(b.Log, "\n"), "BUG: unable to handle page fault") {
		t.Errorf("b must be blamed for the crash: %+v", b)
	}
	if c := res[2]; c.Name != "c" || c.Accepted || c.Errno != "EACCES" || c.Error != "R0 !read_ok" || len(c.Log) != 2 {
		t.Errorf("c: %+v", c)
	}
}

// TestVerifyAgentFatal: an agent that gives up by itself fails every program once, without
// booting again for each.
func TestVerifyAgentFatal(t *testing.T) {
	script := "if [ -e $STATE/booted ]; then echo booted twice; exit 1; fi\ntouch $STATE/booted\n" +
		frameLine(t, wire.KindHello, wire.Hello{Release: "fake"}) + frameLine(t, wire.KindFatal, "parse request: unexpected EOF")
	fakeGuest(t, script)
	res, err := Verify(context.Background(), VerifyOptions{Kernel: "6.12", Arch: "amd64", Timeout: 20 * time.Second,
		Programs: []wire.VerifyProgram{retProgram(t, "a"), retProgram(t, "b")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Stage != "guest" || !strings.Contains(r.Error, "parse request: unexpected EOF") {
			t.Errorf("%+v", r)
		}
	}
}

// TestVerifyRejectsBadRequest: malformed programs are refused before any guest boots.
func TestVerifyRejectsBadRequest(t *testing.T) {
	p := retProgram(t, "a")
	p.AttachType = "kprobe"
	_, err := Verify(context.Background(), VerifyOptions{Kernel: "6.12", Arch: "amd64", Programs: []wire.VerifyProgram{p}})
	if err == nil || !strings.Contains(err.Error(), "want fentry, fexit, fmod_ret or lsm_mac") {
		t.Errorf("got %v", err)
	}
}
