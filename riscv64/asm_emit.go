package riscv64

import (
	"encoding/binary"
	"fmt"

	"github.com/trampjit/trampjit/jit"
)

// The forms a trampoline is made of (__arch_prepare_bpf_trampoline, invoke_bpf_prog,
// store_args, restore_args, restore_stack_args, emit_store_stack_imm64 and the 7.x
// fsession code in bpf_jit_comp64.c), by helper:
//
//	addi   frame: sp,sp,±16 and ±S (c.addi16sp), s0,sp,16 and S (c.addi4spn);
//	       &run_ctx and ctx: a1/a2/a0,s0,-off (4 bytes: rs is s0, not sp)
//	sd/ld  the frame's ra/s0/t0 at small sp offsets (c.sdsp/c.ldsp); every slot at a
//	       negative s0 offset (4 bytes); stack arguments ld t1,16+8j(s0) (t1 is no creg)
//	imm    ip, cookie, prog, im (the sizing pass loads maxCountImm), insnsi, func_meta
//	li     6.12's argument count (c.li t1,n); storeStackImm64 is 7.x's imm+sd
//	call   the enter/exit helpers, the program, __bpf_tramp_enter/exit, the original
//	mv     s1,a0 and a1,s1 (c.mv); nop placeholders, patched to beq a0,zero / bne
//	       t1,zero with patch(rvBeq/rvBne); two nops after the original's call
//	jalr   the return: zero,ra or zero,t0 (c.jr); word: struct_ops' kCFI hash
//	signExtend  7.x struct_ops return (sext.b/sext.h with Zbb, else slli+srai; sext.w; mv)
//
// jumpAndLink(t0 or zero, off, false) is gen_jump_or_nops, bpf_arch_text_poke's patch.

// asm is the kernel's struct rv_jit_context as the trampoline JIT uses it: the bytes
// emitted so far, the address they will run at (ro_insns) and the configuration that
// decides the instruction forms.
//
// Its methods are the emit_* helpers of arch/riscv/net/bpf_jit.h and
// bpf_jit_comp64.c, with the same choice between a compressed and a 32-bit form. That
// choice is the kernel's, not an assembler's; where they differ the helper says so.
type asm struct {
	b    []byte
	base uint64 // address of b[0] in the final image (ctx->ro_insns)

	// rvc is CONFIG_RISCV_ISA_C (rvc_enabled()): Debian's riscv64 kernels set it.
	rvc bool
	// zbb is rvzbb_enabled(): CONFIG_RISCV_ISA_ZBB and the CPU has Zbb (a boot-time
	// decision; only emit_sextb/emit_sexth/emit_zexth look at it).
	zbb bool
	// sizing is the kernel's sizing pass (ctx->insns == NULL): emit_call computes no
	// offset, so every call takes the auipc+jalr form.
	sizing bool
}

// eRANGE is the errno emit_jump_and_link returns for an unreachable target.
const eRANGE jit.Errno = 34

// off is the current offset in bytes (ninsns_rvoff(ctx->ninsns)).
func (a *asm) off() int { return len(a.b) }

// pc is the final address of the next instruction.
func (a *asm) pc() uint64 { return a.base + uint64(len(a.b)) }

// emit appends a 32-bit instruction (emit), as two little-endian halfwords.
func (a *asm) emit(insn uint32) { a.b = binary.LittleEndian.AppendUint32(a.b, insn) }

// emitc appends a compressed instruction (emitc); only helpers that checked a.rvc call it.
func (a *asm) emitc(insn uint16) { a.b = binary.LittleEndian.AppendUint16(a.b, insn) }

// word emits a data word in the instruction stream: emit_kcfi's hash.
func (a *asm) word(w uint32) { a.emit(w) }

// patch overwrites the 32-bit placeholder at byte offset at, as the kernel rewrites
// its reserved nops with beq/bne once the target is known.
func (a *asm) patch(at int, insn uint32) { binary.LittleEndian.PutUint32(a.b[at:], insn) }

// nop is emit(rv_nop()): always the 4-byte addi zero,zero,0 (an assembler's "nop"
// with RVC is the 2-byte c.nop). Placeholders must be 4 bytes to take beq/bne later.
func (a *asm) nop() { a.emit(rvNop()) }

// beq and bne are emitted directly (emit(rv_beq(...))), never as c.beqz/c.bnez,
// which an assembler would pick for a creg operand and a short offset.
func (a *asm) beq(rs1, rs2 Reg, off int32) { a.emit(rvBeq(rs1, rs2, off)) }
func (a *asm) bne(rs1, rs2 Reg, off int32) { a.emit(rvBne(rs1, rs2, off)) }

// auipc, jal and a jalr with an explicit form are emitted directly.
func (a *asm) auipc(rd Reg, imm20 int32)       { a.emit(rvAuipc(rd, imm20)) }
func (a *asm) jal(rd Reg, off int32)           { a.emit(rvJal(rd, off)) }
func (a *asm) jalr32(rd, rs1 Reg, imm int32)   { a.emit(rvJalr(rd, rs1, imm)) }
func (a *asm) slli32(rd, rs1 Reg, sh int32)    { a.emit(rvSlli(rd, rs1, sh)) }
func (a *asm) addi32(rd, rs1 Reg, imm int32)   { a.emit(rvAddi(rd, rs1, imm)) }
func (a *asm) addiw32(rd, rs1 Reg, imm int32)  { a.emit(rvAddiw(rd, rs1, imm)) }
func (a *asm) add32(rd, rs1, rs2 Reg)          { a.emit(rvAdd(rd, rs1, rs2)) }
func (a *asm) ld32(rd Reg, off int32, rs1 Reg) { a.emit(rvLd(rd, off, rs1)) }
func (a *asm) sd32(rs1 Reg, off int32, rs2 Reg) {
	a.emit(rvSd(rs1, off, rs2))
}

// jalr is emit_jalr: c.jalr rs for jalr ra,0(rs), c.jr rs for jalr zero,0(rs).
func (a *asm) jalr(rd, rs Reg, imm int32) {
	switch {
	case a.rvc && rd == RA && rs != Zero && imm == 0:
		a.emitc(rvcJalr(rs))
	case a.rvc && rd == Zero && rs != Zero && imm == 0:
		a.emitc(rvcJr(rs))
	default:
		a.emit(rvJalr(rd, rs, imm))
	}
}

// mv is emit_mv: c.mv unless either register is zero (then addi rd,rs,0; an assembler
// would write "mv rd,zero" as c.li rd,0).
func (a *asm) mv(rd, rs Reg) {
	if a.rvc && rd != Zero && rs != Zero {
		a.emitc(rvcMv(rd, rs))
		return
	}
	a.emit(rvAddi(rd, rs, 0))
}

// add is emit_add: c.add when rd == rs1 and neither is zero.
func (a *asm) add(rd, rs1, rs2 Reg) {
	if a.rvc && rd != Zero && rd == rs1 && rs2 != Zero {
		a.emitc(rvcAdd(rd, rs2))
		return
	}
	a.emit(rvAdd(rd, rs1, rs2))
}

// addi is emit_addi. The order of its tests is the kernel's: c.addi16sp is tried
// first, so an sp adjustment of ±16 or -32 is c.addi16sp (0x717d for -16) where GNU as
// and LLVM pick c.addi sp,imm (0x1141); both mean addi sp,sp,imm.
func (a *asm) addi(rd, rs Reg, imm int32) {
	v := int64(imm)
	switch {
	case a.rvc && rd == SP && rs == SP && is10bInt(v) && imm != 0 && imm&0xf == 0:
		a.emitc(rvcAddi16sp(imm))
	case a.rvc && isCReg(rd) && rs == SP && is10bUint(v) && imm&3 == 0 && imm != 0:
		a.emitc(rvcAddi4spn(rd, imm))
	case a.rvc && rd != Zero && rd == rs && imm != 0 && is6bInt(v):
		a.emitc(rvcAddi(rd, imm))
	default:
		a.emit(rvAddi(rd, rs, imm))
	}
}

// li is emit_li: c.li for -32..31, else addi rd,zero,imm.
func (a *asm) li(rd Reg, imm int32) {
	if a.rvc && rd != Zero && is6bInt(int64(imm)) {
		a.emitc(rvcLi(rd, imm))
		return
	}
	a.emit(rvAddi(rd, Zero, imm))
}

// lui is emit_lui; imm is the signed upper value emit_imm computed, so c.lui takes
// -32..31 (not 0) and rd other than zero and sp.
func (a *asm) lui(rd Reg, imm int32) {
	if a.rvc && rd != Zero && rd != SP && is6bInt(int64(imm)) && imm != 0 {
		a.emitc(rvcLui(rd, imm))
		return
	}
	a.emit(rvLui(rd, imm))
}

// addiw is emit_addiw: c.addiw rd,imm when rd == rs, imm 0 included (sext.w).
func (a *asm) addiw(rd, rs Reg, imm int32) {
	if a.rvc && rd != Zero && rd == rs && is6bInt(int64(imm)) {
		a.emitc(rvcAddiw(rd, imm))
		return
	}
	a.emit(rvAddiw(rd, rs, imm))
}

// slli is emit_slli: c.slli when rd == rs and 0 < sh < 64.
func (a *asm) slli(rd, rs Reg, sh int32) {
	if a.rvc && rd != Zero && rd == rs && sh != 0 && uint32(sh) < 64 {
		a.emitc(rvcSlli(rd, sh))
		return
	}
	a.emit(rvSlli(rd, rs, sh))
}

// srli is emit_srli: c.srli for a creg rd == rs.
func (a *asm) srli(rd, rs Reg, sh int32) {
	if a.rvc && isCReg(rd) && rd == rs && sh != 0 && uint32(sh) < 64 {
		a.emitc(rvcSrli(rd, sh))
		return
	}
	a.emit(rvSrli(rd, rs, sh))
}

// srai is emit_srai: c.srai for a creg rd == rs.
func (a *asm) srai(rd, rs Reg, sh int32) {
	if a.rvc && isCReg(rd) && rd == rs && sh != 0 && uint32(sh) < 64 {
		a.emitc(rvcSrai(rd, sh))
		return
	}
	a.emit(rvSrai(rd, rs, sh))
}

// sd is emit_sd(rs1, off, rs2): c.sdsp for sp-relative 0..504, else c.sd for creg
// operands and 0..248, else sd. Every s0-relative slot of a trampoline is at a
// negative offset, so those stores are always 4 bytes.
func (a *asm) sd(rs1 Reg, off int32, rs2 Reg) {
	v := int64(off)
	switch {
	case a.rvc && rs1 == SP && is9bUint(v) && off&7 == 0:
		a.emitc(rvcSdsp(off, rs2))
	case a.rvc && isCReg(rs1) && isCReg(rs2) && is8bUint(v) && off&7 == 0:
		a.emitc(rvcSd(rs1, off, rs2))
	default:
		a.emit(rvSd(rs1, off, rs2))
	}
}

// ld is emit_ld(rd, off, rs1): c.ldsp (rd not zero), c.ld, or ld, as sd.
func (a *asm) ld(rd Reg, off int32, rs1 Reg) {
	v := int64(off)
	switch {
	case a.rvc && rs1 == SP && rd != Zero && is9bUint(v) && off&7 == 0:
		a.emitc(rvcLdsp(rd, off))
	case a.rvc && isCReg(rd) && isCReg(rs1) && is8bUint(v) && off&7 == 0:
		a.emitc(rvcLd(rd, off, rs1))
	default:
		a.emit(rvLd(rd, off, rs1))
	}
}

// sw is emit_sw: c.swsp (0..252), c.sw (creg, 0..124), or sw.
func (a *asm) sw(rs1 Reg, off int32, rs2 Reg) {
	v := int64(off)
	switch {
	case a.rvc && rs1 == SP && is8bUint(v) && off&3 == 0:
		a.emitc(rvcSwsp(off, rs2))
	case a.rvc && isCReg(rs1) && isCReg(rs2) && is7bUint(v) && off&3 == 0:
		a.emitc(rvcSw(rs1, off, rs2))
	default:
		a.emit(rvSw(rs1, off, rs2))
	}
}

// lw is emit_lw: c.lwsp (rd not zero), c.lw, or lw.
func (a *asm) lw(rd Reg, off int32, rs1 Reg) {
	v := int64(off)
	switch {
	case a.rvc && rs1 == SP && rd != Zero && is8bUint(v) && off&3 == 0:
		a.emitc(rvcLwsp(rd, off))
	case a.rvc && isCReg(rd) && isCReg(rs1) && is7bUint(v) && off&3 == 0:
		a.emitc(rvcLw(rd, off, rs1))
	default:
		a.emit(rvLw(rd, off, rs1))
	}
}

// imm is emit_imm (bpf_jit_comp64.c): a signed 32-bit value as lui+addiw (addiw even
// when the low part is 0) or li alone; a wider one as the value without its trailing
// zero bits (recursively), then slli by their count and addi of the low 12 bits.
func (a *asm) imm(rd Reg, val int64) {
	upper := (val + 1<<11) >> 12
	lower := val << 52 >> 52 // the low 12 bits, sign-extended
	if is32bInt(val) {
		if upper == 0 {
			a.li(rd, int32(lower))
			return
		}
		a.lui(rd, int32(upper))
		a.addiw(rd, rd, int32(lower))
		return
	}
	shift := 0
	for upper&1 == 0 { // __ffs(upper); upper != 0 for any value outside 32 bits
		upper >>= 1
		shift++
	}
	a.imm(rd, upper)
	a.slli(rd, rd, int32(shift+12))
	if lower != 0 {
		a.addi(rd, rd, int32(lower))
	}
}

// maxCountImm is RV_MAX_COUNT_IMM, the value for which emit_imm emits the most
// instructions: the sizing pass loads it in place of the trampoline image pointer.
const maxCountImm = 0x7FFF7FF7FF7FF7FF

// storeStackImm64 is emit_store_stack_imm64 (7.x): emit_imm into reg, then sd to
// FP+off.
func (a *asm) storeStackImm64(reg Reg, off int32, v uint64) {
	a.imm(reg, int64(v))
	a.sd(FP, off, reg)
}

// jumpAndLink is emit_jump_and_link: jal when fixed, non-zero and within ±1 MiB,
// else auipc t1 + jalr rd (both always 4 bytes: jalr ra,0(t1) is not turned into
// c.jalr t1 as an assembler would).
func (a *asm) jumpAndLink(rd Reg, off int64, fixed bool) error {
	if off != 0 && fixed && is21bInt(off) {
		a.jal(rd, int32(off))
		return nil
	}
	if !inAuipcJalrRange(off) {
		return jit.Reject(eRANGE, "bpf-jit: target offset %#x is out of range", uint64(off))
	}
	a.auipc(T1, int32((off+1<<11)>>12))
	a.jalr32(rd, T1, int32(off&0xfff))
	return nil
}

// call is emit_call(addr, fixed): jumpAndLink(ra) with the offset from this
// instruction's final address; in the sizing pass (or for addr 0) the offset is 0,
// so the pass reserves auipc+jalr for every call.
func (a *asm) call(addr uint64, fixed bool) error {
	var off int64
	if addr != 0 && !a.sizing {
		off = int64(addr - a.pc())
	}
	return a.jumpAndLink(RA, off, fixed)
}

// sextb, sexth, sextw and zexth are emit_sextb/emit_sexth/emit_sextw/emit_zexth: one
// Zbb instruction when Zbb is on, else a shift pair (the second shift compressed only
// for a creg rd); sext.w is addiw rd,rs,0.
func (a *asm) sextb(rd, rs Reg) {
	if a.zbb {
		a.emit(rvZbbSextB(rd, rs))
		return
	}
	a.slli(rd, rs, 56)
	a.srai(rd, rd, 56)
}

func (a *asm) sexth(rd, rs Reg) {
	if a.zbb {
		a.emit(rvZbbSextH(rd, rs))
		return
	}
	a.slli(rd, rs, 48)
	a.srai(rd, rd, 48)
}

func (a *asm) sextw(rd, rs Reg) { a.addiw(rd, rs, 0) }

func (a *asm) zexth(rd, rs Reg) {
	if a.zbb {
		a.emit(rvZbbZextH(rd, rs))
		return
	}
	a.slli(rd, rs, 48)
	a.srli(rd, rd, 48)
}

// signExtend is sign_extend (bpf_jit_comp64.c, 6.12.53+ and 6.18+): the struct_ops
// return value in rs extended to its BTF size into rd. Unsigned 1- and 2-byte values
// and 8-byte ones are only moved.
func (a *asm) signExtend(rd, rs Reg, size int, signed bool) error {
	if !signed && (size == 1 || size == 2) {
		if rd != rs {
			a.mv(rd, rs)
		}
		return nil
	}
	switch size {
	case 1:
		a.sextb(rd, rs)
	case 2:
		a.sexth(rd, rs)
	case 4:
		a.sextw(rd, rs)
	case 8:
		if rd != rs {
			a.mv(rd, rs)
		}
	default:
		return jit.Reject(jit.EINVAL, "bpf-jit: invalid size %d for sign_extend", size)
	}
	return nil
}

// String describes the configuration, for test names.
func (a *asm) String() string { return fmt.Sprintf("rvc=%v zbb=%v sizing=%v", a.rvc, a.zbb, a.sizing) }
