package native

import (
	"syscall"
	"testing"
	"time"
)

const base = 0x7e0000000000

func run1(t *testing.T, code []byte) *Result {
	t.Helper()
	if !Supported {
		t.Skip("not an x86_64 Linux host")
	}
	p := &Plan{Regions: []Region{{Addr: base, Size: 4096, Data: code, Prot: ProtRX}, {Addr: base + 0x10000, Size: 4096, Prot: ProtRW}},
		Phases: []Phase{{Regs: [6]uint64{1, 2, 3, 4, 5, 6}, SP: base + 0x10800, Entry: base}}, Timeout: 300 * time.Millisecond,
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
