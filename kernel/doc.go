// Package kernel validates trampjit against real kernels: it boots Debian kernels under qemu (or
// uses the host), attaches programs, and records the kernel's images, runs and verifier verdicts.
//
// Fetch returns a cached Debian kernel (see kernel/vm). Capture boots it with the guest agent
// (kernel/agent) and turns each case's result into a CorpusCase: the gen request with the
// kernel's real addresses, the image bytes up to the end of code, the kernel's refusal and
// verifier log when it refused, and what the programs saw when the case asked for a run.
// CaptureHost does the same on the running kernel. SameModuloAddresses compares two images
// of one trampoline, ignoring embedded addresses.
//
// It may import amd64, arm64, jit and btfmodel.
package kernel
