package riscv64

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/arch/riscv64/riscv64asm"

	"github.com/trampjit/trampjit/jit"
)

// TestSpecVectors: encodings of the kernel's choices written by hand from the RVC and
// base formats (and checked by disassembly when written), so that the encoder is
// covered where binutils is absent.
func TestSpecVectors(t *testing.T) {
	for _, c := range []struct {
		name string
		emit func(*asm)
		want string // halfwords/words in memory order, as objdump prints them
	}{
		{"c.addi16sp sp,-16", func(a *asm) { a.addi(SP, SP, -16) }, "717d"},
		{"c.addi16sp sp,16", func(a *asm) { a.addi(SP, SP, 16) }, "6141"},
		{"c.addi16sp sp,-80", func(a *asm) { a.addi(SP, SP, -80) }, "715d"},
		{"c.addi16sp sp,80", func(a *asm) { a.addi(SP, SP, 80) }, "6161"},
		{"c.addi16sp sp,-96", func(a *asm) { a.addi(SP, SP, -96) }, "711d"},
		{"c.addi16sp sp,96", func(a *asm) { a.addi(SP, SP, 96) }, "6125"},
		{"c.addi4spn s0,sp,16", func(a *asm) { a.addi(S0, SP, 16) }, "0800"},
		{"c.addi4spn s0,sp,80", func(a *asm) { a.addi(S0, SP, 80) }, "0880"},
		{"c.addi4spn s0,sp,96", func(a *asm) { a.addi(S0, SP, 96) }, "1080"},
		{"c.sdsp ra,8(sp)", func(a *asm) { a.sd(SP, 8, RA) }, "e406"},
		{"c.sdsp s0,0(sp)", func(a *asm) { a.sd(SP, 0, S0) }, "e022"},
		{"c.sdsp t0,72(sp)", func(a *asm) { a.sd(SP, 72, T0) }, "e496"},
		{"c.sdsp s0,64(sp)", func(a *asm) { a.sd(SP, 64, S0) }, "e0a2"},
		{"c.sdsp ra,72(sp)", func(a *asm) { a.sd(SP, 72, RA) }, "e486"},
		{"c.ldsp t0,72(sp)", func(a *asm) { a.ld(T0, 72, SP) }, "62a6"},
		{"c.ldsp s0,64(sp)", func(a *asm) { a.ld(S0, 64, SP) }, "6406"},
		{"c.ldsp ra,8(sp)", func(a *asm) { a.ld(RA, 8, SP) }, "60a2"},
		{"c.ldsp s0,0(sp)", func(a *asm) { a.ld(S0, 0, SP) }, "6402"},
		{"c.ldsp ra,72(sp)", func(a *asm) { a.ld(RA, 72, SP) }, "60a6"},
		{"c.jr ra", func(a *asm) { a.jalr(Zero, RA, 0) }, "8082"},
		{"c.jr t0", func(a *asm) { a.jalr(Zero, T0, 0) }, "8282"},
		{"c.mv s1,a0", func(a *asm) { a.mv(S1, A0) }, "84aa"},
		{"c.mv a1,s1", func(a *asm) { a.mv(A1, S1) }, "85a6"},
		{"c.mv a0,a5", func(a *asm) { a.mv(A0, A5) }, "853e"},
		{"c.li t1,1", func(a *asm) { a.li(T1, 1) }, "4305"},
		{"c.li t1,2", func(a *asm) { a.li(T1, 2) }, "4309"},
		{"c.li t1,-1", func(a *asm) { a.li(T1, -1) }, "537d"},
		{"c.slli t1,63", func(a *asm) { a.slli(T1, T1, 63) }, "137e"},
		{"c.addi t1,2", func(a *asm) { a.addi(T1, T1, 2) }, "0309"},
		{"c.slli a0,12", func(a *asm) { a.slli(A0, A0, 12) }, "0532"},
		{"sd s1,-80(s0)", func(a *asm) { a.sd(FP, -80, S1) }, "fa943823"},
		{"sd t1,-56(s0)", func(a *asm) { a.sd(FP, -56, T1) }, "fc643423"},
		{"sd a0,-48(s0)", func(a *asm) { a.sd(FP, -48, A0) }, "fca43823"},
		{"sd a1,-40(s0)", func(a *asm) { a.sd(FP, -40, A1) }, "fcb43c23"},
		{"sd zero,-72(s0)", func(a *asm) { a.sd(FP, -72, Zero) }, "fa043c23"},
		{"sd zero,-32(s0)", func(a *asm) { a.sd(FP, -32, Zero) }, "fe043023"},
		{"sd a0,-32(s0)", func(a *asm) { a.sd(FP, -32, A0) }, "fea43023"},
		{"sd a5,-24(s0)", func(a *asm) { a.sd(FP, -24, A5) }, "fef43423"},
		{"ld a0,-48(s0)", func(a *asm) { a.ld(A0, -48, FP) }, "fd043503"},
		{"ld a1,-40(s0)", func(a *asm) { a.ld(A1, -40, FP) }, "fd843583"},
		{"ld a0,-32(s0)", func(a *asm) { a.ld(A0, -32, FP) }, "fe043503"},
		{"ld a5,-24(s0)", func(a *asm) { a.ld(A5, -24, FP) }, "fe843783"},
		{"ld s1,-80(s0)", func(a *asm) { a.ld(S1, -80, FP) }, "fb043483"},
		{"ld t1,-32(s0)", func(a *asm) { a.ld(T1, -32, FP) }, "fe043303"},
		{"addi a0,s0,-48", func(a *asm) { a.addi(A0, FP, -48) }, "fd040513"},
		{"addi a1,s0,-72", func(a *asm) { a.addi(A1, FP, -72) }, "fb840593"},
		{"addi a2,s0,-72", func(a *asm) { a.addi(A2, FP, -72) }, "fb840613"},
		{"beq a0,zero,+12", func(a *asm) { a.beq(A0, Zero, 12) }, "00050663"},
		{"beq a0,zero,+20", func(a *asm) { a.beq(A0, Zero, 20) }, "00050a63"},
		{"bne t1,zero,+36", func(a *asm) { a.bne(T1, Zero, 36) }, "02031263"},
		{"nop", func(a *asm) { a.nop() }, "00000013"},
		{"addi a6,zero,33", func(a *asm) { a.li(A6, 33) }, "02100813"},
		{"auipc t0,0", func(a *asm) { a.auipc(T0, 0) }, "00000297"},
		{"jalr t0,0(t0)", func(a *asm) { a.jalr(T0, T0, 0) }, "000282e7"},
	} {
		a := &asm{rvc: true}
		c.emit(a)
		if got := objdumpHex(a.b); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

// objdumpHex prints code as objdump does: each instruction as one hex number.
func objdumpHex(code []byte) string {
	var s []string
	for i := 0; i < len(code); {
		if code[i]&3 != 3 {
			s = append(s, fmt.Sprintf("%04x", binary.LittleEndian.Uint16(code[i:])))
			i += 2
			continue
		}
		s = append(s, fmt.Sprintf("%08x", binary.LittleEndian.Uint32(code[i:])))
		i += 4
	}
	return strings.Join(s, " ")
}

// evalImm runs an emit_imm sequence decoded by riscv64asm (an independent decoder)
// and returns the register it loads.
func evalImm(t *testing.T, code []byte, rd Reg) (v uint64, n int) {
	t.Helper()
	var x [32]uint64
	reg := func(a riscv64asm.Arg) int { return int(a.(riscv64asm.Reg) - riscv64asm.X0) }
	for off := 0; off < len(code); n++ {
		inst, err := riscv64asm.Decode(code[off:])
		if err != nil {
			t.Fatalf("% x: %v", code[off:], err)
		}
		off += inst.Len
		d := reg(inst.Args[0])
		switch inst.Op {
		case riscv64asm.LUI:
			x[d] = uint64(int64(int32(inst.Args[1].(riscv64asm.Uimm).Imm << 12)))
		case riscv64asm.ADDI:
			x[d] = x[reg(inst.Args[1])] + uint64(int64(inst.Args[2].(riscv64asm.Simm).Imm))
		case riscv64asm.ADDIW:
			x[d] = uint64(int64(int32(x[reg(inst.Args[1])] + uint64(int64(inst.Args[2].(riscv64asm.Simm).Imm)))))
		case riscv64asm.SLLI:
			x[d] = x[reg(inst.Args[1])] << (inst.Args[2].(riscv64asm.Uimm).Imm & 63)
		default:
			t.Fatalf("%v in an emit_imm sequence", inst)
		}
		x[0] = 0
	}
	return x[rd], n
}

// TestImmValue: emit_imm loads its value for every 16-bit chunk pattern, every single
// bit and its complement, and random values; RV_MAX_COUNT_IMM's sequence is the
// longest (8 instructions, 26 bytes with RVC, 32 without), which the sizing pass
// relies on.
func TestImmValue(t *testing.T) {
	var vals []uint64
	parts := []uint64{0, 1, 0x7ff, 0x800, 0xfff, 0x7fff, 0x8000, 0xf800, 0xffff}
	for _, a := range parts {
		for _, b := range parts {
			for _, c := range parts {
				for _, d := range parts {
					vals = append(vals, a<<48|b<<32|c<<16|d)
				}
			}
		}
	}
	for i := 0; i < 64; i++ {
		vals = append(vals, 1<<i, ^uint64(1<<i), 1<<i-1, -(1 << i))
	}
	r := rand.New(rand.NewPCG(14, 64))
	for i := 0; i < 5000; i++ {
		vals = append(vals, r.Uint64()>>r.IntN(64))
	}
	for _, rvc := range []bool{true, false} {
		maxLen, maxN := 0, 0
		for _, v := range vals {
			a := &asm{rvc: rvc}
			a.imm(A0, int64(v))
			got, n := evalImm(t, a.b, A0)
			if got != v {
				t.Fatalf("rvc=%v %#x: loads %#x (%s)", rvc, v, got, objdumpHex(a.b))
			}
			maxLen, maxN = max(maxLen, len(a.b)), max(maxN, n)
		}
		a := &asm{rvc: rvc}
		a.imm(A0, maxCountImm)
		_, n := evalImm(t, a.b, A0)
		want := 32
		if rvc {
			want = 26
		}
		if len(a.b) != want || n != 8 || maxLen > len(a.b) || maxN > n {
			t.Errorf("rvc=%v: RV_MAX_COUNT_IMM takes %d bytes in %d instructions (want %d in 8); the longest of %d values %d bytes, %d instructions",
				rvc, len(a.b), n, want, len(vals), maxLen, maxN)
		}
	}
}

// TestJumpRanges: emit_jump_and_link's reach and its refusal (the kernel's words,
// -ERANGE); emit_call in the sizing pass; sign_extend's refusal.
func TestJumpRanges(t *testing.T) {
	for _, c := range []struct {
		off   int64
		fixed bool
		n     int // bytes, 0 = refused
	}{
		{1<<20 - 2, true, 4}, {-1 << 20, true, 4}, {1 << 20, true, 8}, {-1<<20 - 2, true, 8}, {0, true, 8},
		{2, false, 8}, {1<<31 - 1<<11 - 2, true, 8}, {-1<<31 - 1<<11, true, 8},
		{1<<31 - 1<<11, true, 0}, {-1<<31 - 1<<11 - 2, true, 0}, {1 << 40, false, 0},
	} {
		a := &asm{rvc: true}
		err := a.jumpAndLink(RA, c.off, c.fixed)
		switch {
		case c.n == 0 && err == nil:
			t.Errorf("%#x: not refused", c.off)
		case c.n == 0:
			if !errors.Is(err, eRANGE) || !strings.Contains(err.Error(), "bpf-jit: target offset") {
				t.Errorf("%#x: %v (%T), want ERANGE and the kernel's message", c.off, err, err)
			}
		case err != nil || len(a.b) != c.n:
			t.Errorf("%#x fixed=%v: %d bytes, %v; want %d", c.off, c.fixed, len(a.b), err, c.n)
		}
	}
	a := &asm{rvc: true, sizing: true, base: caseBase}
	if err := a.call(caseBase+16, true); err != nil || objdumpHex(a.b) != "00000317 000300e7" {
		t.Errorf("sizing-pass call: %s, %v; want auipc t1,0; jalr ra,0(t1)", objdumpHex(a.b), err)
	}
	if err := (&asm{}).signExtend(A0, A5, 3, true); !errors.Is(err, jit.EINVAL) || !strings.Contains(err.Error(), "invalid size 3 for sign_extend") {
		t.Errorf("sign_extend size 3: %v", err)
	}
}
