package btfmodel

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Kernel names a kernel profile trampjit models, as requests and corpora spell it.
type Kernel string

// The kernel profiles trampjit models. Code outside the profile tables asks a profile for a
// capability (Kernel.Has) instead of comparing names, so a new profile is one more entry.
const (
	Kernel61  Kernel = "6.1"
	Kernel612 Kernel = "6.12"
	Kernel72  Kernel = "7.2"
)

// DefaultKernel is the profile used when a request or flag names none.
const DefaultKernel = Kernel612

// Version is a kernel version, ordered as the kernel orders them (LINUX_VERSION_CODE).
type Version struct{ Major, Minor, Patch int }

// ParseVersion reads "6.12" or "6.12.117" (a Debian "-1" or "+deb13" suffix is not a version).
func ParseVersion(s string) (Version, error) {
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("kernel version %q: want MAJOR.MINOR or MAJOR.MINOR.PATCH", s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || p != strconv.Itoa(v) {
			return Version{}, fmt.Errorf("kernel version %q: %q is not a number", s, p)
		}
		n[i] = v
	}
	return Version{n[0], n[1], n[2]}, nil
}

// String is "6.12.117", or "6.3" for a release without a stable patch level.
func (v Version) String() string {
	if v.Patch == 0 {
		return fmt.Sprintf("%d.%d", v.Major, v.Minor)
	}
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// Compare is -1, 0 or 1 as v is older than, the same as or newer than w.
func (v Version) Compare(w Version) int {
	for _, d := range [3]int{v.Major - w.Major, v.Minor - w.Minor, v.Patch - w.Patch} {
		if d < 0 {
			return -1
		}
		if d > 0 {
			return 1
		}
	}
	return 0
}

// Series is the upstream release a stable version belongs to (6.12.117 -> 6.12).
func (v Version) Series() Version { return Version{v.Major, v.Minor, 0} }

// IsZero reports an unset version.
func (v Version) IsZero() bool { return v == Version{} }

// DebianPackage says where Debian ships the modelled kernel: the suite and the binary
// package names that qualify (the cloud flavour, not -dbg nor -unsigned).
type DebianPackage struct {
	Suite   string // e.g. "bookworm"
	Package string // regular expression over binary package names
	// Modules: the package is linux-binary-<release>, with the vmlinuz under
	// usr/lib/modules/<release>/ and the config in linux-base-<release> (Debian 14); else
	// linux-image-<release> with boot/vmlinuz-* and boot/config-*.
	Modules bool
	// Arches are the architectures the suite ships this kernel for (bookworm has no riscv64
	// port: the 6.1 profile is modelled on riscv64 from the sources only).
	Arches []Arch
}

// Ships reports whether Debian ships the profile's kernel for arch.
func (d DebianPackage) Ships(arch Arch) bool { return slices.Contains(d.Arches, arch) }

// Profile is one modelled kernel: the Debian build it is checked against and what it can do.
type Profile struct {
	Kernel  Kernel
	Version Version // the Debian build modelled (testdata/kernel/<kernel>-*/kernel.json)
	Debian  DebianPackage
	// TrampLinks is BPF_MAX_TRAMP_LINKS per architecture: an enum value in each kernel's BTF,
	// and the corpus's links-N cases show where E2BIG starts.
	TrampLinks map[Arch]int
	caps       map[Capability]bool // every capability, stated (TestProfilesStateEveryCapability)
}

// Has reports whether the profile has a capability. An unknown profile has none; an entry the
// profile table forgot panics, since a silent false would model a kernel nobody checked.
func (p *Profile) Has(c Capability) bool {
	v, ok := p.caps[c]
	if !ok {
		panic(fmt.Sprintf("btfmodel: profile %s does not state capability %s", p.Kernel, c))
	}
	return v
}

// Stated reports whether the profile's table states c (true or false).
func (p *Profile) Stated(c Capability) bool {
	_, ok := p.caps[c]
	return ok
}

// ProfileFor returns the profile of a kernel name, or nil for a name no profile has.
func ProfileFor(k Kernel) *Profile {
	for i := range Profiles {
		if Profiles[i].Kernel == k {
			return &Profiles[i]
		}
	}
	return nil
}

// Has reports whether profile k has capability c; false for a kernel no profile names
// (requests are validated by ParseKernel before anything asks).
func (k Kernel) Has(c Capability) bool {
	p := ProfileFor(k)
	return p != nil && p.Has(c)
}

// Kernels lists the modelled profiles' names, oldest first.
var Kernels = kernelNames()

func kernelNames() []Kernel {
	ks := make([]Kernel, len(Profiles))
	for i, p := range Profiles {
		ks[i] = p.Kernel
	}
	return ks
}

// KernelNames is the profiles for messages and help texts: "6.1 or 6.12".
func KernelNames() string {
	s := make([]string, len(Kernels))
	for i, k := range Kernels {
		s[i] = string(k)
	}
	return orList(s)
}

// orList joins "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// ParseKernel checks a profile name given by a user.
func ParseKernel(s string) (Kernel, error) {
	for _, k := range Kernels {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown kernel profile %q (want %s)", s, KernelNames())
}

// Arch names a target architecture, spelled as Go and Debian spell it.
type Arch string

// The architectures trampjit knows.
const (
	AMD64   Arch = "amd64"
	ARM64   Arch = "arm64"
	RISCV64 Arch = "riscv64"
)

// Arches lists the architectures with a complete backend: trampjit generates, runs and
// checks their trampolines against real kernels, and tests iterate this list.
var Arches = []Arch{AMD64, ARM64, RISCV64}

// AllArches lists every architecture trampjit knows: ParseArch accepts each, the attach
// rules and limits cover each. Today it is Arches; an architecture whose backend is being
// written is listed here first.
var AllArches = Arches

// ParseArch checks an architecture name given by a user.
func ParseArch(s string) (Arch, error) {
	switch s {
	case "amd64", "x86_64", "x86-64":
		return AMD64, nil
	case "arm64", "aarch64":
		return ARM64, nil
	case "riscv64":
		return RISCV64, nil
	}
	return "", fmt.Errorf("unknown architecture %q (want amd64, arm64 or riscv64)", s)
}
