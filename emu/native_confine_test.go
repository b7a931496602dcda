package emu_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/jit"
)

// Payloads: hand-assembled x86-64 (bytes checked against GNU as / objdump), run before
// trampjit's own image, which they then fall into. The image alone passes every check;
// with a payload it must be reported as a violation, and nothing on the host may change.

var (
	saveRegs    = []byte{0x50, 0x51, 0x52, 0x56, 0x57, 0x41, 0x50, 0x41, 0x51, 0x41, 0x52, 0x41, 0x53} // push rax..r11
	restoreRegs = []byte{0x41, 0x5b, 0x41, 0x5a, 0x41, 0x59, 0x41, 0x58, 0x5f, 0x5e, 0x5a, 0x59, 0x58} // pop r11..rax
	sysCall     = []byte{0x0f, 0x05}
)

func movEAX(nr uint32) []byte {
	return []byte{0xb8, byte(nr), byte(nr >> 8), byte(nr >> 16), byte(nr >> 24)}
}

// around wraps body in a save and restore of every register a system call touches, and
// appends data behind a jmp; body may address data with leaData.
func around(body func(dataOff int) []byte, data []byte) []byte {
	probe := body(0)
	off := len(saveRegs) + len(probe) + len(restoreRegs) + 2
	p := append(append([]byte{}, saveRegs...), body(off)...)
	p = append(p, restoreRegs...)
	p = append(p, 0xeb, byte(len(data))) // jmp over the data
	return append(p, data...)
}

// leaData is `lea reg, [rip+d]` at offset at, reaching the data at dataOff (reg 6: rsi,
// 7: rdi).
func leaData(reg byte, at, dataOff int) []byte {
	d := int32(dataOff - (at + 7))
	return []byte{0x48, 0x8d, 0x05 | reg<<3, byte(d), byte(d >> 8), byte(d >> 16), byte(d >> 24)}
}

var (
	// write(1, "pwned\n", 6)
	payloadWrite = around(func(off int) []byte {
		b := append(movEAX(1), 0xbf, 1, 0, 0, 0) // mov edi, 1
		at := len(saveRegs) + len(b)
		b = append(b, leaData(6, at, off)...)
		b = append(b, 0xba, 6, 0, 0, 0) // mov edx, 6
		return append(b, sysCall...)
	}, []byte("pwned\n"))
	// fork(); the new process pauses forever: mov eax, 57; syscall; test rax, rax; jnz
	// parent; again: mov eax, 34; syscall; jmp again
	payloadFork = append(append(append([]byte{}, saveRegs...),
		0xb8, 0x39, 0, 0, 0, 0x0f, 0x05, 0x48, 0x85, 0xc0, 0x75, 0x09,
		0xb8, 0x22, 0, 0, 0, 0x0f, 0x05, 0xeb, 0xf7), restoreRegs...)
	// rt_sigaction(SIGALRM, {SIG_IGN}, NULL, 8), then pause() forever.
	payloadIgnoreAlarm = []byte{
		0x48, 0x83, 0xec, 0x40, // sub rsp, 64
		0x48, 0xc7, 0x04, 0x24, 1, 0, 0, 0, // mov qword [rsp], SIG_IGN
		0x48, 0xc7, 0x44, 0x24, 0x08, 0, 0, 0, 0, // flags
		0x48, 0xc7, 0x44, 0x24, 0x10, 0, 0, 0, 0, // restorer
		0x48, 0xc7, 0x44, 0x24, 0x18, 0, 0, 0, 0, // mask
		0xbf, 14, 0, 0, 0, // mov edi, SIGALRM
		0x48, 0x89, 0xe6, // mov rsi, rsp
		0x31, 0xd2, // xor edx, edx
		0x41, 0xba, 8, 0, 0, 0, // mov r10d, 8
		0xb8, 13, 0, 0, 0, 0x0f, 0x05, // mov eax, 13; syscall
		0xb8, 34, 0, 0, 0, 0x0f, 0x05, 0xeb, 0xf7, // again: pause(); jmp again
	}
	// getpid(), every register restored: the image still does all the oracle checks.
	payloadHidden = append(append(append(append([]byte{}, saveRegs...), movEAX(39)...), sysCall...), restoreRegs...)
)

// payloadCreat is creat(path, 0644).
func payloadCreat(path string) []byte {
	return around(func(off int) []byte {
		b := movEAX(85)
		b = append(b, leaData(7, len(saveRegs)+len(b), off)...)
		b = append(b, 0xbe, 0xa4, 0x01, 0, 0) // mov esi, 0644
		return append(b, sysCall...)
	}, append([]byte(path), 0))
}

// confineReq is a 2-program request at user-space addresses, as a corpus case gives one.
func confineReq() *jit.Request {
	return atNative(req(btfmodel.AMD64, btfmodel.Kernel612, "", "long f(int a, u64 b)",
		jit.Prog{Kind: jit.Fentry, Cookie: 5}, jit.Prog{Kind: jit.Fexit}))
}

// withPayload is trampjit's image for r generated behind payload: the traced function
// calls the payload, which falls through into the image.
func withPayload(t *testing.T, r *jit.Request, payload []byte) []byte {
	t.Helper()
	pad := (len(payload) + 15) &^ 15
	g := *r
	a := *r.Addrs
	a.Image += jit.Addr(pad)
	g.Addrs = &a
	img, _, err := emu.Generate(&g)
	if err != nil {
		t.Fatal(err)
	}
	code := append([]byte{}, payload...)
	for len(code) < pad {
		code = append(code, 0x90)
	}
	return append(code, img.Code...)
}

// leftovers are the other processes running this test binary: children of the native
// engine that outlived their run.
func leftovers(t *testing.T) []int {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == self {
			pids = append(pids, pid)
		}
	}
	return pids
}

// confinedRun runs code natively with a guard: it must return within limit, and leave
// no process behind (any left is killed, then the test fails).
func confinedRun(t *testing.T, r *jit.Request, code []byte, o emu.Options, limit time.Duration) *emu.Report {
	t.Helper()
	needNative(t)
	o.Engine = emu.EngineNative
	o.UntrustedNative = true
	type res struct {
		rep *emu.Report
		err error
	}
	ch := make(chan res, 1)
	go func() {
		rep, err := emu.RunImage(r, code, o)
		ch <- res{rep, err}
	}()
	var got res
	select {
	case got = <-ch:
	case <-time.After(limit):
		for _, p := range leftovers(t) {
			syscall.Kill(p, syscall.SIGKILL)
		}
		<-ch
		t.Fatalf("the native run did not return within %v", limit)
	}
	time.Sleep(20 * time.Millisecond) // a forked process would be running by now
	if left := leftovers(t); len(left) > 0 {
		for _, p := range left {
			syscall.Kill(p, syscall.SIGKILL)
		}
		t.Errorf("processes %v outlived the native run", left)
	}
	if got.err != nil {
		t.Fatalf("harness error instead of a reported violation: %v", got.err)
	}
	return got.rep
}

// wantViolation requires a failed run check naming the system call.
func wantViolation(t *testing.T, rep *emu.Report, says string) {
	t.Helper()
	for _, f := range rep.Failed() {
		if f.Name == emu.CheckRun && strings.Contains(f.Detail, says) {
			if rep.OK {
				t.Errorf("report is ok with a violation")
			}
			return
		}
	}
	t.Errorf("want a failed run check saying %q, got ok=%v:%s", says, rep.OK, failures(rep))
}

// The image without a payload passes natively: what fails below fails for the payload.
func TestConfineBaseline(t *testing.T) {
	r := confineReq()
	rep := confinedRun(t, r, withPayload(t, r, []byte{0x90}), emu.Options{Count: 3}, 10*time.Second)
	if !rep.OK {
		t.Fatalf("the image behind a nop fails:%s", failures(rep))
	}
}

func TestConfineWrite(t *testing.T) {
	r := confineReq()
	code := withPayload(t, r, payloadWrite)
	// The child must not write to our standard output: make fd 1 a pipe for the run.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	saved, err := syscall.Dup(1)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Dup2(int(pw.Fd()), 1)
	rep := confinedRun(t, r, code, emu.Options{}, 10*time.Second)
	syscall.Dup2(saved, 1)
	syscall.Close(saved)
	pw.Close()
	buf := make([]byte, 64)
	if n, _ := pr.Read(buf); n > 0 {
		t.Errorf("standard output got %q during the run", buf[:n])
	}
	wantViolation(t, rep, "made a system call (nr 1, write): refused")
}

func TestConfineCreat(t *testing.T) {
	r := confineReq()
	path := filepath.Join(t.TempDir(), "created")
	rep := confinedRun(t, r, withPayload(t, r, payloadCreat(path)), emu.Options{}, 10*time.Second)
	if _, err := os.Lstat(path); err == nil {
		t.Errorf("the image created %s", path)
	}
	wantViolation(t, rep, "made a system call (nr 85, creat): refused")
}

func TestConfineFork(t *testing.T) {
	r := confineReq()
	rep := confinedRun(t, r, withPayload(t, r, payloadFork), emu.Options{}, 10*time.Second)
	wantViolation(t, rep, "made a system call (nr 57, fork): refused")
}

func TestConfineIgnoreAlarm(t *testing.T) {
	r := confineReq()
	rep := confinedRun(t, r, withPayload(t, r, payloadIgnoreAlarm), emu.Options{}, 10*time.Second)
	wantViolation(t, rep, "made a system call (nr 13, rt_sigaction): refused")
}

func TestConfineHidden(t *testing.T) {
	r := confineReq()
	rep := confinedRun(t, r, withPayload(t, r, payloadHidden), emu.Options{Count: 5}, 10*time.Second)
	wantViolation(t, rep, "made a system call (nr 39, getpid): refused")
	t.Logf("report:%s", failures(rep))
}

// A looping image with a huge count is reported within the per-call budget, not after
// count times it.
func TestConfineLoopHugeCount(t *testing.T) {
	r := confineReq()
	start := time.Now()
	rep := confinedRun(t, r, []byte{0x55, 0xeb, 0xfe}, emu.Options{Count: 1000000}, 30*time.Second)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("reported after %v", d)
	} else {
		t.Logf("a looping image with count 1e6 reported in %v", d.Round(time.Millisecond))
	}
	wantViolation(t, rep, "did not return (timeout, pc image+0x1)")
}
