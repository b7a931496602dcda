package emu_test

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/jit"
)

// A failing check names the call in the image that made the offending call by its return
// address, as an offset into the image. The kernel's 6.12 image stores cookie 0 in the
// run_ctx; claimed with cookie 0x1234 the run_ctx check fails at the program-enter call,
// and the offset it names must end an x86 call rel32 (e8) in those bytes.
func TestFailureNamesImageCallSite(t *testing.T) {
	c, code := kernelCase(t, "6.12-amd64", "bpf_fentry_test2-fexit")
	req := *c.Request
	req.Progs = append([]jit.Prog(nil), req.Progs...)
	if req.Progs[0].Cookie != 0 {
		t.Fatalf("corpus case has cookie %#x, want 0", req.Progs[0].Cookie)
	}
	req.Progs[0].Cookie = 0x1234
	r, err := emu.RunImage(&req, code, emu.Options{Args: []uint64{0x1111, 0x2222}})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK {
		t.Fatal("cookie 0x1234 passes against an image that stores 0")
	}
	re := regexp.MustCompile(`\(call returning to image\+0x([0-9a-f]+)\)`)
	named := 0
	for _, ch := range r.Failed() {
		m := re.FindStringSubmatch(ch.Detail)
		if m == nil {
			continue
		}
		off, _ := strconv.ParseUint(m[1], 16, 32)
		if off < 5 || off > uint64(len(code)) || code[off-5] != 0xe8 {
			t.Errorf("%s: image+%#x does not end a call rel32", ch.Detail, off)
		}
		named++
	}
	if named == 0 {
		t.Errorf("no failure names a call site in the image:%s", failures(r))
	}
}
