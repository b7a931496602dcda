package riscv64

import (
	"fmt"

	"golang.org/x/arch/riscv64/riscv64asm"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// The frame of an image as jit.Frame: the slots of StackLayout with their names in the
// kernel's vocabulary, and the instructions of the image that touch each one, found by
// decoding the image (not from the emitter), so that a slot the code does not use, or an
// access no slot accounts for, shows.

var _ jit.Framer = Backend{}

// Slot names of the riscv64 frame beyond jit's shared ones.
const (
	// SlotRetvalR0 is the second return-value slot: a5, BPF R0, saved beside a0.
	SlotRetvalR0 = "retval (BPF R0)"
	// SlotParentRA and SlotParentFP are frame 1, above s0: the traced function's own return
	// address (ra at its entry) and its caller's frame pointer.
	SlotParentRA = "parent return address"
	SlotParentFP = "parent frame pointer"
	SlotSavedS1  = "saved s1"
	// SlotFuncMeta is ctx[-1] from 7.0: nr_args with the session cookie index and is_return.
	SlotFuncMeta = "func_meta"
)

// Frame implements jit.Framer. Base is s0: __arch_prepare_bpf_trampoline addresses every slot
// as FP - off once the prologue has pointed s0 at the top of the trampoline's frame, and s0
// stays there while sp is the same distance below it throughout the body.
func (b Backend) Frame(t *jit.Tramp, img *jit.Image) (*jit.Frame, error) {
	f, strays, err := frameOf(t, img)
	if err != nil {
		return nil, err
	}
	if len(strays) > 0 {
		return f, fmt.Errorf("riscv64: %s", strays[0])
	}
	return f, nil
}

// stray is an access to the frame that lands in no slot.
type stray struct {
	at   int
	what string
}

func (s stray) String() string { return fmt.Sprintf("+%#x: %s", s.at, s.what) }

// frameOf builds the frame of img and attributes every s0- and sp-relative access of img
// to its slot; the accesses that land in none are returned.
func frameOf(t *jit.Tramp, img *jit.Image) (*jit.Frame, []stray, error) {
	if t.Model == nil {
		return nil, nil, fmt.Errorf("riscv64: trampoline has no function model")
	}
	p, err := ProfileFor(t.Kernel)
	if err != nil {
		return nil, nil, err
	}
	l, err := Layout(p, t.Model, t.Flags, t.CookieSlots)
	if err != nil {
		return nil, nil, err
	}
	f := &jit.Frame{Arch: string(btfmodel.RISCV64), Base: "s0", Size: l.StackSize, SPBase: l.StackSize, Slots: slotsOf(p, t.Model, l)}
	strays := attribute(f, l, img)
	return f, strays, nil
}

// slotsOf lists l's slots from the highest address down, as the diagram draws them.
func slotsOf(p Profile, m *btfmodel.FuncModel, l StackLayout) []jit.Slot {
	var out []jit.Slot
	add := func(off int, name, note string) {
		out = append(out, jit.Slot{Name: name, Off: off, SPOff: off + l.StackSize, Size: 8, Note: note})
	}
	for j := l.NStack() - 1; j >= 0; j-- {
		note := "store_args copies it into ctx[" + itoa(MaxRegArgs+j) + "]"
		if l.StructOps {
			// one frame: the caller's stack arguments are at s0+8j, but store_args reads
			// s0+16+8j as for a traced function (the kernel's offsets are modelled)
			note += "; the ops table's caller has it at s0" + fmt.Sprintf("%+d", 8*j)
		}
		add(StackArgBase+8*j, "caller stack arg "+itoa(MaxRegArgs+j), note)
	}
	if l.StructOps {
		add(-8, jit.SlotRetAddr, "ra: the return into the ops table's caller")
		add(-16, jit.SlotSavedFP, "the caller's s0")
	} else {
		add(8, SlotParentRA, "ra at entry: the traced function's return into its caller; frame 1")
		add(0, SlotParentFP, "the traced function's caller's s0; frame 1")
		add(-8, jit.SlotRetAddr, "t0 at entry: the return into the traced function past its patch site; frame 2")
		add(-16, jit.SlotSavedFP, "frame 1's s0; frame 2")
	}
	if l.SaveRet {
		add(-(l.RetvalOff - 8), SlotRetvalR0, "a5, regmap[BPF_REG_0], after a program or the original")
		add(-l.RetvalOff, jit.SlotRetval, "a0 after the original or an fmod_ret program; ctx["+itoa(l.NArgs)+"], read by fexit programs")
	}
	names := argSlotNames(m)
	for i := l.NArgs - 1; i >= 0; i-- {
		add(-l.ArgOff(i), names[i], "argument slot "+itoa(i)+"; the programs read it through ctx")
	}
	nr, note := jit.SlotNrArgs, "ctx[-1]: bpf_get_func_arg_cnt and the inlined arg/ret helpers read it"
	if p.FuncMeta {
		nr, note = SlotFuncMeta, "ctx[-1]: nr_args, the session cookie's index and is_return; the programs read it"
	}
	add(-l.NRegsOff, nr, note)
	if l.HasIP {
		add(-l.IPOff, jit.SlotIP, "ctx[-2]: func_addr, read by bpf_get_func_ip")
	}
	for k := l.Cookies - 1; k >= 0; k-- {
		add(-l.CookieSlotOff(k), "cookie["+itoa(k)+"]", fmt.Sprintf("ctx[-%d]: bpf_session_cookie's slot", (l.CookieSlotOff(k)-l.ArgsOff)/8))
	}
	add(-(l.RunCtxOff - 8), jit.SlotRunCtxSaved, "__bpf_prog_enter* saves current->bpf_ctx here through a1, __bpf_prog_exit* restores it through a2")
	add(-l.RunCtxOff, jit.SlotRunCtxCook, "the start of struct bpf_tramp_run_ctx; bpf_get_attach_cookie reads it")
	add(-l.SRegOff, SlotSavedS1, "callee-saved: s1 carries each program's start time")
	for j := l.OArgs - 1; j >= 0; j-- {
		add(-(l.StkArgOff - 8*j), "stack arg "+itoa(MaxRegArgs+j), "restore_stack_args' copy of ctx["+itoa(MaxRegArgs+j)+"] for the original, at sp+"+itoa(8*j))
	}
	return out
}

// argSlotNames names each argument slot after its C parameter: "ctx[0] sk", "ctx[1]" when
// unnamed, "ctx[1] p (1/2)" and "ctx[2] p (2/2)" for a struct in two slots.
func argSlotNames(m *btfmodel.FuncModel) []string {
	var names []string
	for _, a := range m.Args {
		n := a.Slots()
		for k := 0; k < n; k++ {
			s := "ctx[" + itoa(len(names)) + "]"
			if a.Name != "" {
				s += " " + a.Name
			}
			if n > 1 {
				s += fmt.Sprintf(" (%d/%d)", k+1, n)
			}
			names = append(names, s)
		}
	}
	return names
}

func itoa(n int) string { return fmt.Sprint(n) }

// attribute decodes img and records each access to the frame in its slot: a load is a
// reader, a store a writer, an addi that takes an address from s0 or sp a reader (the ctx
// pointer for the program, &run_ctx for the enter and exit helpers). It follows sp and s0
// through the prologue and epilogue as offsets from the trampoline's s0; an access through
// either before it is known is a stray.
func attribute(f *jit.Frame, l StackLayout, img *jit.Image) []stray {
	const unknown = 1 << 30
	sp, s0 := 16, unknown // at entry sp is 16 above s0: frame 1 is pushed first
	if l.StructOps {
		sp = 0
	}
	rel := func(r riscv64asm.Reg) *int {
		switch r {
		case riscv64asm.X2:
			return &sp
		case riscv64asm.X8:
			return &s0
		}
		return nil
	}
	var strays []stray
	touch := func(at, off, size int, write bool, what string) {
		s := f.SlotAt(off)
		if s == nil || off+size > s.Off+s.Size {
			strays = append(strays, stray{at, fmt.Sprintf("%s at s0%+d, %d bytes, is in no slot", what, off, size)})
			return
		}
		if write {
			s.Writers = append(s.Writers, at)
		} else {
			s.Readers = append(s.Readers, at)
		}
	}
	for at := 0; at < len(img.Code); {
		if end, ok := dataEnd(img, at); ok {
			at = end
			continue
		}
		inst, err := riscv64asm.Decode(img.Code[at:])
		if err != nil {
			// not frame code (the sizing pass's scratch, the pack's fill)
			at += 2
			continue
		}
		next := at + inst.Len
		rd, _ := inst.Args[0].(riscv64asm.Reg)
		if ro, ok := inst.Args[1].(riscv64asm.RegOffset); ok {
			if base := rel(ro.OfsReg); base != nil {
				size, store := memWidth(inst.Op)
				if *base == unknown {
					strays = append(strays, stray{at, fmt.Sprintf("%v through %s before the frame is set up", inst.Op, regName(ro.OfsReg))})
				} else if size > 0 {
					touch(at, *base+int(ro.Ofs.Imm), size, store, inst.Op.String())
				}
				if !store && inst.Op != riscv64asm.JALR {
					if r := rel(rd); r != nil {
						*r = unknown // ld s0 in the epilogue: s0 leaves the frame
					}
				}
				at = next
				continue
			}
		}
		if inst.Op == riscv64asm.ADDI {
			src, _ := inst.Args[1].(riscv64asm.Reg)
			imm := int(inst.Args[2].(riscv64asm.Simm).Imm)
			if base := rel(src); base != nil && *base != unknown {
				if r := rel(rd); r != nil {
					*r = *base + imm // the frame set-up and tear-down
				} else {
					off := *base + imm
					if off == -l.ArgsOff && l.NArgs == 0 && !l.SaveRet {
						// the ctx pointer of a function without arguments: no ctx[0],
						// the programs reach ctx[-1]
						off = -l.NRegsOff
					}
					touch(at, off, 1, false, "address")
				}
				at = next
				continue
			}
		}
		if r := rel(rd); r != nil && writesRd(inst.Op) {
			*r = unknown
		}
		at = next
	}
	return strays
}

// memWidth is the access size of a load or store, and whether it stores.
func memWidth(op riscv64asm.Op) (int, bool) {
	switch op {
	case riscv64asm.LB, riscv64asm.LBU:
		return 1, false
	case riscv64asm.LH, riscv64asm.LHU:
		return 2, false
	case riscv64asm.LW, riscv64asm.LWU:
		return 4, false
	case riscv64asm.LD:
		return 8, false
	case riscv64asm.SB:
		return 1, true
	case riscv64asm.SH:
		return 2, true
	case riscv64asm.SW:
		return 4, true
	case riscv64asm.SD:
		return 8, true
	}
	return 0, false
}

// writesRd is false for the instructions whose first operand is a source.
func writesRd(op riscv64asm.Op) bool {
	switch op {
	case riscv64asm.SB, riscv64asm.SH, riscv64asm.SW, riscv64asm.SD,
		riscv64asm.BEQ, riscv64asm.BNE, riscv64asm.BLT, riscv64asm.BGE, riscv64asm.BLTU, riscv64asm.BGEU:
		return false
	}
	return true
}

// dataEnd reports whether at is in a Data section (the kCFI word), and where it ends.
func dataEnd(img *jit.Image, at int) (int, bool) {
	for _, s := range img.Sections {
		if s.Data && at >= s.Start && at < s.End {
			return s.End, true
		}
	}
	return 0, false
}
