// Package amd64 emits kernel-exact x86_64 BPF trampoline images (arch/x86/net/bpf_jit_comp.c)
// for the kernel profiles trampjit models, and annotates them as listings. The same emitter
// builds struct_ops images (structops.go): the kernel's one walk with BPF_TRAMP_F_INDIRECT,
// a CFI landing sequence in front, and the entry offset and packing size an ops table needs.
//
// It may import jit and btfmodel; it never imports arm64.
package amd64
