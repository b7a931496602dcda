package main

import (
	"encoding/binary"
	"fmt"

	"github.com/trampjit/trampjit/kernel/wire"
)

// riscv64 decoding: only the forms the trampoline JIT and ftrace write
// (arch/riscv/net/bpf_jit.h, arch/riscv/kernel/ftrace.c), by their encodings in the
// RISC-V unprivileged ISA (RV64I, the C extension).

const (
	rvRA = 1  // x1
	rvT0 = 5  // x5
	rvT1 = 6  // x6
	rvA0 = 10 // x10
)

// rvLen is the length of the instruction starting with halfword h: 4 when its low two bits
// are 11, else 2 (a compressed one). The JIT emits no longer forms.
func rvLen(h uint16) int {
	if h&3 == 3 {
		return 4
	}
	return 2
}

func sext(v uint64, bits uint) uint64 { return uint64(int64(v<<(64-bits)) >> (64 - bits)) }

// rvAuipcJalr decodes "auipc rA, hi; jalr rd, lo(rA)" at b: the target relative to the
// auipc, the link register, and the auipc's register.
func rvAuipcJalr(b []byte) (off int64, link, scratch uint32, ok bool) {
	if len(b) < 8 {
		return 0, 0, 0, false
	}
	w1, w2 := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
	if w1&0x7f != 0x17 || w2&0x707f != 0x67 { // auipc; jalr (funct3 0)
		return 0, 0, 0, false
	}
	ra := (w1 >> 7) & 31
	if (w2>>15)&31 != ra {
		return 0, 0, 0, false
	}
	off = int64(int32(w1&0xfffff000)) + int64(int32(w2)>>20)
	return off, (w2 >> 7) & 31, ra, true
}

// rvPatchSite finds the call into a trampoline among the first instructions: "auipc t0;
// jalr t0" at a kernel function's entry (ftrace_make_call, arch/riscv/kernel/ftrace.c; with
// DYNAMIC_FTRACE_WITH_CALL_OPS it calls ftrace_caller, which jumps to ops->direct_call), or
// "auipc t1; jalr t0" at a JITed program's entry (bpf_arch_text_poke,
// arch/riscv/net/bpf_jit_comp64.c). Either way t0 is the link, the return into the function
// 8 bytes past the entry.
func rvPatchSite(site []byte, fn uint64) (ip, target uint64, kind siteKind, err error) {
	for i := 0; i+8 <= len(site) && i <= 8; i += 4 {
		if off, link, _, ok := rvAuipcJalr(site[i:]); ok {
			ip = fn + uint64(i)
			kind = siteCall
			if link == 0 {
				kind = siteJmp
			}
			return ip, ip + uint64(off), kind, nil
		}
	}
	n := min(len(site), 16)
	if n >= 8 && binary.LittleEndian.Uint32(site[4:]) == 0x00000013 {
		return 0, 0, "", fmt.Errorf("the patch site %#x holds no jalr (nop at +4): nothing is attached (bytes % x)", fn, site[:n])
	}
	return 0, 0, "", fmt.Errorf("no auipc; jalr in the first instructions at %#x (bytes % x)", fn, site[:n])
}

// rvIsReturn reports the trampoline's last instruction: jr ra (back to the traced function's
// caller, with BPF_TRAMP_F_SKIP_FRAME) or jr t0 (into the traced function), compressed or not.
func rvIsReturn(b []byte) bool {
	switch {
	case len(b) >= 4 && rvLen(binary.LittleEndian.Uint16(b)) == 4:
		w := binary.LittleEndian.Uint32(b)
		return w == 0x00008067 || w == 0x00028067 // jalr zero, 0(ra) / 0(t0)
	case len(b) >= 2:
		h := binary.LittleEndian.Uint16(b)
		return h == 0x8082 || h == 0x8282 // c.jr ra / c.jr t0
	}
	return false
}

// rvCodeEnd is the length through the first return. The image is sized by a pessimistic
// pass (arch_bpf_trampoline_size) and the bytes after the code are the JIT's scratch buffer,
// not fill, so the return, not a fill pattern, ends it; an all-zero halfword (the pack's
// fill, bpf_fill_ill_insns) before any return means the read missed the code.
func rvCodeEnd(b []byte) (int, error) {
	for i := 0; i+2 <= len(b); {
		h := binary.LittleEndian.Uint16(b[i:])
		if h == 0 {
			return 0, fmt.Errorf("an all-zero halfword at +%#x before any jr ra / jr t0", i)
		}
		n := rvLen(h)
		if i+n > len(b) {
			break
		}
		if rvIsReturn(b[i:]) {
			return i + n, nil
		}
		i += n
	}
	return 0, fmt.Errorf("no jr ra or jr t0 in the first %d bytes of the image", len(b))
}

// rvCalls follows the constants emit_imm builds (lui, addi(w), slli and their compressed
// forms, auipc) and returns each call (jal ra / jalr ra) with a0 at the call.
func rvCalls(code []byte, base uint64) []call {
	var out []call
	var reg [32]uint64
	var known [32]bool
	set := func(rd uint32, v uint64, ok bool) {
		if rd != 0 {
			reg[rd], known[rd] = v, ok
		}
	}
	get := func(r uint32) (uint64, bool) {
		if r == 0 {
			return 0, true
		}
		return reg[r], known[r]
	}
	arg0 := func() uint64 {
		if known[rvA0] {
			return reg[rvA0]
		}
		return 0
	}
	clobber := func() { known = [32]bool{} }
	for i := 0; i+2 <= len(code); {
		h := binary.LittleEndian.Uint16(code[i:])
		pc := base + uint64(i)
		if rvLen(h) == 2 {
			rd := uint32(h>>7) & 31
			imm6 := sext(uint64(h>>12&1)<<5|uint64(h>>2&31), 6)
			switch {
			case h&0xe003 == 0x4001: // c.li
				set(rd, imm6, true)
			case h&0xe003 == 0x6001 && rd != 2: // c.lui
				set(rd, imm6<<12, true)
			case h&0xe003 == 0x0001: // c.addi
				v, ok := get(rd)
				set(rd, v+imm6, ok)
			case h&0xe003 == 0x2001: // c.addiw
				v, ok := get(rd)
				set(rd, sext(v+imm6, 32), ok)
			case h&0xe003 == 0x0002: // c.slli
				v, ok := get(rd)
				set(rd, v<<(imm6&63), ok)
			case h&0xf003 == 0x8002 && h>>2&31 != 0: // c.mv
				v, ok := get(uint32(h>>2) & 31)
				set(rd, v, ok)
			case h&0xf07f == 0x9002 && rd != 0: // c.jalr
				v, _ := get(rd)
				out = append(out, call{v, arg0()})
				clobber()
			default:
				// Stores, loads into other registers: a load makes its register unknown.
				if h&0xe003 == 0x6002 || h&0xe003 == 0x4002 { // c.ldsp, c.lwsp
					set(rd, 0, false)
				}
				if h&0xe003 == 0x6000 || h&0xe003 == 0x4000 { // c.ld, c.lw
					set(uint32(h>>2)&7+8, 0, false)
				}
			}
			i += 2
			continue
		}
		if i+4 > len(code) {
			break
		}
		w := binary.LittleEndian.Uint32(code[i:])
		rd, rs1, f3 := (w>>7)&31, (w>>15)&31, (w>>12)&7
		imm12 := sext(uint64(w>>20), 12)
		switch op := w & 0x7f; {
		case op == 0x37: // lui
			set(rd, sext(uint64(w&0xfffff000), 32), true)
		case op == 0x17: // auipc
			set(rd, pc+sext(uint64(w&0xfffff000), 32), true)
		case op == 0x13 && f3 == 0: // addi
			v, ok := get(rs1)
			set(rd, v+imm12, ok)
		case op == 0x13 && f3 == 1: // slli
			v, ok := get(rs1)
			set(rd, v<<((w>>20)&63), ok)
		case op == 0x1b && f3 == 0: // addiw
			v, ok := get(rs1)
			set(rd, sext(v+imm12, 32), ok)
		case op == 0x6f: // jal
			off := sext(uint64(w>>31)<<20|uint64(w>>12&0xff)<<12|uint64(w>>20&1)<<11|uint64(w>>21&0x3ff)<<1, 21)
			if rd == rvRA {
				out = append(out, call{pc + off, arg0()})
				clobber()
			}
		case op == 0x67 && f3 == 0: // jalr
			v, _ := get(rs1)
			if rd == rvRA {
				out = append(out, call{v + imm12, arg0()})
				clobber()
			}
		default:
			if op == 0x03 || op == 0x33 || op == 0x3b || op == 0x13 || op == 0x1b { // loads, ALU
				set(rd, 0, false)
			}
		}
		i += 4
	}
	return out
}

// rvLocate finds a kernel function's image from its patch site. The site calls the image
// itself when the trampoline's ftrace_ops is the function's only ftrace user (6.12: generic
// ftrace hands ftrace_make_call the direct call, kernel/trace/ftrace.c); otherwise, and
// always with DYNAMIC_FTRACE_WITH_CALL_OPS (7.x: ftrace_caller is in jalr range, the image is
// not), it calls ftrace_caller, and the image is ops->direct_call, read through the
// ftrace_ops pointer the 8 bytes before the function hold (call-ops). That pointer is only
// believed when the trampoline_table walk agrees (rvOpsAgree): without call-ops those bytes
// are the previous function's code.
func (c *capturer) rvLocate(r *wire.CaptureResult, target uint64) (viaSite, opsVia uint64) {
	if target == 0 {
		return 0, c.rvOpsLiteral(r)
	}
	name, named := c.ks.byAddr[target]
	if !named {
		r.Locate = "riscv64 auipc t0; jalr t0 at the patch site calls the image"
		return target, 0
	}
	r.Checks = append(r.Checks, "auipc t0; jalr t0 at the patch site calls "+name)
	return 0, c.rvOpsLiteral(r)
}

func (c *capturer) rvOpsLiteral(r *wire.CaptureResult) uint64 {
	if c.off.opsErr != nil {
		r.Checks = append(r.Checks, "ops literal: "+c.off.opsErr.Error())
		return 0
	}
	ops, err := c.mem.u64(r.Addr - 8)
	if err == nil && ops != 0 {
		var dc uint64
		if dc, err = c.mem.u64(ops + uint64(c.off.opsDirectCall)); err == nil && dc != 0 {
			r.Locate = "riscv64 ftrace_ops.direct_call via the ops pointer before the function (CALL_OPS)"
			return dc
		}
	}
	if err != nil {
		r.Checks = append(r.Checks, "ops literal: "+err.Error())
	}
	return 0
}

// rvOpsAgree is the image when the ops literal's direct_call is the trampoline's image;
// otherwise the walk's, and the literal was no ftrace_ops pointer.
func rvOpsAgree(r *wire.CaptureResult, opsVia, walked uint64) uint64 {
	if opsVia == walked {
		return opsVia
	}
	r.Checks = append(r.Checks, fmt.Sprintf("the 8 bytes before the function lead to %#x, not the trampoline's image: no ops literal", opsVia))
	r.Locate = ""
	return 0
}
