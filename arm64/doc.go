// Package arm64 emits kernel-exact A64 BPF trampoline images (arch/arm64/net/bpf_jit_comp.c)
// for the kernel profiles trampjit models, and annotates them as listings.
//
// Tracing trampolines (fentry, fexit, fmod_ret, fsession, LSM) and struct_ops images are built
// by the same prepare_trampoline: a struct_ops image (jit.Tramp.StructOps) has its one program,
// no im and no original call, the one x29/x30 frame and ret x30 from 6.9 or so (6.1 builds the
// tracing frames), and, with kCFI, the member's type hash before bti jc. Pack, PackTable,
// EntryOffset and ImageSize say where bpf_struct_ops_prepare_trampoline puts each image of a
// table and where the ops table points into it.
//
// It may import jit and btfmodel; it never imports amd64.
package arm64
