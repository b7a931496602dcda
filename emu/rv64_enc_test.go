package emu

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gnuAs assembles src for riscv64 (4-byte forms only: the harness's code is not
// compressed) and returns the .text bytes; it skips the test without binutils.
func gnuAs(t *testing.T, src string) []byte {
	t.Helper()
	as, err := exec.LookPath("riscv64-linux-gnu-as")
	if err != nil {
		t.Skip("riscv64-linux-gnu-as not installed (binutils-riscv64-linux-gnu)")
	}
	dir := t.TempDir()
	s, o, b := filepath.Join(dir, "a.s"), filepath.Join(dir, "a.o"), filepath.Join(dir, "a.bin")
	if err := os.WriteFile(s, []byte(".option norvc\n"+src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(as, "-march=rv64gc", "-mno-relax", "-o", o, s).CombinedOutput(); err != nil {
		t.Fatalf("as: %v\n%s", err, out)
	}
	if out, err := exec.Command("riscv64-linux-gnu-objcopy", "-O", "binary", "-j", ".text", o, b).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, out)
	}
	bin, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestRV64Encodings checks every instruction form the riscv64 target writes against
// GNU as.
func TestRV64Encodings(t *testing.T) {
	cases := []struct {
		asm string
		w   uint32
	}{
		{"ret", rvRet}, {"nop", rvNop}, {"wfi", rvWfi},
		{"addi a0, t3, 0", rvMv(rvA0, rvT3)},
		{"addi s9, s9, 256", rvAddi(rvS9, rvS9, entrySize)},
		{"addi s11, s11, -1", rvAddi(rvS11, rvS11, -1)},
		{"addi t5, t5, -250", rvAddi(rvT5, rvT5, -250)},
		{"addiw a0, a5, 0", rvAddiw(rvA0, rvA5, 0)},
		{"addiw t1, t1, -2048", rvAddiw(rvT1, rvT1, -2048)},
		{"slli a0, a0, 48", rvSlli(rvA0, rvA0, 48)},
		{"srli a0, a0, 48", rvSrli(rvA0, rvA0, 48)},
		{"andi a0, a0, 255", rvAndi(rvA0, rvA0, 0xff)},
		{"ld t5, 152(s9)", rvLd(rvT5, rvS9, 152)},
		{"ld t4, -16(a0)", rvLd(rvT4, rvA0, -16)},
		{"ld t1, -16(t0)", rvLd(rvT1, rvT0, -16)},
		{"sd t4, -24(a0)", rvSd(rvT4, rvA0, -24)},
		{"sd t4, 2040(a0)", rvSd(rvT4, rvA0, 2040)},
		{"jalr ra, 0(t1)", rvJalr(rvRA, rvT1, 0)},
		{"jalr t0, -1568(t0)", rvJalr(rvT0, rvT0, -1568)},
		{"jalr zero, 2047(t1)", rvJalr(rvZero, rvT1, 2047)},
		{"add t3, t3, a7", rvAdd(rvT3, rvT3, 17)},
		{"xor t5, s10, t5", rvXor(rvT5, rvS10, rvT5)},
		{"or t6, t6, t5", rvOr(rvT6, rvT6, rvT5)},
		{"mul t3, t3, t4", rvMul(rvT3, rvT3, rvT4)},
		{"lui a0, 0xdead0", rvLui(rvA0, 0xdead0)},
		{"lui t6, 0xde01f", rvLui(rvT6, 0xde01f)},
		{"auipc t1, 0x81e3", rvAuipc(rvT1, 0x81e3)},
		{"auipc t0, 0xfffff", rvAuipc(rvT0, 0xfffff)},
		{"1: beq t6, zero, 1b+12", rvB(0, rvT6, rvZero, 12)},
		{"1: jal zero, 1b+0xffffe", rvJal(rvZero, 0xffffe)},
		{"1: jal zero, 1b-0x100000", rvJal(rvZero, -0x100000)},
		{"1: jal zero, 1b+0x12344", rvJal(rvZero, 0x12344)},
		{"1: bne t6, zero, 1b+2000", rvB(1, rvT6, rvZero, 2000)},
		{"1: bne s11, zero, 1b-4092", rvB(1, rvS11, rvZero, -4092)},
		{"1: bne s11, zero, 1b-4096", rvB(1, rvS11, rvZero, -4096)},
	}
	var src strings.Builder
	var want []byte
	for _, c := range cases {
		fmt.Fprintln(&src, c.asm)
		want = binary.LittleEndian.AppendUint32(want, c.w)
	}
	got := gnuAs(t, src.String())
	for i, c := range cases {
		if g, w := binary.LittleEndian.Uint32(got[4*i:]), binary.LittleEndian.Uint32(want[4*i:]); g != w {
			t.Errorf("%s: as %#08x, target %#08x", c.asm, g, w)
		}
	}
}

// TestRV64Li runs li for values with every carry case and compares with the value, and
// auipc+jalr pairs with GNU as's %pcrel_hi/%pcrel_lo split.
func TestRV64Li(t *testing.T) {
	vals := []uint64{0, 1, 0x7ff, 0x800, 0xfff, 0x80000000, 0xffffffff, 0x100000000,
		0xffffffff80a1b2c0, 0xffffffd80a3b4c00, 0x7fff7ff7ff7ff7ff, 0x8000000000000000,
		0xffffffffffffffff, 0xa5a5a5a500000000 + 0x01010101, 0xca11ee5a00000100, 0x5e55101100000101}
	for _, v := range vals {
		if got := rvEval(t, rvasm(nil).li(rvA0, v)); got != v {
			t.Errorf("li %#x evaluates to %#x", v, got)
		}
	}
	for _, d := range []int64{0, 4, 0x7ff, 0x800, -0x800, -0x801, 0x7ffff7ff, -0x80000800, 0x12345678} {
		at := uint64(0x1000)
		a, err := rvasm(nil).far(rvRA, rvT1, at, at+uint64(d))
		if err != nil {
			t.Fatal(err)
		}
		hi := int64(int32(binary.LittleEndian.Uint32(a) & 0xfffff000))
		lo := int64(int32(binary.LittleEndian.Uint32(a[4:])) >> 20)
		if hi+lo != d {
			t.Errorf("auipc+jalr to %+#x reaches %+#x", d, hi+lo)
		}
	}
	if _, err := (rvasm(nil)).far(rvRA, rvT1, 0, 1<<31); err == nil {
		t.Error("auipc+jalr reaches 2 GiB")
	}
}

// rvEval interprets the lui/addiw/slli/addi sequences li writes, on a0.
func rvEval(t *testing.T, code []byte) uint64 {
	t.Helper()
	var r [32]uint64
	for off := 0; off < len(code); off += 4 {
		w := binary.LittleEndian.Uint32(code[off:])
		rd, rs := w>>7&31, w>>15&31
		imm := uint64(int64(int32(w)) >> 20)
		switch {
		case w&0x7f == 0x37:
			r[rd] = uint64(int64(int32(w & 0xfffff000)))
		case w&0x707f == 0x1b:
			r[rd] = uint64(int64(int32(uint32(r[rs] + imm))))
		case w&0x707f == 0x13:
			r[rd] = r[rs] + imm
		case w&0xfc00707f == 0x1013:
			r[rd] = r[rs] << (w >> 20 & 63)
		default:
			t.Fatalf("li wrote %#08x", w)
		}
	}
	return r[rvA0]
}
