// Package riscv64 emits kernel-exact RV64 BPF trampoline images
// (arch/riscv/net/bpf_jit_comp64.c) for the kernel profiles trampjit models, and
// annotates them as listings.
//
// The encoder (asm.go) reproduces the kernel JIT's own choice of instruction forms,
// compressed (RVC) ones included, which is not always the one an assembler makes.
//
// It may import jit and btfmodel; it never imports amd64 or arm64.
package riscv64
