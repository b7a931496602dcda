package riscv64

import (
	"fmt"
	"strings"
)

// caseBase is the address the form cases are emitted at (a BPF-region address).
const caseBase = 0xffffffff7800e000

// formCase is one use of a helper and the kernel's choice for it with RVC, in GNU
// syntax: "c.*" lines are compressed forms, every other line a 32-bit one. The same
// case with RVC off is baseLines (each c.* line as the 32-bit instruction the helper
// emits instead). The expected forms are written from the helpers' rules in
// arch/riscv/net/bpf_jit.h and bpf_jit_comp64.c; GNU as supplies the encodings.
type formCase struct {
	form string // the helper and its operands
	emit func(*asm) error
	kern []string
	// src is what one would write for an assembler, for as's own choice; default
	// baseLines.
	src         []string
	zbb, sizing bool
}

func (c formCase) kernLines() []string {
	var l []string
	for _, s := range c.kern {
		if strings.HasPrefix(s, "c.") {
			l = append(l, s)
		} else {
			l = append(l, "!"+s)
		}
	}
	return l
}

func (c formCase) baseLines() []string {
	var l []string
	for _, s := range c.kern {
		l = append(l, expand32(s))
	}
	return l
}

func (c formCase) naturalLines() []string {
	if c.src != nil {
		return c.src
	}
	var l []string
	for _, s := range c.baseLines() {
		// as compresses only the register-only spellings of jalr.
		if r, ok := strings.CutPrefix(s, "jalr zero,0("); ok {
			s = "jr " + strings.TrimSuffix(r, ")")
		} else if r, ok := strings.CutPrefix(s, "jalr ra,0("); ok {
			s = "jalr " + strings.TrimSuffix(r, ")")
		}
		l = append(l, s)
	}
	return l
}

// expand32 is the 32-bit instruction a helper emits where, with RVC, it emits the
// compressed line s (for c.mv that is addi rd,rs,0, emit_mv's fallback, not the
// add rd,zero,rs of the ISA's expansion).
func expand32(s string) string {
	op, args, _ := strings.Cut(s, " ")
	a := strings.Split(args, ",")
	switch op {
	case "c.addi16sp":
		return "addi sp,sp," + a[1]
	case "c.addi4spn":
		return "addi " + args
	case "c.addi", "c.addiw", "c.slli", "c.srli", "c.srai":
		return strings.TrimPrefix(op, "c.") + " " + a[0] + "," + a[0] + "," + a[1]
	case "c.li":
		return "addi " + a[0] + ",zero," + a[1]
	case "c.lui":
		return "lui " + args
	case "c.mv":
		return "addi " + a[0] + "," + a[1] + ",0"
	case "c.add":
		return "add " + a[0] + "," + a[0] + "," + a[1]
	case "c.jr":
		return "jalr zero,0(" + args + ")"
	case "c.jalr":
		return "jalr ra,0(" + args + ")"
	case "c.sdsp", "c.ldsp", "c.swsp", "c.lwsp":
		return strings.TrimSuffix(strings.TrimPrefix(op, "c."), "sp") + " " + args
	case "c.sd", "c.ld", "c.sw", "c.lw":
		return strings.TrimPrefix(op, "c.") + " " + args
	}
	return s
}

func do(f func(a *asm)) func(*asm) error { return func(a *asm) error { f(a); return nil } }

// auipcJalr is the kernel's auipc t1 + jalr rd for a pc-relative offset, written
// with relocations so that as and ld split the offset.
func auipcJalr(rd Reg, off int64) []string {
	return []string{
		fmt.Sprintf("1: auipc t1,%%pcrel_hi(1b%+d)", off),
		fmt.Sprintf("jalr %s,%%pcrel_lo(1b)(t1)", rd),
	}
}

func formCases() []formCase {
	var c []formCase
	add := func(fc formCase) { c = append(c, fc) }

	// emit_addi: c.addi16sp first, then c.addi4spn, then c.addi.
	for _, r := range []struct {
		rd, rs Reg
		imm    int32
		kind   string
	}{
		{SP, SP, -16, "16sp"}, {SP, SP, 16, "16sp"}, {SP, SP, -32, "16sp"}, {SP, SP, 32, "16sp"},
		{SP, SP, -48, "16sp"}, {SP, SP, -80, "16sp"}, {SP, SP, 80, "16sp"}, {SP, SP, -96, "16sp"},
		{SP, SP, 96, "16sp"}, {SP, SP, -512, "16sp"}, {SP, SP, 496, "16sp"}, {SP, SP, 512, "32"},
		{SP, SP, -528, "32"}, {SP, SP, -1024, "32"}, {SP, SP, 2032, "32"}, {SP, SP, -2048, "32"},
		{SP, SP, 8, "c"}, {SP, SP, -8, "c"}, {SP, SP, 31, "c"}, {SP, SP, -31, "c"}, {SP, SP, 24, "c"},
		{SP, SP, 40, "32"}, {SP, SP, 0, "32"},
		{S0, SP, 16, "4spn"}, {S0, SP, 4, "4spn"}, {S0, SP, 80, "4spn"}, {S0, SP, 96, "4spn"},
		{S0, SP, 1020, "4spn"}, {S0, SP, 1008, "4spn"}, {S0, SP, 1024, "32"}, {S0, SP, 2, "32"},
		{S0, SP, 0, "32"}, {S0, SP, -16, "32"}, {A0, SP, 8, "4spn"}, {A5, SP, 512, "4spn"},
		{S1, SP, 24, "4spn"}, {A6, SP, 16, "32"}, {T1, SP, 16, "32"}, {RA, SP, 16, "32"},
		{A0, A0, -1, "c"}, {A0, A0, -32, "c"}, {A0, A0, 31, "c"}, {A0, A0, 32, "32"},
		{A0, A0, -33, "32"}, {A0, A0, 0, "32"}, {T1, T1, 2, "c"}, {A0, A0, -1024, "32"},
		{A0, A0, 1024, "32"}, {A0, A0, 2047, "32"}, {A0, A0, -2048, "32"}, {A1, S0, -72, "32"},
		{A2, S0, -72, "32"}, {A0, S0, -48, "32"}, {A1, S0, -2048, "32"}, {A0, S0, 2047, "32"},
		{S0, S0, 16, "c"}, {Zero, Zero, 0, "32"}, {A0, Zero, 5, "32"},
	} {
		var k string
		switch r.kind {
		case "16sp":
			k = fmt.Sprintf("c.addi16sp sp,%d", r.imm)
		case "4spn":
			k = fmt.Sprintf("c.addi4spn %s,sp,%d", r.rd, r.imm)
		case "c":
			k = fmt.Sprintf("c.addi %s,%d", r.rd, r.imm)
		default:
			k = fmt.Sprintf("addi %s,%s,%d", r.rd, r.rs, r.imm)
		}
		add(formCase{form: fmt.Sprintf("addi(%s, %s, %d)", r.rd, r.rs, r.imm), emit: do(func(a *asm) { a.addi(r.rd, r.rs, r.imm) }), kern: []string{k}})
	}

	// emit_li.
	for _, r := range []struct {
		rd  Reg
		imm int32
		c   bool
	}{
		{T1, 0, true}, {T1, 1, true}, {T1, 2, true}, {T1, -1, true}, {T1, 31, true}, {T1, -32, true},
		{T1, 32, false}, {T1, -33, false}, {A0, 2047, false}, {A0, -2048, false}, {A6, 33, false},
		{A0, 12, true},
	} {
		k := fmt.Sprintf("addi %s,zero,%d", r.rd, r.imm)
		if r.c {
			k = fmt.Sprintf("c.li %s,%d", r.rd, r.imm)
		}
		add(formCase{form: fmt.Sprintf("li(%s, %d)", r.rd, r.imm), emit: do(func(a *asm) { a.li(r.rd, r.imm) }), kern: []string{k},
			src: []string{fmt.Sprintf("li %s,%d", r.rd, r.imm)}})
	}

	// emit_lui, with emit_imm's signed upper value.
	for _, r := range []struct {
		rd  Reg
		imm int32
		c   bool
	}{
		{T1, 1, true}, {T1, 31, true}, {T1, 32, false}, {T1, -1, true}, {T1, -32, true}, {T1, -33, false},
		{A0, 0x80a1b, false}, {SP, 1, false}, {A0, 0, false}, {A0, 0x80000, false}, {A0, -0x80000, false},
	} {
		op := "lui"
		if r.c {
			op = "c.lui"
		}
		add(formCase{form: fmt.Sprintf("lui(%s, %d)", r.rd, r.imm), emit: do(func(a *asm) { a.lui(r.rd, r.imm) }),
			kern: []string{fmt.Sprintf("%s %s,%#x", op, r.rd, uint32(r.imm)&0xfffff)}})
	}

	// emit_addiw (c.addiw includes 0: sext.w), emit_slli, emit_srli, emit_srai.
	type rri struct {
		rd, rs Reg
		imm    int32
		c      bool
	}
	shifts := map[string][]rri{
		"addiw": {{A0, A0, 0, true}, {T1, T1, 564, false}, {A0, A0, 3, true}, {A0, A0, -32, true},
			{A0, A0, 31, true}, {A0, A0, 32, false}, {A0, A5, 0, false}, {A0, A0, -1811, false}, {T1, T1, -1, true}},
		"slli": {{A0, A0, 12, true}, {T1, T1, 63, true}, {A0, A0, 1, true}, {A0, A0, 32, true},
			{A0, A5, 56, false}, {T1, A0, 12, false}, {A0, A0, 0, false}},
		"srai": {{A0, A0, 56, true}, {A0, A0, 48, true}, {S0, S0, 1, true}, {A5, A5, 63, true},
			{T1, T1, 56, false}, {A0, A5, 56, false}, {A6, A6, 3, false}},
		"srli": {{A0, A0, 48, true}, {A0, A0, 32, true}, {T1, T1, 48, false}, {A1, A0, 32, false}},
	}
	for _, op := range []string{"addiw", "slli", "srai", "srli"} {
		for _, r := range shifts[op] {
			k := fmt.Sprintf("%s %s,%s,%d", op, r.rd, r.rs, r.imm)
			if r.c {
				k = fmt.Sprintf("c.%s %s,%d", op, r.rd, r.imm)
			}
			f := map[string]func(*asm, Reg, Reg, int32){
				"addiw": (*asm).addiw, "slli": (*asm).slli, "srai": (*asm).srai, "srli": (*asm).srli,
			}[op]
			add(formCase{form: fmt.Sprintf("%s(%s, %s, %d)", op, r.rd, r.rs, r.imm), emit: do(func(a *asm) { f(a, r.rd, r.rs, r.imm) }), kern: []string{k}})
		}
	}

	// emit_mv and emit_add.
	for _, r := range [][2]Reg{{S1, A0}, {A1, S1}, {A0, A5}, {T1, A0}, {RA, T0}, {A0, Zero}, {Zero, A0}} {
		k := fmt.Sprintf("c.mv %s,%s", r[0], r[1])
		if r[0] == Zero || r[1] == Zero {
			k = fmt.Sprintf("addi %s,%s,0", r[0], r[1])
		}
		add(formCase{form: fmt.Sprintf("mv(%s, %s)", r[0], r[1]), emit: do(func(a *asm) { a.mv(r[0], r[1]) }), kern: []string{k},
			src: []string{fmt.Sprintf("mv %s,%s", r[0], r[1])}})
	}
	for _, r := range [][3]Reg{{T1, T1, A0}, {A0, A0, T2}, {A0, A1, A2}, {A0, A0, Zero}} {
		k := fmt.Sprintf("c.add %s,%s", r[0], r[2])
		if r[0] != r[1] || r[2] == Zero {
			k = fmt.Sprintf("add %s,%s,%s", r[0], r[1], r[2])
		}
		add(formCase{form: fmt.Sprintf("add(%s, %s, %s)", r[0], r[1], r[2]), emit: do(func(a *asm) { a.add(r[0], r[1], r[2]) }), kern: []string{k}})
	}

	// emit_jalr: c.jr / c.jalr only with offset 0.
	for _, r := range []struct {
		rd, rs Reg
		imm    int32
		kern   string
		src    string
	}{
		{Zero, RA, 0, "c.jr ra", "ret"}, {Zero, T0, 0, "c.jr t0", "jr t0"}, {RA, T1, 0, "c.jalr t1", "jalr t1"},
		{RA, T1, 8, "jalr ra,8(t1)", ""}, {Zero, T3, 12, "jalr zero,12(t3)", ""}, {T0, T1, 0, "jalr t0,0(t1)", ""},
		{Zero, Zero, 0, "jalr zero,0(zero)", ""},
	} {
		fc := formCase{form: fmt.Sprintf("jalr(%s, %s, %d)", r.rd, r.rs, r.imm), emit: do(func(a *asm) { a.jalr(r.rd, r.rs, r.imm) }), kern: []string{r.kern}}
		if r.src != "" {
			fc.src = []string{r.src}
		}
		add(fc)
	}

	// emit_sd / emit_ld / emit_sw / emit_lw: the sp form, then the creg form.
	type mem struct {
		base Reg
		off  int32
		r    Reg
		kind string // "sp", "c" or "32"
	}
	memCases := map[string][]mem{
		"sd": {{SP, 8, RA, "sp"}, {SP, 0, S0, "sp"}, {SP, 72, T0, "sp"}, {SP, 64, S0, "sp"}, {SP, 72, RA, "sp"},
			{SP, 504, A0, "sp"}, {SP, 512, A0, "32"}, {SP, 4, A0, "32"}, {SP, -8, A0, "32"}, {SP, 0, Zero, "sp"},
			{S0, -80, S1, "32"}, {S0, -56, T1, "32"}, {S0, -48, A0, "32"}, {S0, -40, A1, "32"}, {S0, -72, Zero, "32"},
			{S0, -32, A0, "32"}, {S0, -24, A5, "32"}, {S0, 8, A0, "c"}, {S0, 248, A5, "c"}, {S0, 256, A5, "32"},
			{S0, 4, A0, "32"}, {S0, 8, T1, "32"}, {A0, 0, A1, "c"}, {S0, -2048, A0, "32"}, {S0, 2040, A0, "32"},
			{T1, 8, A0, "32"}},
		"ld": {{SP, 72, T0, "sp"}, {SP, 64, S0, "sp"}, {SP, 8, RA, "sp"}, {SP, 0, S0, "sp"}, {SP, 72, RA, "sp"},
			{SP, 504, A0, "sp"}, {SP, 512, A0, "32"}, {SP, 0, Zero, "32"}, {S0, -48, A0, "32"}, {S0, -40, A1, "32"},
			{S0, -32, A0, "32"}, {S0, -24, A5, "32"}, {S0, -80, S1, "32"}, {S0, -32, T1, "32"}, {S0, 8, A0, "c"},
			{A0, 248, A5, "c"}, {A0, 256, A5, "32"}, {S0, 16, T1, "32"}, {S0, 24, T1, "32"}, {S0, 4, A0, "32"}},
		"sw": {{SP, 0, A0, "sp"}, {SP, 252, A0, "sp"}, {SP, 256, A0, "32"}, {SP, 2, A0, "32"}, {S0, 4, A0, "c"},
			{S0, 124, A5, "c"}, {S0, 128, A5, "32"}, {S0, -4, A0, "32"}, {SP, 0, Zero, "sp"}},
		"lw": {{SP, 0, A0, "sp"}, {SP, 252, A0, "sp"}, {SP, 256, A0, "32"}, {SP, 0, Zero, "32"}, {S0, 4, A0, "c"},
			{S0, 124, A0, "c"}, {S0, 128, A0, "32"}, {S0, 4, T1, "32"}},
	}
	for _, op := range []string{"sd", "ld", "sw", "lw"} {
		for _, m := range memCases[op] {
			var k string
			switch m.kind {
			case "sp":
				k = fmt.Sprintf("c.%ssp %s,%d(sp)", op, m.r, m.off)
			case "c":
				k = fmt.Sprintf("c.%s %s,%d(%s)", op, m.r, m.off, m.base)
			default:
				k = fmt.Sprintf("%s %s,%d(%s)", op, m.r, m.off, m.base)
			}
			var form string
			var emit func(*asm)
			switch op {
			case "sd":
				form, emit = fmt.Sprintf("sd(%s, %d, %s)", m.base, m.off, m.r), func(a *asm) { a.sd(m.base, m.off, m.r) }
			case "sw":
				form, emit = fmt.Sprintf("sw(%s, %d, %s)", m.base, m.off, m.r), func(a *asm) { a.sw(m.base, m.off, m.r) }
			case "ld":
				form, emit = fmt.Sprintf("ld(%s, %d, %s)", m.r, m.off, m.base), func(a *asm) { a.ld(m.r, m.off, m.base) }
			case "lw":
				form, emit = fmt.Sprintf("lw(%s, %d, %s)", m.r, m.off, m.base), func(a *asm) { a.lw(m.r, m.off, m.base) }
			}
			add(formCase{form: form, emit: do(emit), kern: []string{k}})
		}
	}

	// Emitted directly, never compressed: nop, beq, bne, auipc.
	add(formCase{form: "nop()", emit: do((*asm).nop), kern: []string{"addi zero,zero,0"}, src: []string{"nop"}})
	for _, r := range []struct {
		bne    bool
		rs1    Reg
		off    int32
		hasAlt bool
	}{
		{false, A0, 12, true}, {false, A0, 20, true}, {false, A0, 254, true}, {false, A0, -256, true},
		{false, A0, 256, false}, {false, A0, -4096, false}, {false, A0, 4094, false},
		{true, T1, 36, false}, {true, T1, 4094, false}, {true, A0, 100, true}, {true, S1, -2, true},
	} {
		op, f := "beq", (*asm).beq
		if r.bne {
			op, f = "bne", (*asm).bne
		}
		add(formCase{form: fmt.Sprintf("%s(%s, zero, %d)", op, r.rs1, r.off), emit: do(func(a *asm) { f(a, r.rs1, Zero, r.off) }),
			kern: []string{fmt.Sprintf("%s %s,zero,.%+d", op, r.rs1, r.off)}})
	}
	for _, r := range []struct {
		rd  Reg
		imm int32
	}{{T1, 0}, {T0, 0}, {T1, -1}, {T1, 0x7ffff}, {T1, -0x80000}, {T1, 0x812}} {
		add(formCase{form: fmt.Sprintf("auipc(%s, %d)", r.rd, r.imm), emit: do(func(a *asm) { a.auipc(r.rd, r.imm) }),
			kern: []string{fmt.Sprintf("auipc %s,%#x", r.rd, uint32(r.imm)&0xfffff)}})
	}

	// emit_call and emit_jump_and_link: jal within ±1 MiB when fixed and non-zero,
	// else auipc t1 + jalr; the sizing pass always takes auipc+jalr with offset 0.
	for _, r := range []struct {
		off    int64
		fixed  bool
		sizing bool
	}{
		{4, true, false}, {2, true, false}, {-2, true, false}, {0x7fffe, true, false}, {0xffffe, true, false},
		{-0x100000, true, false}, {0x100000, true, false}, {-0x100002, true, false}, {0, true, false},
		{0x7ffff7fe, true, false}, {-0x80000800, true, false}, {0x12344, true, false}, {0x81e2a10, true, false},
		{0x800, false, false}, {0xfff, false, false}, {0x1800, false, false}, {-0x7f2bd5b0, true, false},
		{4, false, false}, {0x1000, true, true}, {8, true, true},
	} {
		k := auipcJalr(RA, r.off)
		if r.sizing {
			k = auipcJalr(RA, 0)
		} else if r.off != 0 && r.fixed && r.off >= -1<<20 && r.off < 1<<20 {
			k = []string{fmt.Sprintf("jal ra,.%+d", r.off)}
		}
		form := fmt.Sprintf("call(pc%+#x, fixed=%v)", r.off, r.fixed)
		if r.sizing {
			form += " sizing"
		}
		add(formCase{form: form, sizing: r.sizing, kern: k,
			emit: func(a *asm) error { return a.call(caseBase+uint64(r.off), r.fixed) }})
	}
	// gen_jump_or_nops: bpf_arch_text_poke's call (link t0) and jump (link zero).
	for _, r := range []struct {
		rd  Reg
		off int64
	}{{T0, 0x1000}, {T0, -0x8123456}, {Zero, 0x40}, {Zero, -0x800}} {
		add(formCase{form: fmt.Sprintf("jumpAndLink(%s, %+#x, fixed=false)", r.rd, r.off), kern: auipcJalr(r.rd, r.off),
			emit: func(a *asm) error { return a.jumpAndLink(r.rd, r.off, false) }})
	}

	// emit_imm: the spec's examples, the boundaries of each branch and of c.li/c.lui.
	for _, r := range []struct {
		rd   Reg
		v    uint64
		kern string
	}{
		{T1, 2, "c.li t1,2"},
		{T1, 0x1234, "c.lui t1,0x1; addiw t1,t1,564"},
		{T1, 0xffffffff80a1b2c0, "lui t1,0x80a1b; addiw t1,t1,704"},
		{A0, 0xffffffc6000a1000, "lui a0,0xfc600; addiw a0,a0,161; c.slli a0,12"},
		{A0, 0xffffffd80a3b4c00, "lui a0,0xfd80a; addiw a0,a0,949; c.slli a0,12; addi a0,a0,-1024"},
		{A0, 0xffffffff7800c400, "lui a0,0xfffde; c.addiw a0,3; c.slli a0,14; addi a0,a0,1024"},
		{A0, 0xffffaf8001234560, "addi a0,zero,-161; c.slli a0,25; addi a0,a0,1165; c.slli a0,14; addi a0,a0,1376"},
		{A0, 0xff60000001234560, "c.li a0,-5; c.slli a0,39; addi a0,a0,1165; c.slli a0,14; addi a0,a0,1376"},
		{T1, 0x8000000000000002, "c.li t1,-1; c.slli t1,63; c.addi t1,2"},
		{A0, maxCountImm, "lui a0,0x7fff; addiw a0,a0,2047; c.slli a0,12; addi a0,a0,2047; c.slli a0,12; addi a0,a0,2047; c.slli a0,12; addi a0,a0,2047"},
		{A0, 0x12345000, "lui a0,0x12345; c.addiw a0,0"},
		{A0, 0, "c.li a0,0"},
		{A0, 0xffffffffffffffff, "c.li a0,-1"},
		{A0, 31, "c.li a0,31"},
		{A0, 32, "addi a0,zero,32"},
		{A0, 0xffffffffffffffe0, "c.li a0,-32"},
		{A0, 0xffffffffffffffdf, "addi a0,zero,-33"},
		{A0, 2047, "addi a0,zero,2047"},
		{A0, 2048, "c.lui a0,0x1; addiw a0,a0,-2048"},
		{A0, 0xfffffffffffff800, "addi a0,zero,-2048"},
		{A0, 0xfffffffffffff7ff, "c.lui a0,0xfffff; addiw a0,a0,2047"},
		{A0, 0x7fffffff, "lui a0,0x80000; c.addiw a0,-1"},
		{A0, 0xffffffff80000000, "lui a0,0x80000; c.addiw a0,0"},
		{A0, 0x80000000, "c.li a0,1; c.slli a0,31"},
		{A0, 0x100000000, "c.li a0,1; c.slli a0,32"},
		{A0, 0xffffffff, "c.li a0,1; c.slli a0,32; c.addi a0,-1"},
		{T1, 0x1234567, "lui t1,0x1234; addiw t1,t1,1383"},
		{A0, 0x1f000, "c.lui a0,0x1f; c.addiw a0,0"},
		{A0, 0x20000, "lui a0,0x20; c.addiw a0,0"},
		{A0, 0xfffffffffffe0000, "c.lui a0,0xfffe0; c.addiw a0,0"},
		{A0, 0xfffffffffffdf000, "lui a0,0xfffdf; c.addiw a0,0"},
		{T1, 0x302, "addi t1,zero,770"},
		{T1, 0x8000000000000302, "c.li t1,-1; c.slli t1,63; addi t1,t1,770"},
		{T1, 0x8000000000000003, "c.li t1,-1; c.slli t1,63; c.addi t1,3"},
		{A1, 0xffffffc600123400, "lui a1,0xfc600; addiw a1,a1,291; c.slli a1,12; addi a1,a1,1024"},
	} {
		add(formCase{form: fmt.Sprintf("imm(%s, %#x)", r.rd, r.v), emit: do(func(a *asm) { a.imm(r.rd, int64(r.v)) }),
			kern: strings.Split(r.kern, "; ")})
	}
	add(formCase{form: "storeStackImm64(t1, -16, 3)", emit: do(func(a *asm) { a.storeStackImm64(T1, -16, 3) }),
		kern: []string{"c.li t1,3", "sd t1,-16(s0)"}})
	add(formCase{form: "storeStackImm64(t1, -24, 0xffffffff80a1b2c0)", emit: do(func(a *asm) { a.storeStackImm64(T1, -24, 0xffffffff80a1b2c0) }),
		kern: []string{"lui t1,0x80a1b", "addiw t1,t1,704", "sd t1,-24(s0)"}})

	// sign_extend (7.x struct_ops returns) over emit_sext*/emit_mv, with and without Zbb.
	for _, r := range []struct {
		size   int
		signed bool
		zbb    bool
		kern   string
		src    string
	}{
		{1, true, true, "sext.b a0,a5", ""},
		{1, true, false, "slli a0,a5,56; c.srai a0,56", ""},
		{2, true, true, "sext.h a0,a5", ""},
		{2, true, false, "slli a0,a5,48; c.srai a0,48", ""},
		{4, true, false, "addiw a0,a5,0", "sext.w a0,a5"},
		{4, false, true, "addiw a0,a5,0", "sext.w a0,a5"},
		{8, true, false, "c.mv a0,a5", ""},
		{8, false, false, "c.mv a0,a5", ""},
		{1, false, false, "c.mv a0,a5", ""},
		{2, false, true, "c.mv a0,a5", ""},
	} {
		fc := formCase{form: fmt.Sprintf("signExtend(a0, a5, %d, signed=%v) zbb=%v", r.size, r.signed, r.zbb), zbb: r.zbb,
			emit: func(a *asm) error { return a.signExtend(A0, A5, r.size, r.signed) }, kern: strings.Split(r.kern, "; ")}
		if r.src != "" {
			fc.src = []string{r.src}
		}
		add(fc)
	}
	add(formCase{form: "zexth(a0, a5) zbb=true", zbb: true, emit: do(func(a *asm) { a.zexth(A0, A5) }), kern: []string{"zext.h a0,a5"}})
	add(formCase{form: "zexth(a0, a5) zbb=false", emit: do(func(a *asm) { a.zexth(A0, A5) }), kern: []string{"slli a0,a5,48", "c.srli a0,48"}})
	add(formCase{form: "sextb(t1, t1) zbb=false", emit: do(func(a *asm) { a.sextb(T1, T1) }), kern: []string{"c.slli t1,56", "srai t1,t1,56"}})
	add(formCase{form: "sextw(a0, a0)", emit: do(func(a *asm) { a.sextw(A0, A0) }), kern: []string{"c.addiw a0,0"}})

	// The trampoline's frame set-up and tear-down (__arch_prepare_bpf_trampoline, not
	// struct_ops) around the sizes where a compressed form stops fitting: c.addi16sp
	// takes -512 but not +512, c.sdsp/c.ldsp offsets below 512, c.addi4spn below 1024.
	for _, r := range []struct {
		s        int32
		pro, epi string
	}{
		{48, "c.addi16sp sp,-48; c.sdsp t0,40(sp); c.sdsp s0,32(sp); c.addi4spn s0,sp,48",
			"c.ldsp t0,40(sp); c.ldsp s0,32(sp); c.addi16sp sp,48"},
		{496, "c.addi16sp sp,-496; c.sdsp t0,488(sp); c.sdsp s0,480(sp); c.addi4spn s0,sp,496",
			"c.ldsp t0,488(sp); c.ldsp s0,480(sp); c.addi16sp sp,496"},
		{512, "c.addi16sp sp,-512; c.sdsp t0,504(sp); c.sdsp s0,496(sp); c.addi4spn s0,sp,512",
			"c.ldsp t0,504(sp); c.ldsp s0,496(sp); addi sp,sp,512"},
		{528, "addi sp,sp,-528; sd t0,520(sp); sd s0,512(sp); c.addi4spn s0,sp,528",
			"ld t0,520(sp); ld s0,512(sp); addi sp,sp,528"},
		{1008, "addi sp,sp,-1008; sd t0,1000(sp); sd s0,992(sp); c.addi4spn s0,sp,1008",
			"ld t0,1000(sp); ld s0,992(sp); addi sp,sp,1008"},
		{1024, "addi sp,sp,-1024; sd t0,1016(sp); sd s0,1008(sp); addi s0,sp,1024",
			"ld t0,1016(sp); ld s0,1008(sp); addi sp,sp,1024"},
	} {
		add(formCase{form: fmt.Sprintf("prologue(S=%d)", r.s), kern: strings.Split("c.addi16sp sp,-16; c.sdsp ra,8(sp); c.sdsp s0,0(sp); c.addi4spn s0,sp,16; "+r.pro, "; "),
			emit: do(func(a *asm) {
				a.addi(SP, SP, -16)
				a.sd(SP, 8, RA)
				a.sd(SP, 0, FP)
				a.addi(FP, SP, 16)
				a.addi(SP, SP, -r.s)
				a.sd(SP, r.s-8, T0)
				a.sd(SP, r.s-16, FP)
				a.addi(FP, SP, r.s)
			})})
		add(formCase{form: fmt.Sprintf("epilogue(S=%d)", r.s), kern: strings.Split(r.epi+"; c.ldsp ra,8(sp); c.ldsp s0,0(sp); c.addi16sp sp,16; c.jr t0", "; "),
			emit: do(func(a *asm) {
				a.ld(T0, r.s-8, SP)
				a.ld(FP, r.s-16, SP)
				a.addi(SP, SP, r.s)
				a.ld(RA, 8, SP)
				a.ld(FP, 0, SP)
				a.addi(SP, SP, 16)
				a.jalr(Zero, T0, 0)
			})})
	}
	return c
}

// knownDiffs are the forms where the kernel's helper and GNU as, given the plain
// instruction, choose different encodings of the same instruction (TestFormsVsGNUAs
// checks that both decode alike).
var knownDiffs = map[string]bool{
	// emit_addi tries c.addi16sp before c.addi: as picks c.addi sp,imm for -32..31.
	"addi(sp, sp, -16)": true, "addi(sp, sp, 16)": true, "addi(sp, sp, -32)": true,
	// emit_addi never compresses an immediate of 0: as writes c.mv rd,rs.
	"addi(sp, sp, 0)": true, "addi(s0, sp, 0)": true, "addi(a0, a0, 0)": true,
	// emit_addi has no c.li case (emit_li has): as writes addi rd,zero,imm as c.li.
	"addi(a0, zero, 5)": true,
	// rv_nop() is emitted directly, 4 bytes: as writes c.nop.
	"nop()": true, "addi(zero, zero, 0)": true,
	// rv_beq/rv_bne are emitted directly: as writes c.beqz/c.bnez for a creg operand
	// within ±256 bytes.
	"beq(a0, zero, 12)": true, "beq(a0, zero, 20)": true, "beq(a0, zero, 254)": true,
	"beq(a0, zero, -256)": true, "bne(a0, zero, 100)": true, "bne(s1, zero, -2)": true,
	// The frame's addi sp,sp,-16 and addi sp,sp,16: c.addi16sp again.
	"prologue(S=48)": true, "prologue(S=496)": true, "prologue(S=512)": true,
	"prologue(S=528)": true, "prologue(S=1008)": true, "prologue(S=1024)": true,
	"epilogue(S=48)": true, "epilogue(S=496)": true, "epilogue(S=512)": true,
	"epilogue(S=528)": true, "epilogue(S=1008)": true, "epilogue(S=1024)": true,
}
