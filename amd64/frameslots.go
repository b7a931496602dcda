package amd64

import (
	"fmt"
	"strconv"

	"golang.org/x/arch/x86/x86asm"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// Slot names only the x86 frame has.
const (
	// SlotParentRet is the traced function's own return address, into its caller, above the
	// one the patched call pushed (the kernel's "return to parent" of SKIP_FRAME).
	SlotParentRet = "parent return address"
	// SlotTailCallCnt is where `push rax` keeps tail_call_cnt_ptr with TAIL_CALL_CTX.
	SlotTailCallCnt = "tail_call_cnt_ptr"
	// SlotPad is the 8 bytes that keep rsp 16-aligned at the original call when stack
	// arguments are copied for it.
	SlotPad = "pad"
	// SlotFuncMeta is nr_args' name from CapFsession on: the word also carries the session
	// cookie index and is_return.
	SlotFuncMeta = "func_meta"
)

var _ jit.Framer = Backend{}

// Frame implements jit.Framer: the slots of StackLayout, with the instructions of img that
// store to, load from or take the address of each. The base is rbp because every frame
// access the x86 JIT emits is rbp-relative (emit_stx/emit_ldx with BPF_REG_FP, which is rbp):
// rsp moves with `push rax`/`push rbx` and the calls, rbp stays where `mov rbp, rsp` put it.
// It fails when an instruction of img reaches a frame offset no slot covers.
func (Backend) Frame(t *jit.Tramp, img *jit.Image) (*jit.Frame, error) {
	if t.Model == nil {
		return nil, fmt.Errorf("amd64: trampoline has no function model")
	}
	p, err := profileFor(t.Kernel)
	if err != nil {
		return nil, err
	}
	var l StackLayout
	if err := l.compute(t.Model, img.Flags, p, t.CookieSlots); err != nil {
		return nil, err
	}
	f := l.frame(t.Model, t.Kernel)
	if err := touchSlots(f, img); err != nil {
		return nil, err
	}
	return f, nil
}

// depth is rsp's distance below rbp once the prologue is done: the `sub rsp` and the pushes
// after it.
func (l StackLayout) depth() int { return max(l.RBXOff, l.TailCallOff, l.StackSize) }

// frame lists l's slots from the caller's stack arguments down to rsp, without accesses.
func (l StackLayout) frame(m *btfmodel.FuncModel, k btfmodel.Kernel) *jit.Frame {
	d := l.depth()
	f := &jit.Frame{Arch: string(btfmodel.AMD64), Base: "rbp", Size: d, SPBase: d}
	add := func(off int, name, note string) {
		f.Slots = append(f.Slots, jit.Slot{Name: name, Off: off, SPOff: off + d, Size: 8, Note: note})
	}
	names := ctxNames(m)
	for j := l.StackSlots - 1; j >= 0; j-- {
		note := "passed on the stack by the traced function's caller; save_args copies it to ctx"
		if l.Indirect && l.StackArgsOff == 0x18 {
			// 6.12's save_args adds two return addresses for every image; an ops table's
			// call pushes one, so these loads read one slot above the caller's argument.
			note = "read at stack_args_off 0x18, as 6.12 does for every image; a struct_ops caller pushed one return address, so its argument is 8 bytes lower"
		}
		add(l.StackArgsOff+8*j, "caller stack arg "+strconv.Itoa(l.UsedRegs+j), note)
	}
	switch {
	case l.Indirect:
		add(8, jit.SlotRetAddr, "into the ops table's caller; the final ret or the return thunk returns through it")
	case l.StackArgsOff == 0x10:
		add(8, jit.SlotRetAddr, "into the traced function's caller, the image being entered by jmp; the final ret returns through it")
	default:
		add(16, SlotParentRet, "the traced function's return into its caller: the image returns through it with SKIP_FRAME, else the traced function does")
		add(8, jit.SlotRetAddr, "pushed by the patched call: the traced function just past it; ORIG_STACK calls through it; the final ret returns to it unless SKIP_FRAME steps over it with add rsp, 8")
	}
	fp := "push rbp, leave"
	if l.RegsOff == 0 {
		// No argument slot and no return value: &ctx[0] is rbp itself, ctx[-1] below it.
		fp += "; with no argument slots ctx points here, so the program's lea of ctx takes this address"
	}
	add(0, jit.SlotSavedFP, fp)
	if l.SaveRet {
		add(-8, jit.SlotRetval, "fexit programs read it as ctx[nr_args], bpf_get_func_ret; the epilogue returns it in rax")
	}
	for i := l.NrRegs - 1; i >= 0; i-- {
		add(-(l.RegsOff - 8*i), names[i], "the programs read it through ctx: rdi = &ctx[0]")
	}
	nr := jit.SlotNrArgs
	if k.Has(btfmodel.CapFsession) {
		nr = SlotFuncMeta
	}
	add(-l.NregsOff, nr, "ctx[-1]: bpf_get_func_arg_cnt and the inlined arg and ret helpers read it")
	if l.IPOff != l.NregsOff {
		add(-l.IPOff, jit.SlotIP, "ctx[-2]: bpf_get_func_ip reads it; the traced function's address")
	}
	for c := 0; l.CookieOff-8*c > l.IPOff; c++ {
		add(-(l.CookieOff - 8*c), "cookie["+strconv.Itoa(c)+"]", "bpf_session_cookie returns its address, from the index in func_meta")
	}
	if !l.RBXPushed {
		add(-l.RBXOff, "saved rbx", "")
	}
	add(-(l.RunCtxOff - 8), jit.SlotRunCtxSaved, "written by __bpf_prog_enter* in bpf_set_run_ctx and read by __bpf_prog_exit* in bpf_reset_run_ctx, through the run_ctx pointer")
	add(-l.RunCtxOff, jit.SlotRunCtxCook, "struct bpf_tramp_run_ctx starts here: its address goes to the enter/exit helpers; bpf_get_attach_cookie reads the cookie")
	top := l.RunCtxOff + 8*l.StackSlots // outgoing copies end here; the pad is above them
	if l.ArgStackOff > l.RunCtxOff && l.ArgStackOff > top {
		add(-(l.RunCtxOff + 8), SlotPad, "nothing: rsp is 16-aligned at the original call")
	}
	if l.ArgStackOff > l.RunCtxOff {
		for j := l.StackSlots - 1; j >= 0; j-- {
			add(-(l.ArgStackOff - 8*j), "stack arg "+strconv.Itoa(l.UsedRegs+j), "the original reads it as its own stack argument")
		}
	}
	if l.TailCallOff != 0 {
		add(-l.TailCallOff, SlotTailCallCnt, "")
	}
	if l.RBXPushed {
		add(-l.RBXOff, "saved rbx", "pushed below the frame")
	}
	return f
}

// ctxNames names the argument slots after the C parameters: "ctx[0] sk", "ctx[1]" when the
// parameter has no name, "ctx[1] p (1/2)" for a struct over two slots.
func ctxNames(m *btfmodel.FuncModel) []string {
	var out []string
	for _, a := range m.Args {
		n := a.Slots()
		for j := 0; j < n; j++ {
			s := "ctx[" + strconv.Itoa(len(out)) + "]"
			if a.Name != "" {
				s += " " + a.Name
			}
			if n > 1 {
				s += " (" + strconv.Itoa(j+1) + "/" + strconv.Itoa(n) + ")"
			}
			out = append(out, s)
		}
	}
	return out
}

// access is one frame access of an image: the instruction's offset, the rbp-relative bytes
// [Off, Off+Size) (Size 0: an address taken), and whether it stores.
type access struct {
	At, Off, Size int
	Write         bool
}

// frameAccesses decodes img and returns every access to the frame: rbp- and rsp-relative
// memory operands (lea included), and the implicit ones of push, pop, leave, ret and the
// jump to the return thunk, with rsp followed from the entry (rbp+8) through the prologue.
func frameAccesses(img *jit.Image) []access {
	var out []access
	sp := 8 // rsp at entry, relative to the rbp the prologue sets up
	thunk := map[int]bool{}
	for _, r := range img.Relocs {
		if r.Symbol == SymReturnThunk {
			thunk[r.Offset-1] = true
		}
	}
	for off := 0; off < len(img.Code); {
		code := img.Code[off:]
		if end, ok := dataEnd(img, off); ok {
			off = end
			continue
		}
		in, err := decode(code)
		if err != nil {
			off++
			continue
		}
		switch in.Op {
		case x86asm.PUSH:
			sp -= 8
			out = append(out, access{At: off, Off: sp, Size: 8, Write: true})
		case x86asm.POP:
			out = append(out, access{At: off, Off: sp, Size: 8})
			sp += 8
		case x86asm.LEAVE:
			out = append(out, access{At: off, Off: 0, Size: 8})
			sp = 8
		case x86asm.RET:
			out = append(out, access{At: off, Off: sp, Size: 8})
		case x86asm.JMP:
			if thunk[off] {
				out = append(out, access{At: off, Off: sp, Size: 8}) // the thunk's ret
			}
		case x86asm.SUB, x86asm.ADD:
			if r, ok := in.Args[0].(x86asm.Reg); ok && r == x86asm.RSP {
				if imm, ok := in.Args[1].(x86asm.Imm); ok {
					if in.Op == x86asm.SUB {
						sp -= int(imm)
					} else {
						sp += int(imm)
					}
				}
			}
		}
		for i, a := range in.Args {
			m, ok := a.(x86asm.Mem)
			if !ok || m.Segment != 0 || m.Index != 0 || (m.Base != x86asm.RBP && m.Base != x86asm.RSP) {
				continue
			}
			d := int(m.Disp)
			if m.Base == x86asm.RSP {
				d += sp
			}
			size := in.MemBytes
			if in.Op == x86asm.LEA {
				size = 0
			}
			out = append(out, access{At: off, Off: d, Size: size, Write: i == 0 && in.Op == x86asm.MOV})
		}
		off += in.Len
	}
	return out
}

func dataEnd(img *jit.Image, off int) (int, bool) {
	for _, s := range img.Sections {
		if s.Data && off >= s.Start && off < s.End {
			return s.End, true
		}
	}
	return 0, false
}

// touchSlots records img's accesses in f's slots; an access no slot holds is an error.
func touchSlots(f *jit.Frame, img *jit.Image) error {
	for _, a := range frameAccesses(img) {
		s := f.SlotAt(a.Off)
		if s == nil || a.Off+a.Size > s.Off+s.Size {
			return fmt.Errorf("amd64: the instruction at %#x reaches [rbp%+#x] (%d bytes), outside every slot of the frame", a.At, a.Off, a.Size)
		}
		if a.Write {
			s.Writers = append(s.Writers, a.At)
		} else {
			s.Readers = append(s.Readers, a.At)
		}
	}
	return nil
}
