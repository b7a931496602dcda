// Package jit is the architecture-neutral half of the trampoline generator: it parses a gen
// request, builds the btfmodel.FuncModel, derives the BPF_TRAMP_F_* flags and program order like
// bpf_trampoline_update does, and defines Image and the Backend that amd64 and arm64 implement.
//
// It may import btfmodel only.
package jit
