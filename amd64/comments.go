package amd64

import (
	"bytes"

	"golang.org/x/arch/x86/x86asm"

	"github.com/trampjit/trampjit/jit"
)

var _ jit.Commenter = Backend{}

// Comments implements jit.Commenter: what the operands a slot name does not explain hold:
// im and the IP where they are loaded, the return address ORIG_STACK calls through, the ctx
// and run_ctx pointers the program and the helpers get, the start time kept in rbx, the
// ip_after_call NOP and ip_epilogue. Found by decoding img, so a kernel's image of t's shape
// is commented the same way.
func (Backend) Comments(t *jit.Tramp, img *jit.Image) map[int]string {
	if t.Model == nil {
		return nil
	}
	p, err := profileFor(t.Kernel)
	if err != nil {
		return nil
	}
	var l StackLayout
	if l.compute(t.Model, img.Flags, p, t.CookieSlots) != nil {
		return nil
	}
	c := map[int]string{}
	starts := map[int]int{} // any byte of an instruction -> its start
	for off := 0; off < len(img.Code); {
		n := 1
		if end, ok := dataEnd(img, off); ok {
			n = end - off
		} else if in, err := decode(img.Code[off:]); err == nil {
			n = in.Len
			comment(c, off, in, l)
		}
		for i := off; i < off+n; i++ {
			starts[i] = off
		}
		off += n
	}
	for _, r := range img.Relocs {
		at, ok := starts[r.Offset]
		if !ok {
			continue
		}
		switch r.Symbol {
		case "im":
			c[at] = "rdi = im: this image's struct bpf_tramp_image"
		case "func":
			if inSection(img, at, jit.SecIP) {
				c[at] = "ip = func: func_addr, not the patch site (bpf_get_func_ip)"
			}
		}
	}
	for _, s := range img.Sections {
		switch s.Name {
		case jit.SecIPAfterCall:
			c[s.Start] = "im->ip_after_call: becomes jmp ip_epilogue when the image retires"
		case jit.SecTrampExit:
			if c[s.Start] != "" {
				c[s.Start] = "im->ip_epilogue; " + c[s.Start]
			} else {
				c[s.Start] = "im->ip_epilogue"
			}
		}
	}
	return c
}

// comment notes what one instruction's operands hold, from the layout.
func comment(c map[int]string, off int, in x86asm.Inst, l StackLayout) {
	mem, _ := in.Args[1].(x86asm.Mem)
	switch {
	case in.Op == x86asm.LEA && mem.Base == x86asm.RBP && int(mem.Disp) == -l.RegsOff && in.Args[0] == x86asm.RDI:
		c[off] = "rdi = ctx (&ctx[0]) for the program"
	case in.Op == x86asm.LEA && mem.Base == x86asm.RBP && int(mem.Disp) == -l.RunCtxOff && in.Args[0] == x86asm.RSI:
		c[off] = "rsi = &run_ctx for __bpf_prog_enter"
	case in.Op == x86asm.LEA && mem.Base == x86asm.RBP && int(mem.Disp) == -l.RunCtxOff && in.Args[0] == x86asm.RDX:
		c[off] = "rdx = &run_ctx for __bpf_prog_exit"
	case in.Op == x86asm.MOV && in.Args[0] == x86asm.RBX && in.Args[1] == x86asm.RAX:
		c[off] = "rbx = start time from the enter helper (0: skip the program)"
	case in.Op == x86asm.MOV && in.Args[0] == x86asm.RBX && mem.Base == x86asm.RBP && mem.Disp == 8:
		c[off] = "rbx = the return address the patched call pushed: the traced function past its patch site (ORIG_STACK)"
	case in.Op == x86asm.ADD && in.Args[0] == x86asm.RSP && in.Args[1] == x86asm.Imm(8):
		c[off] = "SKIP_FRAME: past the return into the traced function, back to its caller"
	}
}

// decode is x86asm.Decode with the trampoline's two sequences it cannot decode.
func decode(code []byte) (x86asm.Inst, error) {
	switch {
	case bytes.HasPrefix(code, endbr64):
		return x86asm.Inst{Op: x86asm.NOP, Len: 4}, nil
	case bytes.HasPrefix(code, nops[11]):
		return x86asm.Inst{Op: x86asm.NOP, Len: 11}, nil
	}
	return x86asm.Decode(code, 64)
}

func inSection(img *jit.Image, off int, name string) bool {
	for _, s := range img.Sections {
		if s.Name == name && off >= s.Start && off < s.End {
			return true
		}
	}
	return false
}
