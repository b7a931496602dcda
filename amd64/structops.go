package amd64

import (
	"fmt"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// struct_ops images (bpf_struct_ops_prepare_trampoline in kernel/bpf/bpf_struct_ops.c). The x86
// JIT has no separate emitter for them: __arch_prepare_bpf_trampoline (6.8+) builds them with
// BPF_TRAMP_F_INDIRECT, optionally RET_FENTRY_RET, and the one program in the FENTRY list, so
// the generic walk in emit already gives their shape: no im, no __bpf_tramp_enter/exit, no
// call of an original, the program's value stored to [rbp-8] and reloaded before leave, and
// no `add rsp, 8`. What INDIRECT changes is done where it happens: the CFI landing sequence
// instead of the call-depth accounting (emitCFI), and, from CapX86StructOpsStackArgs, the
// base of stack-passed arguments (StackLayout.compute). 6.1 has no INDIRECT flag: it runs
// the same walk with RET_FENTRY_RET or 0 and starts with EMIT_ENDBR like every 6.1 image.
//
// open: 7.x converts arena pointer arguments (BTF_FMODEL_ARENA_ARG, when the program uses an
// arena) in save_args; a request cannot say that a program uses an arena, so it is not
// modelled.

// SecCFI is the CFI landing sequence in front of a struct_ops image (emit_cfi): endbr64, the
// kCFI hash load with its padding, or the FineIBT preamble.
const SecCFI = "cfi"

// gen_endbr_poison values: the 4-byte NOP that replaces ENDBR where indirect calls must not
// land. 6.12's is `nopw (%rax)`; later kernels use `nopl -42(%rax)`, whose last byte is the
// UDB opcode the FineIBT check jumps to.
var (
	endbrPoisonNopw = []byte{0x66, 0x0f, 0x1f, 0x00}
	endbrPoisonUDB  = []byte{0x0f, 0x1f, 0x40, 0xd6}
)

// kcfiPadding is CONFIG_FUNCTION_PADDING_CFI: the NOPs between the kCFI hash load and the
// entry, with CONFIG_CALL_PADDING (FUNCTION_PADDING_BYTES 16 minus the 5-byte mov). A
// Clang-built x86 kernel with kCFI and IBT selects CONFIG_FINEIBT, which selects
// CONFIG_CALL_PADDING, so every kCFI build modelled here has it.
const kcfiPadding = 11

// checkStructOps refuses a struct_ops Tramp bpf_struct_ops_prepare_trampoline cannot build.
func checkStructOps(t *jit.Tramp) error {
	switch {
	case len(t.Fentry) != 1 || len(t.ModRet) != 0 || len(t.Fexit) != 0:
		return fmt.Errorf("amd64: a struct_ops image has one program, not %d", len(t.Fentry)+len(t.ModRet)+len(t.Fexit))
	case t.Flags&^(jit.FlagIndirect|jit.FlagRetFentryRet) != 0:
		// The WARN_ON_ONCE at the top of __arch_prepare_bpf_trampoline.
		return fmt.Errorf("amd64: struct_ops flags %v: INDIRECT is only compatible with RET_FENTRY_RET", t.Flags)
	}
	return nil
}

// cfiMode is the landing sequence emit_cfi writes for an INDIRECT image: cfi_mode, decided at
// boot (features.cfi); "" is CFI_OFF or a kernel without CONFIG_CFI_CLANG.
func (g *gen) cfiMode() string {
	if g.t.Flags&jit.FlagIndirect == 0 {
		return jit.CFINone
	}
	return g.t.Features.CFI
}

// emitCFI is emit_cfi(cfi_get_func_hash(func_addr)), func_addr being the member's CFI stub
// (its hash is features.cfi_hash).
//
// The kCFI and FineIBT forms cannot be captured on Debian's kernels (GCC builds, no
// CONFIG_CFI_CLANG); their bytes follow emit_kcfi/emit_fineibt in arch/x86/net/bpf_jit_comp.c
// and are checked against GNU as in the tests.
func (g *gen) emitCFI() {
	a, hash := &g.a, g.t.Features.CFIHash
	switch g.cfiMode() {
	case jit.CFIFineIBT:
		// FineIBT requires IBT: the preamble is ENDBR-framed whatever the profile's build.
		a.endbr()
		if g.t.Kernel.Has(btfmodel.CapX86FineIBTEAX) {
			// The caller puts the hash in eax; a mismatch jumps into the UDB byte of the
			// poison (cs jne.d32 +3, no __bhi_args call: cfi_bhi off).
			a.bytes(0x2d)
			a.u32(hash)
			a.bytes(0x2e, 0x0f, 0x85, 0x03, 0x00, 0x00, 0x00)
			a.bytes(endbrPoisonUDB...)
			return
		}
		// 6.12: sub r10d, hash; jz past ud2; ud2; nop; then the poisoned ENDBR at +16.
		a.bytes(0x41, 0x81, 0xea)
		a.u32(hash)
		a.bytes(0x74, 0x07, 0x0f, 0x0b, 0x90)
		a.bytes(endbrPoisonNopw...)
	case jit.CFIKCFI:
		a.bytes(0xb8) // mov eax, hash: the caller reads it at pointer-15 (-4 for the imm)
		a.u32(hash)
		for i := 0; i < kcfiPadding; i++ {
			a.bytes(0x90)
		}
		if g.f.ibtBuild {
			a.endbr()
		}
	default:
		if g.f.ibtBuild {
			a.endbr()
		}
	}
}

// cfiOffset is cfi_get_offset(): where the ops table points into the image. FineIBT and kCFI
// with call padding put the entry 16 bytes in (on the ENDBR poison or the ENDBR); with no
// CFI the pointer is the image itself, even when the image starts with endbr64.
func cfiOffset(mode string) int {
	switch mode {
	case jit.CFIFineIBT, jit.CFIKCFI:
		return 16
	}
	return 0
}

// EntryOffset is where the ops table points into t's image (bpf_struct_ops_map_update_elem
// stores image + cfi_get_offset()): 16 under FineIBT or kCFI on an INDIRECT kernel, else 0.
func (Backend) EntryOffset(t *jit.Tramp) (int, error) {
	if t.StructOps == nil {
		return 0, fmt.Errorf("amd64: EntryOffset of a trampoline that is not a struct_ops image")
	}
	if t.Flags&jit.FlagIndirect == 0 {
		return 0, nil // 6.1 emits no CFI sequence
	}
	return cfiOffset(t.Features.CFI), nil
}

// ImageSize is what arch_prepare_bpf_trampoline returns for img, the amount a struct_ops
// map advances its image offset by before the next member: the code plus BPF_INSN_SAFETY
// since the 6.7 series that moved trampolines into bpf_prog_pack ("bpf, x86: Adjust
// arch_prepare_bpf_trampoline return value"; 6.12 and 7.2 here), the code alone on 6.1, which
// writes its page in place (profile.alignImage marks the same split). A member goes to a new
// page when this size does not fit in what is left of the current one.
func (Backend) ImageSize(t *jit.Tramp, img *jit.Image) (int, error) {
	p, err := profileFor(t.Kernel)
	if err != nil {
		return 0, err
	}
	if p.alignImage {
		return len(img.Code), nil
	}
	return len(img.Code) + insnSafety, nil
}

// Size is ImageSize of t's image, generated: what a caller laying out a whole ops table
// advances by after this member.
func (b Backend) Size(t *jit.Tramp) (int, error) {
	img, err := b.Generate(t)
	if err != nil {
		return 0, err
	}
	return b.ImageSize(t, img)
}

// progSection names a program block; a struct_ops image's names the member it implements.
func (g *gen) progSection(r *jit.ProgRef) string {
	if g.t.StructOps != nil {
		return jit.SecStructOps(r.Index)
	}
	return secName(jit.SecFentry, 0, r.Index)
}
