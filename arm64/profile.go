package arm64

import (
	"fmt"

	"github.com/trampjit/trampjit/btfmodel"
)

// Profile is what differs in arm64 prepare_trampoline between the modelled kernels
// (arch/arm64/net/bpf_jit_comp.c of Debian's 6.1.176, 6.12.117 and 7.2.13; docs/kernel-facts.md,
// docs/kernel-7.2-captured.md).
type Profile struct {
	Kernel btfmodel.Kernel

	// DirectCalls: a call within ±128 MiB of its final pc is a single bl (6.12,
	// should_emit_indirect_call); otherwise every call is movn/movk/movk x10; blr x10.
	DirectCalls bool
	// IMMovImm64: im is loaded with the variable-length emit_a64_mov_i64 and the
	// sizing pass reserves 4 slots (6.12); else the fixed 3-insn emit_addr_mov_i64.
	IMMovImm64 bool
	// RetToOrig: the original is called as adr x30, #8; ret x10 (6.12, the v6.4 BTI
	// fix); else blr x10.
	RetToOrig bool
	// MovX20FirstThenCBZ: invoke_bpf_prog saves the enter result to x20 before the
	// cbz (6.12, "Fix incorrect runtime stats"); 6.1.20 has the nop/cbz first.
	MovX20FirstThenCBZ bool
	// PackAlloc: the image is a bpf_prog_pack chunk sized by a separate sizing pass,
	// over PAGE_SIZE is -E2BIG (6.12); 6.1 writes into a whole page, -EFBIG.
	PackAlloc bool
	// MovORR: A64_MOV between general registers is ORR ("mov xd, xn"); moves to or
	// from sp stay ADD #0 (7.2; 6.12 uses ADD #0 for every move).
	MovORR bool
	// FuncMeta: the count slot is func_meta, written by store_func_meta with
	// emit_a64_mov_i64, so a count below 2^32 is movz w10 (7.2; 6.12: movz x10).
	FuncMeta bool
	// ProgSkipNop: each program block starts with a NOP that detaching patches into a
	// branch past the block (bpf_tramp_image_add_skip), and the call-original block has
	// no ip_after_call NOP (7.2).
	ProgSkipNop bool
	// Fsession: the JIT emits fsession programs (bpf_jit_supports_fsession): cookie slots,
	// their zeroing and the func_meta stores (7.2).
	Fsession bool
	// StructOpsStackArgsAtCaller: save_args reads a struct_ops member's stack arguments from
	// x29+16, where its one frame leaves the caller's (7.2; tracing keeps x29+32).
	StructOpsStackArgsAtCaller bool
	// KCFI: with CONFIG_CFI_CLANG an INDIRECT image starts with the member's kCFI type hash as
	// a data word (emit_kcfi, btfmodel.CapArm64KCFI); without the capability the JIT emits
	// none even when the kernel has kCFI.
	KCFI bool

	// Limits are the argument and target limits (btfmodel.LimitsFor): struct arguments
	// (6.5+; 6.1 refuses any STRUCT_ARG with -ENOTSUPP), kernel-function targets (ftrace
	// direct calls, 6.4+; 6.1 only attaches to BPF-program targets), eight registers.
	Limits btfmodel.ArchLimits
}

// PageSize is the arm64 PAGE_SIZE the modelled kernels use.
// open: 4K as in Debian's arm64 config; 16K/64K-page kernels allow larger trampolines.
const PageSize = 4096

var profiles = map[btfmodel.Kernel]Profile{
	// 6.1 as Debian ships it (6.1.176, captured): the stable series took the im-load, BTI
	// return and runtime-stats fixes; calls stay indirect and struct args refused.
	btfmodel.Kernel61: {Kernel: btfmodel.Kernel61, IMMovImm64: true, RetToOrig: true, MovX20FirstThenCBZ: true},
	btfmodel.Kernel612: {
		Kernel:             btfmodel.Kernel612,
		DirectCalls:        true,
		IMMovImm64:         true,
		RetToOrig:          true,
		MovX20FirstThenCBZ: true,
		PackAlloc:          true,
	},
	// 7.2 as Debian ships it (7.2.13, captured): 6.12's switches plus the orr moves, the
	// func_meta count store and the per-program skip NOP; stack arguments come from Limits.
	btfmodel.Kernel72: {
		Kernel:             btfmodel.Kernel72,
		DirectCalls:        true,
		IMMovImm64:         true,
		RetToOrig:          true,
		MovX20FirstThenCBZ: true,
		PackAlloc:          true,
		MovORR:             true,
		FuncMeta:           true,
		ProgSkipNop:        true,
		Fsession:           true,

		StructOpsStackArgsAtCaller: true,
	},
}

// ProfileFor returns the profile of a kernel.
func ProfileFor(k btfmodel.Kernel) (Profile, error) {
	p, ok := profiles[k]
	if !ok {
		return Profile{}, fmt.Errorf("arm64: no profile for kernel %q", k)
	}
	p.Limits = btfmodel.LimitsFor(btfmodel.ARM64, k)
	p.KCFI = k.Has(btfmodel.CapArm64KCFI)
	return p, nil
}
