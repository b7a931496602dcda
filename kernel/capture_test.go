package kernel

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/arch/x86/x86asm"

	"github.com/trampjit/trampjit/jit"
)

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// TestBootCapture boots Debian's 6.12 amd64 kernel, attaches fentry then fexit to
// bpf_fentry_test2, and checks the image against the reference capture (modulo addresses)
// and that the recorded addresses account for every address in the image.
func TestBootCapture(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a qemu guest; skipped with -short")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("qemu-system-x86_64 is not installed; cannot boot the 6.12-amd64 guest")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := Case{ID: "bpf_fentry_test2-fentry-fexit", Func: "bpf_fentry_test2",
		Progs: []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit}}}
	// The same target again, run through BPF_PROG_TEST_RUN with recording programs.
	run := Case{ID: "bpf_fentry_test2-run", Func: "bpf_fentry_test2", Run: true,
		Progs: []jit.Prog{{Kind: jit.Fentry, Cookie: 7}, {Kind: jit.Fexit, FuncIP: true}}}
	t0 := time.Now()
	rep, err := Capture(ctx, CaptureOptions{Kernel: "6.12", Arch: "amd64", Cases: []Case{c, run},
		Timeout: 3 * time.Minute, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s (%s), boot %v, total %v", rep.Kernel.Release, rep.Kernel.Version, rep.Boots[0].BootTime, time.Since(t0))
	if rep.Info == nil || len(rep.Info.Vulnerabilities) == 0 {
		t.Error("no CPU vulnerability state recorded")
	}
	got := rep.Cases[0]
	if got.Error != "" {
		t.Fatalf("capture failed at %s: %s\n%s", got.Stage, got.Error, got.Log)
	}
	img, err := hex.DecodeString(got.Image)
	if err != nil {
		t.Fatal(err)
	}
	if err := SameModuloAddresses("amd64", img, mustHex(t, refFentryFexitTest2["6.12-amd64"])); err != nil {
		t.Errorf("image differs from the reference capture beyond addresses: %v", err)
	}
	a := got.Request.Addrs
	if a == nil || a.Image == 0 || a.Func == 0 || a.IM == 0 || len(a.Progs) != 2 {
		t.Fatalf("incomplete addrs: %+v", a)
	}
	if a.IP != a.Func+4 {
		t.Errorf("patch site %#x, want func+4 (after ENDBR) = %#x", a.IP, a.Func+4)
	}
	checkX86Addresses(t, img, a)
	checkRun(t, rep.Cases[1])
}

// checkRun: bpf_prog_test_run_tracing calls bpf_fentry_test2(2, 3), which returns 5.
func checkRun(t *testing.T, c CorpusCase) {
	if c.Error != "" || c.Run == nil {
		t.Fatalf("run case: %s %s, run %+v", c.Stage, c.Error, c.Run)
	}
	if c.Run.Error != "" || len(c.Run.Progs) != 2 {
		t.Fatalf("run: %+v", c.Run)
	}
	fe, fx := c.Run.Progs[0], c.Run.Progs[1]
	if fe.Calls != 1 || fe.NArgs != 2 || len(fe.Ctx) != 2 || fe.Ctx[0] != 2 || fe.Ctx[1] != 3 {
		t.Errorf("fentry saw %+v, want one call with ctx [2 3]", fe)
	}
	if fx.Ret == nil || *fx.Ret != 5 || len(fx.Ctx) != 2 || fx.Ctx[1] != 3 {
		t.Errorf("fexit saw %+v, want ctx [2 3] and ret 5", fx)
	}
	if fx.IP != uint64(c.Request.Addrs.Func) {
		t.Errorf("bpf_get_func_ip = %#x, want the function's address %#x", fx.IP, uint64(c.Request.Addrs.Func))
	}
}

// checkX86Addresses requires every call target and movabs immediate of img to be one of the
// recorded addresses, so that the case is a complete gen request.
func checkX86Addresses(t *testing.T, img []byte, a *jit.Addrs) {
	known := map[uint64]string{uint64(a.IM): "im", uint64(a.IP) + 5: "func body"}
	for i, p := range a.Progs {
		known[uint64(p.Prog)] = "prog#" + string(rune('1'+i))
		known[uint64(p.BPFFunc)] = "bpf_func#" + string(rune('1'+i))
	}
	for n, v := range a.Helpers {
		known[uint64(v)] = n
	}
	var used []string
	for i := 0; i < len(img); {
		in, err := x86asm.Decode(img[i:], 64)
		if err != nil {
			t.Fatalf("+%#x: %v", i, err)
		}
		var v uint64
		switch {
		case in.Op == x86asm.CALL && in.Len == 5:
			v = uint64(a.Image) + uint64(i+5) + uint64(int64(int32(binary.LittleEndian.Uint32(img[i+1:]))))
		case in.Op == x86asm.MOV && in.Len == 10:
			v = binary.LittleEndian.Uint64(img[i+2:])
		}
		if v != 0 {
			n, ok := known[v]
			if !ok {
				t.Errorf("+%#x %v: %#x is none of the recorded addresses", i, in, v)
			}
			used = append(used, n)
		}
		i += in.Len
	}
	want := "im __bpf_tramp_enter prog#1 __bpf_prog_enter_recur bpf_func#1 prog#1 __bpf_prog_exit_recur func body " +
		"prog#2 __bpf_prog_enter_recur bpf_func#2 prog#2 __bpf_prog_exit_recur im __bpf_tramp_exit"
	if got := strings.Join(used, " "); got != want {
		t.Errorf("address uses:\n got %s\nwant %s", got, want)
	}
}
