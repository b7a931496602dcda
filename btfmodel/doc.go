// Package btfmodel distills a traced function's BTF prototype into the kernel's function model
// (struct btf_func_model, computed by btf_distill_func_proto in kernel/bpf/btf.c), and applies
// the kernel's acceptance rules per kernel profile and architecture. It loads BTF from raw
// vmlinux/module files, ELF .BTF sections, or a C prototype string.
//
// It is the bottom of trampjit's dependency graph and imports no other trampjit package.
package btfmodel
