package arm64

import (
	"fmt"

	"github.com/trampjit/trampjit/jit"
)

// struct_ops images (bpf_struct_ops_prepare_trampoline in kernel/bpf/bpf_struct_ops.c, then
// prepare_trampoline in arch/arm64/net/bpf_jit_comp.c with is_struct_ops_tramp true): one
// program in the fentry list, flags INDIRECT (6.8+) and RET_FENTRY_RET for a non-void member,
// im NULL. The image is called through the ops table by blr, so it builds only the x29/x30
// frame and returns with ret x30 ("bpf, arm64: Remove garbage frame for struct_ops trampoline",
// upstream about v6.9; Debian's 6.1.176 has it too, as its capture shows). Nothing calls
// __bpf_tramp_enter/exit or an original function. On 7.2 the program block keeps its leading
// skip NOP: invoke_bpf_prog emits it whatever im is.

// Section names of the landing sequence in front of a struct_ops image.
const (
	SecCFI = "cfi" // the kCFI type-hash data word (emit_kcfi)
	SecBTI = "bti" // bti jc (emit_bti)
)

// checkStructOps refuses a hand-built struct_ops Tramp that bpf_struct_ops_prepare_trampoline
// could not have produced.
func (g *gen) checkStructOps() error {
	t := g.t
	if t.StructOps == nil {
		return nil
	}
	switch {
	case len(t.Fentry) != 1 || len(t.ModRet) != 0 || len(t.Fexit) != 0 || t.Fsessions != 0:
		return fmt.Errorf("arm64: a struct_ops image has exactly one program in the fentry list, not %d fentry, %d fmod_ret, %d fexit", len(t.Fentry), len(t.ModRet), len(t.Fexit))
	case t.Flags&(jit.FlagCallOrig|jit.FlagSkipFrame|jit.FlagRestoreRegs|jit.FlagIPArg) != 0:
		return fmt.Errorf("arm64: struct_ops flags %v: bpf_struct_ops_prepare_trampoline passes only INDIRECT and RET_FENTRY_RET", t.Flags)
	}
	return nil
}

// oneFrame says the image builds only the x29/x30 frame and returns with ret x30.
func (g *gen) oneFrame() bool { return g.t.StructOps != nil }

// stackArgBase is where save_args finds the caller's stack arguments, from x29.
func (g *gen) stackArgBase() int {
	if g.oneFrame() && g.p.StructOpsStackArgsAtCaller {
		return StructOpsStackArgBase
	}
	return StackArgBase
}

// StructOpsStackArgBase is x29's distance to a struct_ops member's stack arguments: above the
// one frame record (save_args' soff for is_struct_ops, 7.2).
const StructOpsStackArgBase = 16

// kcfi reports whether the image starts with the kCFI hash word.
func (g *gen) kcfi() bool {
	return g.t.StructOps != nil && g.p.KCFI && g.t.Features.CFI == jit.CFIKCFI && g.t.Flags&jit.FlagIndirect != 0
}

// landing emits what precedes the frame of an indirectly called image: the member's kCFI type
// hash as a raw data word (emit_kcfi(cfi_get_func_hash(func_addr)), only with CONFIG_CFI_CLANG,
// the callee side of the check the caller's blr site makes 4 bytes before its target), then
// bti jc (emit_bti, only with CONFIG_ARM64_BTI_KERNEL; Debian's GCC builds have neither).
func (g *gen) landing() {
	if g.kcfi() {
		g.open(SecCFI)
		g.emit(g.t.Features.CFIHash) // little-endian like every word: the hash as the kernel stores it
	}
	if g.t.Features.IBT {
		g.open(SecBTI)
		g.emit(BTIJC)
	}
}

// progSection names a program's block; a struct_ops program's says which member it implements.
func (g *gen) progSection(pr *jit.ProgRef) string {
	if so := g.t.StructOps; so != nil {
		return jit.SecStructOps(pr.Index)
	}
	return secName(pr.Index, 0)
}

// Packing is where bpf_struct_ops_prepare_trampoline puts one member's image in its page.
type Packing struct {
	// Size is what the kernel checks against the rest of the page before writing the image:
	// the sizing pass (arch_bpf_trampoline_size, every call and im load at its worst case).
	// 6.12+: more than PAGE_SIZE-image_off takes a fresh page; 6.1 runs the same pass inside
	// arch_prepare_bpf_trampoline against image_end and fails with -EFBIG.
	Size int
	// Len is arch_prepare_bpf_trampoline's return value, the bytes emitted (Generate's code):
	// the next member's image starts Len bytes later (image_off += size). It depends on the
	// image's address, since calls in reach of bl are one instruction.
	Len int
	// Entry is cfi_get_offset(): the ops table holds image+Entry (4 past a kCFI word, else 0).
	Entry int
}

// Pack generates t's image at t.Image and says how the kernel packs it.
func (b Backend) Pack(t *jit.Tramp) (Packing, *jit.Image, error) {
	if t.StructOps == nil {
		return Packing{}, nil, fmt.Errorf("arm64: Pack is for struct_ops images (bpf_struct_ops_prepare_trampoline)")
	}
	g, err := b.prepare(t)
	if err != nil {
		return Packing{}, nil, err
	}
	img, err := b.Generate(t)
	if err != nil {
		return Packing{}, nil, err
	}
	pk := Packing{Size: g.size, Len: len(img.Code)}
	if g.kcfi() {
		pk.Entry = 4
	}
	return pk, img, nil
}

// PackTable lays out the images of one struct_ops map as bpf_struct_ops_map_update_elem does:
// member after member, each at the end of the last one's code, in pages[0] first and in the next
// page when the sizing pass does not fit in what is left (6.12+: bpf_struct_ops_image_alloc,
// at most MAX_TRAMP_IMAGE_PAGES; 6.1 has the map's one page). It sets each t.Image.
func (b Backend) PackTable(pages []uint64, ts []*jit.Tramp) ([]Packing, []*jit.Image, error) {
	if len(pages) == 0 {
		return nil, nil, fmt.Errorf("arm64: PackTable needs at least one image page")
	}
	pks := make([]Packing, len(ts))
	imgs := make([]*jit.Image, len(ts))
	page, off := 0, 0
	for i, t := range ts {
		if t.StructOps == nil {
			return nil, nil, fmt.Errorf("arm64: PackTable: member %d is not a struct_ops image", i)
		}
		p, err := ProfileFor(t.Kernel)
		if err != nil {
			return nil, nil, err
		}
		t.Image = pages[page] + uint64(off)
		g, err := b.prepare(t)
		if err != nil {
			return nil, nil, err
		}
		if g.size > PageSize-off {
			if !p.PackAlloc { // arch_prepare_bpf_trampoline: ret > max_insns
				return nil, nil, reject(jit.EFBIG, fmt.Sprintf("%s needs %d bytes, %d are left in the map's image page", t.StructOps, g.size, PageSize-off))
			}
			if page+1 == len(pages) { // bpf_struct_ops_image_alloc past MAX_TRAMP_IMAGE_PAGES
				return nil, nil, reject(jit.E2BIG, fmt.Sprintf("%s does not fit in %d image pages", t.StructOps, len(pages)))
			}
			page, off = page+1, 0
			t.Image = pages[page]
		}
		if pks[i], imgs[i], err = b.Pack(t); err != nil {
			return nil, nil, err
		}
		off += pks[i].Len
	}
	return pks, imgs, nil
}

// EntryOffset is where the ops table points into t's image (bpf_struct_ops_map_update_elem
// stores image + cfi_get_offset()): 4 past a kCFI word, else 0.
func (b Backend) EntryOffset(t *jit.Tramp) (int, error) {
	g, err := b.prepare(t)
	if err != nil {
		return 0, err
	}
	if g.kcfi() {
		return 4, nil
	}
	return 0, nil
}

// ImageSize is what arch_prepare_bpf_trampoline returns for img, the amount a struct_ops map
// advances its image offset by before the next member: the emitted code, on every profile
// (ctx.idx * AARCH64_INSN_SIZE; 6.1 returns the same after writing in place).
func (Backend) ImageSize(t *jit.Tramp, img *jit.Image) (int, error) {
	if t.StructOps == nil {
		return 0, fmt.Errorf("arm64: ImageSize is for struct_ops images")
	}
	return len(img.Code), nil
}
