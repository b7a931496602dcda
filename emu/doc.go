// Package emu runs trampoline images under the Unicorn CPU emulator (and natively on x86_64)
// against synthetic targets and stub programs, and checks what they do against an oracle.
//
// It may import amd64, arm64, jit and btfmodel.
package emu
