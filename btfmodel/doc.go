// Package btfmodel distills a traced function's BTF prototype into the kernel's function model
// (struct btf_func_model, computed by btf_distill_func_proto in kernel/bpf/btf.c), and applies
// the kernel's acceptance rules per kernel profile and architecture. It loads BTF from raw
// vmlinux/module files, ELF .BTF sections, or a C prototype string.
//
// The kernel profiles are data (profiles.go): each Profile names the Debian build it models
// (Version, Debian), and states every Capability (capability.go: when each behaviour arrived,
// the CONFIG_ option where the build decides, backports). Rules everywhere ask
// Kernel.Has(capability), never compare versions; LimitsFor states the arch JITs' argument,
// target, flag and fsession limits once, for the attach rules here and the backends in amd64/,
// arm64/ and riscv64/.
//
// It is the bottom of trampjit's dependency graph and imports no other trampjit package.
package btfmodel
