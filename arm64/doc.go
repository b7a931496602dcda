// Package arm64 emits kernel-exact A64 BPF trampoline images (arch/arm64/net/bpf_jit_comp.c)
// for the kernel profiles trampjit models, and annotates them as listings.
//
// It may import jit and btfmodel; it never imports amd64.
package arm64
