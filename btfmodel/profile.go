package btfmodel

import "fmt"

// Kernel names a kernel profile trampjit models.
type Kernel string

// The kernel profiles trampjit models.
const (
	Kernel61  Kernel = "6.1"
	Kernel612 Kernel = "6.12"
)

// Kernels lists the modelled profiles, oldest first.
var Kernels = []Kernel{Kernel61, Kernel612}

// ParseKernel checks a profile name given by a user.
func ParseKernel(s string) (Kernel, error) {
	for _, k := range Kernels {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown kernel profile %q (want 6.1 or 6.12)", s)
}

// Arch names a target architecture, spelled as Go and Debian spell it.
type Arch string

// The architectures trampjit generates trampolines for.
const (
	AMD64 Arch = "amd64"
	ARM64 Arch = "arm64"
)

// Arches lists the supported architectures.
var Arches = []Arch{AMD64, ARM64}

// ParseArch checks an architecture name given by a user.
func ParseArch(s string) (Arch, error) {
	switch s {
	case "amd64", "x86_64", "x86-64":
		return AMD64, nil
	case "arm64", "aarch64":
		return ARM64, nil
	}
	return "", fmt.Errorf("unknown architecture %q (want amd64 or arm64)", s)
}
