// Package riscv64 emits kernel-exact RV64 BPF trampoline images
// (arch/riscv/net/bpf_jit_comp64.c) for the kernel profiles trampjit models, and
// annotates them as listings.
//
// The encoder (asm.go) reproduces the kernel JIT's own choice of instruction forms,
// compressed (RVC) ones included, which is not always the one an assembler makes.
//
// A struct_ops image (structops.go; BPF_TRAMP_F_INDIRECT) is the same generator's
// one-frame form: the kCFI hash word when the boot has kCFI, one ra/s0 frame, the member's
// one program, a0 re-derived from BPF R0 by the member's return type, jr ra.
// Backend.ImageSize (= Backend.Size) is what arch_prepare_bpf_trampoline returns for it, so
// where bpf_struct_ops places the next member's image; Backend.EntryOffset is where the ops
// table points into it.
//
// It may import jit and btfmodel; it never imports amd64 or arm64.
package riscv64
