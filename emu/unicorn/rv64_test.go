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
	// sh1add a7, a0, a1 (Zba, which the JIT does not emit): an illegal instruction here,
	// reported as cause 2 with the pc past it.
	if err := e.Write(codeBase+0x100, a64(0x20b528b3, 0x10500073)); err != nil {
		t.Fatal(err)
	}
	_, err = e.Run(codeBase+0x100, 100)
	var ue *Error
	if !errors.As(err, &ue) || ue.Intr == nil || ue.Intr.No != 2 {
		t.Fatalf("sh1add: %v; if this libunicorn decodes Zba/Zbb, the bit-manipulation stand-in can go", err)
	}
}

// TestRISCV64Bitmanip runs the Zba/Zbb instructions the kernel's JIT emits, which
// libunicorn lacks and the engine computes itself (encodings from riscv64-linux-gnu-as
// -march=rv64gc_zba_zbb; values by the ISA's definitions).
func TestRISCV64Bitmanip(t *testing.T) {
	e, err := Open(RISCV64)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Map(codeBase, 0x1000, ProtRead|ProtExec); err != nil {
		t.Fatal(err)
	}
	code := a64(
		0x60451593, // sext.b a1, a0
		0x60551613, // sext.h a2, a0
		0x080546bb, // zext.h a3, a0
		0x0805073b, // zext.w a4, a0 (add.uw a4, a0, zero)
		0x6b855793, // rev8 a5, a0
		0x08b5083b, // add.uw a6, a0, a1
		0x10500073, // wfi
	)
	if err := e.Write(codeBase, code); err != nil {
		t.Fatal(err)
	}
	if err := e.AddSentinel(codeBase+24, SentinelHalt); err != nil {
		t.Fatal(err)
	}
	const a0 = 0x8123456789ab80f0
	if err := e.SetReg(RVA0, a0); err != nil {
		t.Fatal(err)
	}
	if x, err := e.Run(codeBase, 100); err != nil || x.Sentinel != codeBase+24 {
		t.Fatalf("run: %+v, %v", x, err)
	}
	want := map[int]uint64{11: 0xfffffffffffffff0, 12: 0xffffffffffff80f0, 13: 0x80f0, 14: 0x89ab80f0,
		15: 0xf080ab8967452381, 16: 0x89ab80e0} // add.uw: zext32(a0) + a1, wrapping
	for n := 11; n <= 16; n++ {
		if v, _ := e.Reg(XR(n)); v != want[n] {
			t.Errorf("x%d = %#x, want %#x", n, v, want[n])
		}
	}
	if n := uint64(e.st.rv_emulated); n != 6 {
		t.Errorf("%d instructions emulated, want 6", n)
	}
}
