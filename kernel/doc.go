// Package kernel validates trampjit against real kernels: it boots Debian kernels under qemu (or
// uses the host), attaches programs, and records the kernel's images, runs and verifier verdicts.
//
// It may import amd64, arm64, jit and btfmodel.
package kernel
