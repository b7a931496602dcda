package riscv64

import (
	"golang.org/x/arch/riscv64/riscv64asm"

	"github.com/trampjit/trampjit/jit"
)

var _ jit.Commenter = Backend{}

// Comments implements jit.Commenter: what the registers a listing cannot name hold. At the
// patch site the traced function's entry does auipc t0; jalr t0, so t0 is the return into
// the traced function past that site and ra is still the function's own return into its
// caller; the image saves both, returns through t0 (or ra with SKIP_FRAME), and passes ctx,
// &run_ctx and im in a0..a2. Found by decoding img, like the frame's accesses.
func (b Backend) Comments(t *jit.Tramp, img *jit.Image) map[int]string {
	if t.Model == nil {
		return nil
	}
	p, err := ProfileFor(t.Kernel)
	if err != nil {
		return nil
	}
	l, err := Layout(p, t.Model, t.Flags, t.CookieSlots)
	if err != nil {
		return nil
	}
	out := map[int]string{}
	for _, r := range img.Relocs {
		if r.Symbol == "im" {
			out[r.Offset] = "a0: struct bpf_tramp_image *"
		}
	}
	for at := 0; at < len(img.Code); {
		if end, ok := dataEnd(img, at); ok {
			at = end
			continue
		}
		inst, err := riscv64asm.Decode(img.Code[at:])
		if err != nil {
			at += 2
			continue
		}
		if c := comment(inst, l); c != "" {
			out[at] = c
		}
		at += inst.Len
	}
	return out
}

// comment explains one instruction of a trampoline with layout l, or is "".
func comment(inst riscv64asm.Inst, l StackLayout) string {
	r0, _ := inst.Args[0].(riscv64asm.Reg)
	switch inst.Op {
	case riscv64asm.SD, riscv64asm.LD:
		ro, ok := inst.Args[1].(riscv64asm.RegOffset)
		if !ok {
			return ""
		}
		switch {
		case ro.OfsReg == riscv64asm.X2 && r0 == riscv64asm.X5:
			return "t0: the return into the traced function, past its patch site"
		case ro.OfsReg == riscv64asm.X2 && r0 == riscv64asm.X1 && l.StructOps:
			return "ra: the return into the ops table's caller"
		case ro.OfsReg == riscv64asm.X2 && r0 == riscv64asm.X1:
			return "ra: the traced function's return into its caller"
		case ro.OfsReg == riscv64asm.X8 && inst.Op == riscv64asm.SD && l.HasIP && int(ro.Ofs.Imm) == -l.IPOff:
			return "ip = func, the traced function's address"
		}
	case riscv64asm.ADDI:
		src, _ := inst.Args[1].(riscv64asm.Reg)
		imm, _ := inst.Args[2].(riscv64asm.Simm)
		if src != riscv64asm.X8 {
			return ""
		}
		switch {
		case r0 == riscv64asm.X10 && int(imm.Imm) == -l.ArgsOff:
			return "a0 = ctx, &ctx[0]"
		case (r0 == riscv64asm.X11 || r0 == riscv64asm.X12) && int(imm.Imm) == -l.RunCtxOff:
			return regName(r0) + " = &run_ctx"
		}
	case riscv64asm.ADD: // c.mv: the start time between the enter and exit helpers
		r1, _ := inst.Args[1].(riscv64asm.Reg)
		r2, _ := inst.Args[2].(riscv64asm.Reg)
		switch {
		case r0 == riscv64asm.X9 && r1 == riscv64asm.X0 && r2 == riscv64asm.X10:
			return "s1 = the start time __bpf_prog_enter* returned"
		case r0 == riscv64asm.X11 && r1 == riscv64asm.X0 && r2 == riscv64asm.X9:
			return "a1 = the start time"
		}
	case riscv64asm.JALR:
		ro, ok := inst.Args[1].(riscv64asm.RegOffset)
		if !ok || r0 != riscv64asm.X0 {
			return ""
		}
		switch {
		case ro.OfsReg == riscv64asm.X5:
			return "into the traced function, past its patch site"
		case ro.OfsReg == riscv64asm.X1 && l.StructOps:
			return "back to the ops table's caller"
		case ro.OfsReg == riscv64asm.X1:
			return "back to the traced function's caller (SKIP_FRAME)"
		}
	}
	return ""
}
