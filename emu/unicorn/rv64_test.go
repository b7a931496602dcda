//go:build cgo

package unicorn

import (
	"errors"
	"testing"
)

// TestRISCV64 runs compressed and base instructions, ends on both sentinel kinds, and
// pins what libunicorn's riscv64 cannot run: Zbb (encodings from riscv64-linux-gnu-as
// -march=rv64gc_zbb).
func TestRISCV64(t *testing.T) {
	e, err := Open(RISCV64)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Map(codeBase, 0x1000, ProtRead|ProtExec); err != nil {
		t.Fatal(err)
	}
	code := []byte{
		0x15, 0x45, // c.li a0, 5
		0x05, 0x05, // c.addi a0, 1
		0x93, 0x15, 0x05, 0x02, // slli a1, a0, 32
		0x73, 0x00, 0x50, 0x10, // wfi
		0x73, 0x00, 0x10, 0x00, // ebreak
	}
	if err := e.Write(codeBase, code); err != nil {
		t.Fatal(err)
	}
	if err := e.AddSentinel(codeBase+8, SentinelHalt); err != nil {
		t.Fatal(err)
	}
	x, err := e.Run(codeBase, 100)
	if err != nil || x.Sentinel != codeBase+8 {
		t.Fatalf("run: %+v, %v", x, err)
	}
	a0, _ := e.Reg(RVA0)
	a1, _ := e.Reg(XR(11))
	if a0 != 6 || a1 != 6<<32 {
		t.Errorf("a0 = %d, a1 = %#x, want 6, 6<<32", a0, a1)
	}
	// ebreak ends the run as an invalid instruction, not an interrupt: no trap sentinel.
	if err := e.AddSentinel(codeBase+12, SentinelTrap); err == nil {
		t.Error("a trap sentinel on riscv64")
	}
	if _, err = e.Run(codeBase+12, 100); err == nil {
		t.Error("ebreak did not end the run with an error")
	}
	if err := e.SetReg(RVSP, 0x1230); err != nil {
		t.Fatal(err)
	}
	if sp, _ := e.SP(); sp != 0x1230 {
		t.Errorf("SP() = %#x", sp)
	}
	// sext.b a0, a0 (Zbb): an illegal instruction here.
	if err := e.Write(codeBase+0x100, []byte{0x13, 0x15, 0x45, 0x60, 0x73, 0x00, 0x50, 0x10}); err != nil {
		t.Fatal(err)
	}
	_, err = e.Run(codeBase+0x100, 100)
	var ue *Error
	if !errors.As(err, &ue) {
		t.Fatalf("sext.b ran: %v; if this libunicorn decodes Zbb, emu can run Zbb images", err)
	}
}
