package riscv64

import (
	"fmt"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// struct_ops images (bpf_struct_ops_prepare_trampoline in kernel/bpf/bpf_struct_ops.c, built
// by __arch_prepare_bpf_trampoline with BPF_TRAMP_F_INDIRECT): the ops table's function
// pointer is called like any C function, so the image has one frame (ra and the caller's s0),
// one program, no bpf_tramp_image, no call of an original, and returns with jr ra. The
// riscv64 JIT keys all of it on the INDIRECT flag (is_struct_ops), not on the program.

// SecCFI is the kCFI type-hash word in front of a struct_ops image (emit_kcfi): data the
// caller's kCFI check reads at pointer-4, never executed.
const SecCFI = "cfi"

// KCFIWord is cfi_get_offset(): the bytes between the image start and the address the ops
// table holds when the kernel is built with kCFI.
const KCFIWord = 4

// kcfi reports whether the image starts with the hash word: a kCFI boot (features.cfi
// "kcfi") on a kernel whose riscv64 JIT emits it (CapRiscvKCFI). Before that the JIT wrote
// no hash and such a kernel's indirect call into the image failed its CFI check.
func (g *gen) kcfi() bool {
	return g.structOps && g.t.Features.CFI == jit.CFIKCFI && g.t.Kernel.Has(btfmodel.CapRiscvKCFI)
}

// EntryOffset is where the ops table points into t's image: past the kCFI word when there
// is one (bpf_struct_ops_map_update_elem stores image + cfi_get_offset()), else the start.
func (b Backend) EntryOffset(t *jit.Tramp) (int, error) {
	g, err := b.prepare(t)
	if err != nil {
		return 0, err
	}
	if g.kcfi() {
		return KCFIWord, nil
	}
	return 0, nil
}

// ImageSize is what arch_prepare_bpf_trampoline returns for img, the amount a struct_ops map
// advances its image offset by before the next member: the size it was given, which is
// arch_bpf_trampoline_size's sizing pass (every call auipc+jalr), not the code (the real
// pass reaches the program with a 4-byte jal). So on riscv64 the next member's image starts
// a few bytes past this one's jr ra (4 on Debian's, captured). Size(t) is the same number.
func (b Backend) ImageSize(t *jit.Tramp, img *jit.Image) (int, error) {
	if t.StructOps == nil {
		return 0, fmt.Errorf("riscv64: ImageSize is for struct_ops images")
	}
	size, err := b.Size(t)
	if err != nil {
		return 0, err
	}
	if img != nil && len(img.Code) > size {
		return 0, fmt.Errorf("riscv64: a %d-byte image is longer than its sizing pass (%d)", len(img.Code), size)
	}
	return size, nil
}

// checkStructOps refuses a struct_ops Tramp bpf_struct_ops_prepare_trampoline cannot build:
// it links exactly one program, as FENTRY, and never asks for the original to be called.
func checkStructOps(t *jit.Tramp) error {
	switch {
	case len(t.Fentry) != 1 || len(t.ModRet) != 0 || len(t.Fexit) != 0:
		return fmt.Errorf("riscv64: a struct_ops image has one program, not %d", len(t.Fentry)+len(t.ModRet)+len(t.Fexit))
	case t.Flags&(jit.FlagCallOrig|jit.FlagSkipFrame|jit.FlagIPArg) != 0:
		return fmt.Errorf("riscv64: struct_ops flags %s: the image calls no original and has no traced ip", t.Flags)
	case t.Features.CFI == jit.CFIFineIBT:
		return fmt.Errorf("riscv64: features.cfi %q is x86_64 only", t.Features.CFI)
	}
	return nil
}

// structOpsPrologue is the INDIRECT branch of the prologue: the kCFI hash word
// (emit_kcfi(cfi_get_func_hash(func_addr)), func_addr being the member's CFI stub), then
// one frame record at the top of the trampoline's frame.
func (g *gen) structOpsPrologue(S int32) {
	a := &g.a
	if g.kcfi() {
		a.word(g.t.Features.CFIHash)
		if !g.sizing {
			g.secs = append(g.secs, jit.Section{Name: SecCFI, Start: 0, End: KCFIWord, Data: true})
		}
	}
	g.open(jit.SecPrologue)
	a.addi(SP, SP, -S)
	a.sd(SP, S-8, RA)
	a.sd(SP, S-16, FP)
	a.addi(FP, SP, S)
}

// structOpsEpilogue pops the one frame and returns to the ops table's caller.
func (g *gen) structOpsEpilogue(S int32) {
	a := &g.a
	a.ld(RA, S-8, SP)
	a.ld(FP, S-16, SP)
	a.addi(SP, SP, S)
	a.jalr(Zero, RA, 0)
}

// progSection is the section of a program block: for a struct_ops image it names the member
// the program implements.
func (g *gen) progSection(pr *jit.ProgRef) string {
	if g.t.StructOps != nil {
		return jit.SecStructOps(pr.Index)
	}
	return secName(pr.Index, 0)
}
