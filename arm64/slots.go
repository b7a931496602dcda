package arm64

import (
	"fmt"
	"slices"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// Backend describes its images' frames for listings and `trampjit frame`.
var _ jit.Framer = Backend{}

// Slot names only arm64 has: the parent frame record the tracing prologue pushes first
// ("frame for parent function": the caller's x29 and x9, the traced function's own return
// address that ftrace_caller or the patch site moved there), padding to 16 bytes, and the
// caller's stack arguments save_args reads above the frame records.
const (
	SlotParentFP      = "parent saved frame pointer"
	SlotParentRetAddr = "parent return address"
	SlotPadding       = "pad"
	// SlotFuncMeta is nr_args' name where the count slot is func_meta (7.x): the word also
	// carries the session cookie's index and is_return.
	SlotFuncMeta = "func_meta"
)

// Frame implements jit.Framer. The base is x29 as the prologue leaves it: the frame record of
// the patched function (struct_ops: the image's only record), the one register that stays put
// from the end of the prologue to the start of the epilogue and that save_args and the call
// of the original address the caller's stack arguments from; prepare_trampoline addresses its
// locals from sp, which is x29-stack_size throughout. Writers and readers are found by
// decoding img (frameAccesses); an access that lands in no slot is an error.
func (b Backend) Frame(t *jit.Tramp, img *jit.Image) (*jit.Frame, error) {
	g, err := b.frameGen(t)
	if err != nil {
		return nil, err
	}
	f := g.frameSlots()
	entry := 2 * frameRecord
	if g.oneFrame() {
		entry = frameRecord
	}
	accs, err := frameAccesses(img, entry)
	if err != nil {
		return nil, err
	}
	l := g.l
	ctxOff, runCtxOff := l.Args-l.StackSize, l.RunCtx-l.StackSize
	for _, a := range accs {
		if a.kind == accAddr {
			switch a.off {
			case runCtxOff: // &run_ctx: the helpers read and write the whole struct
				for _, name := range []string{jit.SlotRunCtxCook, jit.SlotRunCtxSaved} {
					s := slotNamed(f, name)
					s.Readers = append(s.Readers, a.at)
				}
				continue
			case ctxOff:
				if l.NArgs == 0 && !l.SaveRet {
					// No argument and no retval: ctx points just above nr_args (at x19's
					// save); what a program may read through it is ctx[-1] and below.
					s := f.SlotAt(l.NRegsOff - l.StackSize)
					s.Readers = append(s.Readers, a.at)
					continue
				}
			}
		}
		s := f.SlotAt(a.off)
		if s == nil || a.off+a.size > s.Off+s.Size {
			return nil, fmt.Errorf("offset %#x: %d bytes at x29%+d (sp+%d) are in no slot of the frame", a.at, a.size, a.off, a.off+l.StackSize)
		}
		if a.kind == accStore {
			s.Writers = appendOnce(s.Writers, a.at)
		} else {
			s.Readers = appendOnce(s.Readers, a.at)
		}
	}
	return f, nil
}

func appendOnce(s []int, v int) []int {
	if n := len(s); n > 0 && s[n-1] == v {
		return s
	}
	return append(s, v)
}

func slotNamed(f *jit.Frame, name string) *jit.Slot {
	for i := range f.Slots {
		if f.Slots[i].Name == name {
			return &f.Slots[i]
		}
	}
	panic("arm64: no slot " + name)
}

// frameRecord is one x29/x30 (or x29/x9) pair.
const frameRecord = 16

// frameGen is the generator state Frame needs: the profile and the layout, as prepare
// computes them, without running a pass.
func (Backend) frameGen(t *jit.Tramp) (*gen, error) {
	if t.Model == nil {
		return nil, fmt.Errorf("arm64: trampoline has no function model")
	}
	p, err := ProfileFor(t.Kernel)
	if err != nil {
		return nil, err
	}
	g := &gen{p: p, t: t}
	if g.l, err = Layout(p, t.Model, t.Flags, t.CookieSlots); err != nil {
		return nil, err
	}
	return g, nil
}

// frameSlots lists the frame from the final sp up to the caller's stack arguments (the
// kernel's stack-layout comment in prepare_trampoline, read bottom-up).
func (g *gen) frameSlots() *jit.Frame {
	l := g.l
	f := &jit.Frame{Arch: string(btfmodel.ARM64), Base: "x29", Size: l.StackSize, SPBase: l.StackSize}
	add := func(sp, size int, name, note string) {
		f.Slots = append(f.Slots, jit.Slot{Name: name, Off: sp - l.StackSize, SPOff: sp, Size: size, Note: note})
	}
	names := argSlotNames(g.p, g.t.Model, l.NArgs)
	for k := l.NStack() - 1; k >= 0; k-- {
		i := l.NRegs + k
		add(l.StackSize+g.stackArgBase()+8*k, 8, fmt.Sprintf("caller stack arg %d", i),
			fmt.Sprintf("the caller passed %s on the stack; save_args copies it to ctx[%d]", names[i], i))
	}
	if g.oneFrame() {
		add(l.StackSize+8, 8, jit.SlotRetAddr, "x30: where ret x30 goes back to, in the indirect caller")
		add(l.StackSize, 8, jit.SlotSavedFP, "the caller's x29; x29 points here")
	} else {
		add(l.StackSize+24, 8, SlotParentRetAddr, "x9: the traced function's own return address, as the patch site (mov x9, x30) or ftrace_caller hands it over")
		add(l.StackSize+16, 8, SlotParentFP, "the caller's x29: the frame for the parent function")
		add(l.StackSize+8, 8, jit.SlotRetAddr, "x30: the traced function's body after the patch site (retaddr_off), where the original is called")
		add(l.StackSize, 8, jit.SlotSavedFP, "x29 of the parent frame record: the frame for the patched function; x29 points here")
	}
	if pad := l.StackSize - (l.Regs + 16); pad > 0 {
		add(l.Regs+16, pad, SlotPadding, "aligns sp to 16; nothing uses it")
	}
	add(l.Regs+8, 8, "saved x20", "callee-saved: holds __bpf_prog_enter's start time")
	add(l.Regs, 8, "saved x19", "callee-saved: holds the bpf_prog pointer across the helpers")
	if l.SaveRet {
		add(l.Retval, 8, jit.SlotRetval, fmt.Sprintf("ctx[%d]: fexit programs read it through ctx", l.NArgs))
	}
	for i := l.NArgs - 1; i >= 0; i-- {
		add(l.ArgOff(i), 8, names[i], "the program reads it through ctx (x0)")
	}
	nr, meta := jit.SlotNrArgs, "ctx[-1]: bpf_get_func_arg_cnt reads it through ctx"
	if g.p.FuncMeta {
		nr, meta = SlotFuncMeta, "ctx[-1]: nr_args, the session cookie's index and is_return; the program reads it through ctx"
	}
	add(l.NRegsOff, 8, nr, meta)
	if l.HasIP {
		add(l.IP, 8, jit.SlotIP, "ctx[-2]: the traced function's address, for bpf_get_func_ip")
	}
	for k := (l.IP-l.Cookies)/8 - 1; k >= 0; k-- {
		add(l.Cookies+8*k, 8, fmt.Sprintf("cookie[%d]", k),
			fmt.Sprintf("ctx[-%d]: bpf_session_cookie's slot, kept from the fentry to the fexit run", (l.Args-l.Cookies)/8-k))
	}
	add(l.RunCtx+8, 8, jit.SlotRunCtxSaved, "__bpf_prog_enter* saves current->bpf_ctx here through &run_ctx (x1), __bpf_prog_exit* restores it (x2)")
	add(l.RunCtx, 8, jit.SlotRunCtxCook, "bpf_get_attach_cookie reads it through current->bpf_ctx")
	for k := l.RunCtx/8 - 1; k >= 0; k-- {
		add(8*k, 8, fmt.Sprintf("stack arg %d", l.NRegs+k), "the original reads it at its sp")
	}
	// Lowest address first: a pair's two slots are then named in operand order on its
	// stp/ldp line (x29 before x30), as AnnotateSlots follows the slot order.
	slices.Reverse(f.Slots)
	return f
}

// argSlotNames names the n argument slots after m's parameters, as save_args fills them:
// "ctx[i] name", a two-slot struct's halves "(1/2)" and "(2/2)"; "ctx[i]" alone for an unnamed
// parameter or a slot the model does not account for.
func argSlotNames(p Profile, m *btfmodel.FuncModel, n int) []string {
	names := make([]string, n)
	i := 0
	for _, a := range m.Args {
		k := 1
		if p.Limits.StructArgs && a.Flags&btfmodel.StructArg != 0 {
			k = (a.Size + 7) / 8
		}
		for j := 0; j < k && i < n; j++ {
			s := fmt.Sprintf("ctx[%d]", i)
			if a.Name != "" {
				s += " " + a.Name
			}
			if k > 1 {
				s += fmt.Sprintf(" (%d/%d)", j+1, k)
			}
			names[i] = s
			i++
		}
	}
	for ; i < n; i++ {
		names[i] = fmt.Sprintf("ctx[%d]", i)
	}
	return names
}
