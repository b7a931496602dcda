package native

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const base = 0x7e0000000000

func run1(t *testing.T, code []byte) *Result {
	t.Helper()
	return runPlan(t, code, 100*time.Millisecond, 2*time.Second)
}

func runPlan(t *testing.T, code []byte, tick, deadline time.Duration) *Result {
	t.Helper()
	if !Supported {
		t.Skip("not an x86_64 Linux host")
	}
	p := &Plan{Regions: []Region{{Addr: base, Size: 4096, Data: code, Prot: ProtRX}, {Addr: base + 0x10000, Size: 4096, Prot: ProtRW}},
		Phases: []Phase{{Regs: [6]uint64{1, 2, 3, 4, 5, 6}, SP: base + 0x10800, Entry: base}}, Tick: tick, Deadline: deadline,
		Readback: [2]uint64{base + 0x10800, 16}}
	r, err := Exec(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A plain run reaches its sentinel with the registers it set and the canaries it got.
func TestSentinel(t *testing.T) {
	code := append([]byte{0x48, 0xc7, 0xc0, 42, 0, 0, 0, // mov rax, 42
		0x48, 0xc7, 0x44, 0x24, 0x08, 7, 0, 0, 0}, // mov qword [rsp+8], 7
		Sentinel()...)
	r := run1(t, code)
	if r.Status != StatusSentinel || r.Sentinel != base+16 || r.Regs[RAX] != 42 || r.Regs[RBX] != 1 || r.Regs[R15] != 6 || r.Regs[RSP] != base+0x10800 {
		t.Fatalf("%+v", r)
	}
	if r.Readback[8] != 7 || r.Reps != 1 || len(r.Cycles) != 1 {
		t.Fatalf("readback %v reps %d", r.Readback, r.Reps)
	}
}

// Faults, privileged instructions and endless loops end the child, never the test.
func TestContained(t *testing.T) {
	r := run1(t, []byte{0x48, 0x89, 0x04, 0x25, 0x10, 0, 0, 0}) // mov [0x10], rax
	if r.Status != StatusSignal || r.Signal != syscall.SIGSEGV || r.Addr != 0x10 || r.PC != base {
		t.Errorf("store to 0x10: %+v", r)
	}
	r = run1(t, []byte{0x90, 0xf4}) // nop; hlt
	if r.Status != StatusSignal || r.Signal != syscall.SIGSEGV || r.PC != base+1 {
		t.Errorf("hlt: %+v", r)
	}
	r = run1(t, []byte{0x0f, 0x0b}) // ud2
	if r.Status != StatusSignal || r.Signal != syscall.SIGILL {
		t.Errorf("ud2: %+v", r)
	}
	r = run1(t, []byte{0xeb, 0xfe}) // jmp .
	if r.Status != StatusTimeout || r.PC != base {
		t.Errorf("loop: %+v", r)
	}
}

// System calls from generated code are refused and named; another ABI's (int 0x80, x32)
// kill the child outright, and that too is a result, not an error.
func TestSyscallRefused(t *testing.T) {
	for _, c := range []struct {
		code []byte
		nr   int
	}{
		{[]byte{0xb8, 39, 0, 0, 0, 0x0f, 0x05}, 39},            // mov eax, 39 (getpid); syscall
		{[]byte{0x90, 0xb8, 57, 0, 0, 0, 0x0f, 0x05}, 57},      // fork
		{[]byte{0xb8, 20, 0, 0, 0, 0xcd, 0x80}, -1},            // i386 getpid: int 0x80
		{[]byte{0xb8, 0x27, 0, 0, 0x40, 0x0f, 0x05}, -1},       // x32 getpid
		{[]byte{0xb8, 60, 0, 0, 0, 0x31, 0xff, 0x0f, 0x05}, 0}, // exit(0): allowed, but no result
	} {
		r := run1(t, c.code)
		switch {
		case c.nr == 0 && r.Status != StatusKilled:
			t.Errorf("% x: exit without a result: %+v", c.code, r)
		case c.nr != 0 && (r.Status != StatusSyscall || r.Syscall != c.nr):
			t.Errorf("% x: want syscall %d refused, got %+v", c.code, c.nr, r)
		case c.nr > 0 && r.PC != base+uint64(len(c.code))-2:
			t.Errorf("% x: pc %#x, want the syscall instruction", c.code, r.PC)
		}
	}
	if SyscallName(39) != "getpid" || SyscallName(1) != "write" || SyscallName(-1) != "unknown" {
		t.Errorf("names: %s %s %s", SyscallName(39), SyscallName(1), SyscallName(-1))
	}
}

// The watchdog: a loop that never returns ends after a tick or two, and a child that
// blocks SIGALRM's effect (here: loops with the counter changing, which the watchdog
// takes for progress) is killed by the parent at the deadline.
func TestWatchdogAndDeadline(t *testing.T) {
	start := time.Now()
	r := runPlan(t, []byte{0xeb, 0xfe}, 50*time.Millisecond, 5*time.Second)
	if r.Status != StatusTimeout || r.Deadline || time.Since(start) > time.Second {
		t.Errorf("loop: %+v after %v", r, time.Since(start))
	}
	start = time.Now()
	r = runPlan(t, []byte{0x49, 0xff, 0xc7, 0xeb, 0xfb}, 50*time.Millisecond, 400*time.Millisecond) // inc r15; jmp
	if d := time.Since(start); r.Status != StatusTimeout || !r.Deadline || d < 400*time.Millisecond || d > 2*time.Second {
		t.Errorf("counting loop: %+v after %v", r, d)
	}
}

// Plans without a tick or deadline are refused.
func TestPlanNeedsBounds(t *testing.T) {
	if !Supported {
		t.Skip("not an x86_64 Linux host")
	}
	_, err := Exec(&Plan{Phases: []Phase{{Entry: base}}})
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("no tick nor deadline: %v", err)
	}
}

// While generated code runs, the child has no descriptors, no_new_privs, a seccomp
// filter, no capabilities, its own process group and the limits (read from /proc).
func TestChildConfined(t *testing.T) {
	if !Supported {
		t.Skip("not an x86_64 Linux host")
	}
	done := make(chan *Result, 1)
	go func() {
		r, err := Exec(&Plan{Regions: []Region{{Addr: base, Size: 4096, Data: []byte{0x49, 0xff, 0xc7, 0xeb, 0xfb}, Prot: ProtRX},
			{Addr: base + 0x10000, Size: 4096, Prot: ProtRW}}, Phases: []Phase{{SP: base + 0x10800, Entry: base}},
			Tick: 50 * time.Millisecond, Deadline: 1500 * time.Millisecond})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	var pid int
	for i := 0; i < 100 && pid == 0; i++ {
		time.Sleep(20 * time.Millisecond)
		pid = childOf(t, os.Getpid())
	}
	if pid == 0 {
		t.Fatal("no child found")
	}
	time.Sleep(200 * time.Millisecond) // in generated code by now
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil || len(fds) != 0 {
		t.Errorf("child's descriptors: %d (%v)", len(fds), err)
	}
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, want := range []string{"NoNewPrivs:\t1", "Seccomp:\t2", "CapEff:\t0000000000000000", "CapPrm:\t0000000000000000"} {
		if !strings.Contains(string(status), want) {
			t.Errorf("child's status lacks %q", want)
		}
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("child's process group %d (%v), want its own", pgid, err)
	}
	limits, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	for _, l := range []string{"Max core file size", "Max file size", "Max processes", "Max open files"} {
		if !regexp.MustCompile(l + ` +0 +0 `).Match(limits) {
			t.Errorf("child's limits: %q is not 0:\n%s", l, limits)
		}
	}
	if !regexp.MustCompile(`Max address space +[0-9]+ `).Match(limits) || !regexp.MustCompile(`Max cpu time +2 +3 `).Match(limits) {
		t.Errorf("child's address-space or CPU limit:\n%s", limits)
	}
	if r := <-done; r == nil || r.Status != StatusTimeout || !r.Deadline {
		t.Errorf("%+v", r)
	}
}

// childOf is a child process of ppid running this test binary.
func childOf(t *testing.T, ppid int) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(ppid) {
			return pid
		}
	}
	return 0
}
