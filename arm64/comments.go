package arm64

import (
	"encoding/binary"

	"github.com/trampjit/trampjit/jit"
)

var _ jit.Commenter = Backend{}

// Comments implements jit.Commenter: what the registers the entry hands over hold where the
// prologue saves them (x9, x30), the load of the traced function's body for the original call,
// the IP, im and the ctx pointer. Found by matching img's words, so a listing of any image of
// t's shape is commented, whatever its addresses.
func (b Backend) Comments(t *jit.Tramp, img *jit.Image) map[int]string {
	g, err := b.frameGen(t)
	if err != nil {
		return nil
	}
	l := g.l
	c := map[int]string{}
	for _, r := range img.Relocs {
		switch r.Symbol {
		case "func":
			c[r.Offset] = "ip = func_addr, the traced function's entry (bpf_get_func_ip reads it)"
		case "im":
			c[r.Offset] = "this image's struct bpf_tramp_image, for __bpf_tramp_enter/exit"
		}
	}
	parent, body := PUSH(FP, X9), PUSH(FP, LR)
	ctx, retAddr := ADDI(true, X0, SP, l.Args), LDR(TMP, SP, l.RetAddr)
	for o := 0; o+4 <= len(img.Code); o += 4 {
		if inData(img, o) {
			continue
		}
		switch w := binary.LittleEndian.Uint32(img.Code[o:]); {
		case w == parent && !g.oneFrame():
			c[o] = "x9 = the traced function's return address into its caller (the patch site's mov x9, x30)"
		case w == body && g.oneFrame():
			c[o] = "x30 = the return address into the ops table's caller (blr)"
		case w == body:
			c[o] = "x30 = the traced function's body, just past its patch site (bl)"
		case w == retAddr && t.Flags&jit.FlagCallOrig != 0:
			c[o] = "the traced function's body: the original is called there"
		case w == ctx:
			c[o] = "x0 = ctx (&ctx[0]) for the program"
		}
	}
	return c
}
