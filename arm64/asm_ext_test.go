package arm64

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const gasName = "aarch64-linux-gnu-as"

// gas assembles src with GNU as and returns its .text words, or skips the test
// when the assembler is absent.
func gas(t testing.TB, src string) []uint32 {
	t.Helper()
	path, err := exec.LookPath(gasName)
	if err != nil {
		t.Skipf("%s not installed (binutils-aarch64-linux-gnu); skipping the comparison with GNU as", gasName)
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "t.s"), filepath.Join(dir, "t.o")
	if err := os.WriteFile(in, []byte(src+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "-march=armv8.5-a", "-o", out, in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", gasName, err, stderr.String())
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if rel := f.Section(".rela.text"); rel != nil && rel.Size > 0 {
		t.Fatalf("%s left relocations in .text; every operand must resolve locally", gasName)
	}
	b, err := f.Section(".text").Data()
	if err != nil {
		t.Fatal(err)
	}
	w := make([]uint32, len(b)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return w
}

type encCase struct {
	got uint32
	asm string // GNU syntax; branch offsets as .+N
}

func encCases() []encCase {
	var c []encCase
	add := func(got uint32, format string, a ...any) { c = append(c, encCase{got, fmt.Sprintf(format, a...)}) }
	// Move wide: every legal shift, chunk patterns 0, 0x8000, 0xffff and mixed.
	for _, imm := range []uint16{0, 1, 0x1234, 0x7fff, 0x8000, 0xfff0, 0xffff} {
		for _, sh := range []int{0, 16, 32, 48} {
			add(MOVZ(true, X10, imm, sh), "movz x10, #%#x, lsl #%d", imm, sh)
			add(MOVN(true, X0, imm, sh), "movn x0, #%#x, lsl #%d", imm, sh)
			add(MOVK(true, X19, imm, sh), "movk x19, #%#x, lsl #%d", imm, sh)
			if sh < 32 {
				add(MOVZ(false, X10, imm, sh), "movz w10, #%#x, lsl #%d", imm, sh)
				add(MOVN(false, X1, imm, sh), "movn w1, #%#x, lsl #%d", imm, sh)
				add(MOVK(false, X30, imm, sh), "movk w30, #%#x, lsl #%d", imm, sh)
			}
		}
	}
	add(MOVZ(true, XZR, 1, 0), "movz xzr, #1")
	// Add/sub immediate: imm12 limits, the lsl #12 form, SP operands, W form.
	for _, imm := range []int{0, 1, 16, 0x18, 0x80, 0xfff, 0x1000, 0x7000, 0xfff000} {
		add(ADDI(true, X0, SP, imm), "add x0, sp, #%#x", imm)
		add(SUBI(true, SP, SP, imm), "sub sp, sp, #%#x", imm)
		add(ADDI(true, X1, X19, imm), "add x1, x19, #%#x", imm)
		add(SUBI(false, X2, X3, imm), "sub w2, w3, #%#x", imm)
	}
	add(MOV(FP, SP), "mov x29, sp")
	add(MOV(SP, FP), "mov sp, x29")
	add(MOV(X0, X19), "add x0, x19, #0")
	add(MOV(X20, X0), "add x20, x0, #0")
	add(MOV(LR, X9), "add x30, x9, #0")
	add(MOV(X10, LR), "add x10, x30, #0")
	for _, r := range [][2]Reg{{X0, X19}, {X20, X0}, {X1, X20}, {LR, X9}, {X10, LR}, {X19, X0}} {
		add(MOVR(r[0], r[1]), "mov x%d, x%d", r[0], r[1])
	}
	// Shifts by immediate (the masking of a stack argument's last slot).
	for _, sh := range []int{0, 1, 8, 16, 24, 32, 40, 48, 56, 63} {
		add(LSL(X10, X10, sh), "lsl x10, x10, #%d", sh)
		add(LSR(X10, X10, sh), "lsr x10, x10, #%d", sh)
		add(LSL(X0, X19, sh), "lsl x0, x19, #%d", sh)
		add(LSR(LR, X1, sh), "lsr x30, x1, #%d", sh)
	}
	// 64-bit LDR/STR, unsigned scaled offsets up to 8*4095.
	for _, off := range []int{0, 8, 16, 72, 128, 4096, 32752, 32760} {
		add(STR(X10, SP, off), "str x10, [sp, #%d]", off)
		add(LDR(X7, FP, off), "ldr x7, [x29, #%d]", off)
	}
	add(STR(XZR, SP, 0), "str xzr, [sp]")
	add(LDR(X30, X0, 8), "ldr x30, [x0, #8]")
	// Pairs: signed imm7 scaled by 8, -512..504, all three modes.
	for _, off := range []int{-512, -16, -8, 0, 8, 16, 504} {
		add(STP(PairPre, FP, X9, SP, off), "stp x29, x9, [sp, #%d]!", off)
		add(STP(PairPost, X1, X2, X3, off), "stp x1, x2, [x3], #%d", off)
		add(STP(PairOffset, X19, X20, SP, off), "stp x19, x20, [sp, #%d]", off)
		add(LDP(PairPre, X4, X5, SP, off), "ldp x4, x5, [sp, #%d]!", off)
		add(LDP(PairPost, FP, LR, SP, off), "ldp x29, x30, [sp], #%d", off)
		add(LDP(PairOffset, X6, X7, X8, off), "ldp x6, x7, [x8, #%d]", off)
	}
	add(PUSH(FP, LR), "stp x29, x30, [sp, #-16]!")
	add(POP(FP, X9), "ldp x29, x9, [sp], #16")
	// Immediate branches: bl/b ±128 MiB, cbz/cbnz/b.cond ±1 MiB, adr ±1 MiB.
	for _, off := range []int64{0, 4, -4, 0x30c, -0x30c, 1 << 20, 0x7fffffc, -0x8000000} {
		add(BL(off), "bl .%+d", off)
		add(B(off), "b .%+d", off)
	}
	for _, off := range []int64{0, 4, -4, 12, 0x1c, 0xffffc, -0x100000} {
		add(CBZ(true, X0, off), "cbz x0, .%+d", off)
		add(CBNZ(true, X10, off), "cbnz x10, .%+d", off)
		add(CBZ(false, X3, off), "cbz w3, .%+d", off)
		add(CBNZ(false, X30, off), "cbnz w30, .%+d", off)
		add(BCond(EQ, off), "b.eq .%+d", off)
		add(BCond(LE, off), "b.le .%+d", off)
		add(BCond(AL, off), "b.al .%+d", off)
	}
	for _, off := range []int64{0, 1, 2, 3, 8, -1, -4, 0xfffff, -0x100000} {
		add(ADR(LR, off), "adr x30, .%+d", off)
		add(ADR(X0, off), "adr x0, .%+d", off)
	}
	for _, r := range []Reg{X0, X9, X10, X17, LR} {
		add(BLR(r), "blr x%d", r)
		add(BR(r), "br x%d", r)
		add(RET(r), "ret x%d", r)
	}
	add(RET(LR), "ret")
	// Hints and brk.
	add(NOP, "nop")
	add(BTIC, "bti c")
	add(BTIJ, "bti j")
	add(BTIJC, "bti jc")
	add(PACIASP, "paciasp")
	add(AUTIASP, "autiasp")
	for _, imm := range []uint16{0, 1, 0x100, 0x800, 0xffff} {
		add(BRK(imm), "brk #%#x", imm)
	}
	return c
}

func TestEncoderVsGNUAs(t *testing.T) {
	cases := encCases()
	var src strings.Builder
	for _, c := range cases {
		src.WriteString(c.asm + "\n")
	}
	want := gas(t, src.String())
	if len(want) != len(cases) {
		t.Fatalf("%s gave %d words for %d lines", gasName, len(want), len(cases))
	}
	for i, c := range cases {
		if c.got != want[i] {
			t.Errorf("%-32s got %08x, as %08x", c.asm, c.got, want[i])
		}
	}
	t.Logf("%d encodings match GNU as", len(cases))
}

// TestEncoderRejects checks the operands the kernel's encoders refuse: each gives
// AARCH64_BREAK_FAULT, not a wrapped encoding.
func TestEncoderRejects(t *testing.T) {
	bad := map[string]uint32{
		"movz w, lsl 32":       MOVZ(false, X0, 1, 32),
		"movk x, lsl 8":        MOVK(true, X0, 1, 8),
		"movn x, lsl 64":       MOVN(true, X0, 1, 64),
		"add 0x1001":           ADDI(true, X0, SP, 0x1001),
		"add 0x1000000":        ADDI(true, X0, SP, 0x1000000),
		"sub -1":               SUBI(true, SP, SP, -1),
		"str unaligned":        STR(X0, SP, 4),
		"str negative":         STR(X0, SP, -8),
		"str 32768":            STR(X0, SP, 32768),
		"ldr 32768":            LDR(X0, SP, 32768),
		"stp 512":              STP(PairPre, X0, X1, SP, 512),
		"stp -520":             STP(PairPre, X0, X1, SP, -520),
		"ldp unaligned":        LDP(PairPost, X0, X1, SP, 12),
		"bl +128M":             BL(1 << 27),
		"bl -128M-4":           BL(-(1 << 27) - 4),
		"bl unaligned":         BL(2),
		"b +128M":              B(1 << 27),
		"adr +1M":              ADR(X0, 1<<20),
		"adr -1M-1":            ADR(X0, -(1<<20)-1),
		"cbz +1M":              CBZ(true, X0, 1<<20),
		"cbnz -1M-4":           CBNZ(true, X0, -(1<<20)-4),
		"cbz unaligned":        CBZ(true, X0, 6),
		"b.cond bad condition": BCond(Cond(15), 8),
		"lsl 64":               LSL(X10, X10, 64),
		"lsr 64":               LSR(X10, X10, 64),
		"lsl -1":               LSL(X10, X10, -1),
	}
	for name, w := range bad {
		if w != Fault {
			t.Errorf("%s: got %08x, want the fault word %08x", name, w, Fault)
		}
	}
}

// movSeqCases are emit_a64_mov_i64 results written by hand from its rules
// (arch/arm64/net/bpf_jit_comp.c: count the 16-bit chunks, tie → MOVZ, W form below 2^32).
var movSeqCases = []struct {
	v   uint64
	asm string
}{
	{0xfff0000003561400, "movz x0, #0xfff0, lsl #48; movk x0, #0x356, lsl #16; movk x0, #0x1400"}, // captured im
	{0xffff000003561400, "movz x0, #0xffff, lsl #48; movk x0, #0x356, lsl #16; movk x0, #0x1400"}, // tie
	{0xffff800080123450, "movn x0, #0x7fff, lsl #32; movk x0, #0x8012, lsl #16; movk x0, #0x3450"},
	{0xffffffffffffffff, "movn x0, #0"},
	{0x1234567, "movz w0, #0x4567; movk w0, #0x123, lsl #16"}, // spec's cookie example
	{0, "movz w0, #0"},
	{0xffffffff, "movn w0, #0"},
	{0x80000000, "movn w0, #0x7fff, lsl #16; movk w0, #0"},
	{0x8000ffff, "movn w0, #0x7fff, lsl #16"},
	{0x12340000, "movz w0, #0; movk w0, #0x1234, lsl #16"},
	{0xffff, "movz w0, #0xffff"},
	{0x100000000, "movz x0, #1, lsl #32"},
	{0x0000ffff00000000, "movz x0, #0xffff, lsl #32"},
	{0xffff0000ffff0000, "movz x0, #0xffff, lsl #48; movk x0, #0xffff, lsl #16"},
	{0xfffffffe00000000, "movz x0, #0xffff, lsl #48; movk x0, #0xfffe, lsl #32"},
	{0xffffffff12345678, "movn x0, #0xedcb, lsl #16; movk x0, #0x5678"},
	{0xffffffffffff1234, "movn x0, #0xedcb"},
	{0x123456789abcdef0, "movz x0, #0x1234, lsl #48; movk x0, #0x5678, lsl #32; movk x0, #0x9abc, lsl #16; movk x0, #0xdef0"},
	{0x8000000000000000, "movz x0, #0x8000, lsl #48"},
	{0x7fffffffffffffff, "movn x0, #0x8000, lsl #48"},
}

func TestMovImm64VsGNUAs(t *testing.T) {
	var src strings.Builder
	var got [][]uint32
	for _, c := range movSeqCases {
		src.WriteString(strings.ReplaceAll(c.asm, "; ", "\n") + "\n")
		got = append(got, AppendMovImm64(nil, X0, c.v))
	}
	want := gas(t, src.String())
	for i, c := range movSeqCases {
		n := strings.Count(c.asm, ";") + 1
		if fmt.Sprintf("%08x", got[i]) != fmt.Sprintf("%08x", want[:n]) {
			t.Errorf("%#x: got %08x, want %08x (%s)", c.v, got[i], want[:n], c.asm)
		}
		want = want[n:]
	}
}

// evalMov runs MOVZ/MOVN/MOVK words (ARM ARM semantics) and returns the register.
func evalMov(t *testing.T, ws []uint32) uint64 {
	var r uint64
	for _, w := range ws {
		sf, opc, hw, imm := w>>31, w>>29&3, w>>21&3, uint64(w>>5&0xffff)
		if w>>23&0x3f != 0b100101 {
			t.Fatalf("%08x is not a move-wide", w)
		}
		sh := 16 * hw
		switch opc {
		case opMOVZ:
			r = imm << sh
		case opMOVN:
			r = ^(imm << sh)
		case opMOVK:
			r = r&^(0xffff<<sh) | imm<<sh
		default:
			t.Fatalf("%08x: bad opc", w)
		}
		if sf == 0 {
			r &= 0xffffffff
		}
	}
	return r
}

// TestMovImm64Value checks that every chunk pattern loads its value in 1-4 words.
func TestMovImm64Value(t *testing.T) {
	parts := []uint64{0, 1, 0x7fff, 0x8000, 0xfffe, 0xffff}
	n := 0
	for _, a := range parts {
		for _, b := range parts {
			for _, c := range parts {
				for _, d := range parts {
					v := a<<48 | b<<32 | c<<16 | d
					ws := AppendMovImm64(nil, X10, v)
					if got := evalMov(t, ws); got != v || len(ws) < 1 || len(ws) > 4 {
						t.Fatalf("%#x: %d words load %#x", v, len(ws), got)
					}
					// emit_addr_mov_i64 always sets bits 48..63.
					aw := AppendAddrMov(nil, X10, v)
					if got := evalMov(t, aw); len(aw) != 3 || got != v|0xffff<<48 {
						t.Fatalf("addr mov %#x: %d words load %#x", v, len(aw), got)
					}
					n++
				}
			}
		}
	}
	t.Logf("%d chunk patterns", n)
}

// TestSpecVectors: instruction words encoded by hand from the A64 bit-field layouts (and
// checked with llvm-mc when written), so the encoder is covered even where GNU as is absent.
func TestSpecVectors(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint32
	}{
		{"stp x29,x9,[sp,#-16]!", PUSH(FP, X9), 0xA9BF27FD},
		{"stp x29,x30,[sp,#-16]!", PUSH(FP, LR), 0xA9BF7BFD},
		{"ldp x29,x30,[sp],#16", POP(FP, LR), 0xA8C17BFD},
		{"ldp x29,x9,[sp],#16", POP(FP, X9), 0xA8C127FD},
		{"mov x29,sp", MOV(FP, SP), 0x910003FD},
		{"mov sp,x29", MOV(SP, FP), 0x910003BF},
		{"add x0,x19,#0", MOV(X0, X19), 0x91000260},
		{"mov x1,sp", MOV(X1, SP), 0x910003E1},
		{"sub sp,sp,#64", SUBI(true, SP, SP, 64), 0xD10103FF},
		{"add x0,sp,#24", ADDI(true, X0, SP, 24), 0x910063E0},
		{"str x10,[sp,#16]", STR(X10, SP, 16), 0xF9000BEA},
		{"ldr x10,[sp,#72]", LDR(X10, SP, 72), 0xF94027EA},
		{"str xzr,[sp]", STR(XZR, SP, 0), 0xF90003FF},
		{"mov x10,#2", MOVZ(true, X10, 2, 0), 0xD280004A},
		{"movz x0,#0xfff0,lsl#48", MOVZ(true, X0, 0xfff0, 48), 0xD2FFFE00},
		{"movk x0,#0x356,lsl#16", MOVK(true, X0, 0x356, 16), 0xF2A06AC0},
		{"movn x10,#0x7fff,lsl#32", MOVN(true, X10, 0x7fff, 32), 0x92CFFFEA},
		{"movz w10,#0x4567", MOVZ(false, X10, 0x4567, 0), 0x5288ACEA},
		{"movk w10,#0x123,lsl#16", MOVK(false, X10, 0x123, 16), 0x72A0246A},
		{"blr x10", BLR(X10), 0xD63F0140},
		{"ret x10", RET(X10), 0xD65F0140},
		{"ret x9", RET(X9), 0xD65F0120},
		{"ret", RET(LR), 0xD65F03C0},
		{"adr x30,#8", ADR(LR, 8), 0x1000005E},
		{"cbz x0,#12", CBZ(true, X0, 12), 0xB4000060},
		{"cbnz x10,#40", CBNZ(true, X10, 40), 0xB500014A},
		{"nop", NOP, 0xD503201F},
		{"brk #0x100", BRK(0x100), 0xD4202000},
		{"brk #0x100 (fault)", Fault, 0xD4202000},
		{"bti jc", BTIJC, 0xD50324DF},
		{"bti c", BTIC, 0xD503245F},
		{"bti j", BTIJ, 0xD503249F},
		{"paciasp", PACIASP, 0xD503233F},
		{"autiasp", AUTIASP, 0xD50323BF},
		{"add x30,x9,#0", MOV(LR, X9), 0x9100013E},
		{"add x10,x30,#0", MOV(X10, LR), 0x910003CA},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %08x, want %08x", c.name, c.got, c.want)
		}
	}
}
