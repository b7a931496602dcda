// Package amd64 emits kernel-exact x86_64 BPF trampoline images (arch/x86/net/bpf_jit_comp.c)
// for the kernel profiles trampjit models, and annotates them as listings.
//
// It may import jit and btfmodel; it never imports arm64.
package amd64
