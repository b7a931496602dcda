// Package kernel validates trampjit against real kernels: it boots Debian kernels under qemu (or
// uses the host), attaches programs, and records the kernel's images, runs and verifier verdicts.
//
// Fetch returns a cached Debian kernel (see kernel/vm). Capture boots it with the guest agent
// (kernel/agent) and turns each case's result into a CorpusCase: the gen request with the
// kernel's real addresses, the image bytes up to the end of code, the kernel's refusal and
// verifier log when it refused, and what the programs saw when the case asked for a run.
// CaptureHost does the same on the running kernel. CaptureOptions.Local boots any kernel
// file instead of a profile's Debian kernel (OpenLocal: the file's release, its
// config checked against vm.Requirements before boot, the nearest lower model profile).
//
// Diff regenerates a corpus case with the model (DiffAs: as another profile) and compares
// bytes or refusals. CompareCorpora compares two kernels' corpora case by case (identical,
// same shape at other addresses, differs, refused by one only), labelling each kernel image
// with the model's sections by aligning the two (LabelSections); SameModuloAddresses
// compares two images of one trampoline, ignoring embedded addresses. ParseOnly is the
// --only selector (exact ids and globs).
//
// Verify loads programs (wire.VerifyProgram: raw bytecode, maps and map references by
// name, the attach target by name) through a guest kernel's verifier and returns each
// verdict with the errno, the kernel's reason and the verbatim log; VerifyHost does the
// same on the running kernel. ProgramsFromELF (clang objects, CO-RE applied against a
// given BTF, e.g. testdata/kernel/<kernel>-<arch>/vmlinux.btf.xz via btfmodel.LoadFile)
// and ProgramFromInstructions (cilium/ebpf asm built in Go) make the programs.
//
// It may import amd64, arm64, jit and btfmodel.
package kernel
