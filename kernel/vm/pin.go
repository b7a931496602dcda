package vm

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/trampjit/trampjit/btfmodel"
)

// ErrSeriesGone says the archive no longer has any build of a profile's kernel series (sid
// drops a series when it moves on). Guest tests skip on it; offline checks still run.
var ErrSeriesGone = errors.New("the Debian archive no longer has this kernel series")

// Pin is the exact package a corpus was captured from (its kernel.json): fetching picks that
// build while the archive still has it.
type Pin struct {
	Package string `json:"package"`
	Version string `json:"version"`
}

// Candidate is one build of a series the archive offers.
type Candidate struct {
	Package string
	Version string
	stanza  map[string]string
}

// MatchSeries returns the architecture of a package name of the profile's series (the image
// package of the cloud flavour), or "" when the name is not one: -dbg, -rt, -unsigned, other
// flavours and other series do not qualify.
func MatchSeries(kernel, name string) string {
	spec, ok := kernelSpecs[kernel]
	if !ok {
		return ""
	}
	return spec.archOf(name)
}

// archOf is the architecture a package name of the series is for, or "": the first group
// of the profile's pattern that matched (amd64 and arm64 name the cloud flavour, riscv64
// has none and is named bare).
func (s kernelSpec) archOf(name string) string {
	m := s.re.FindStringSubmatch(name)
	for _, g := range m[min(1, len(m)):] {
		if g != "" {
			return g
		}
	}
	return ""
}

// Choose picks the build to fetch among the series' candidates: the pinned version when the
// archive still has it, else the newest build with a note saying why the pin was not kept.
// With no candidates the series is gone (ErrSeriesGone).
func Choose(kernel, arch string, cands []Candidate, pin Pin) (Candidate, string, error) {
	if len(cands) == 0 {
		return Candidate{}, "", fmt.Errorf("kernel %s-%s: %w (no %s package in %s)", kernel, arch, ErrSeriesGone, seriesPattern(kernel), suiteOf(kernel))
	}
	best := cands[0]
	for _, c := range cands[1:] {
		if v := CompareVersions(c.Version, best.Version); v > 0 || (v == 0 && c.Package > best.Package) {
			best = c
		}
	}
	if pin.Version == "" {
		return best, "", nil
	}
	var same *Candidate
	for i, c := range cands {
		if c.Version != pin.Version {
			continue
		}
		// The recorded package may be the -unsigned one the signed package led to, or
		// (6.x) the image package itself: the version decides, the name breaks ties.
		if same == nil || c.Package == pin.Package {
			same = &cands[i]
		}
	}
	if same != nil {
		return *same, "", nil
	}
	note := fmt.Sprintf("the corpus was captured from %s %s, which %s no longer has; using the newest build of the %s series, %s %s",
		pin.Package, pin.Version, suiteOf(kernel), kernel, best.Package, best.Version)
	return best, note, nil
}

func seriesPattern(kernel string) string {
	if s, ok := kernelSpecs[kernel]; ok {
		return s.re.String()
	}
	return "?"
}

func suiteOf(kernel string) string {
	if s, ok := kernelSpecs[kernel]; ok {
		return s.suite
	}
	return "?"
}

// layout says where a series' packages keep the kernel.
type layout int

const (
	// layoutBoot: linux-image-* ships boot/vmlinuz-<release> and boot/config-<release>
	// (Debian 12 and 13), or depends on the -unsigned package that does.
	layoutBoot layout = iota
	// layoutModules: linux-binary-<release> ships usr/lib/modules/<release>/vmlinuz and
	// linux-base-<release> its config (Debian 14: linux-image-* is only a metapackage).
	layoutModules
)

type kernelSpec struct {
	suite  string
	prefix string // what apt-cache pkgnames lists
	re     *regexp.Regexp
	layout layout
}

// kernelSpecs maps a profile to its suite and the package names that qualify: the cloud
// flavour, not -dbg nor -unsigned (those are the fallback when the signed one has no vmlinuz).
// They come from btfmodel.Profiles' Debian field.
var kernelSpecs = func() map[string]kernelSpec {
	m := map[string]kernelSpec{}
	for _, p := range btfmodel.Profiles {
		spec := kernelSpec{p.Debian.Suite, "linux-image-", regexp.MustCompile(p.Debian.Package), layoutBoot}
		if p.Debian.Modules {
			spec.prefix, spec.layout = "linux-binary-", layoutModules
		}
		m[string(p.Kernel)] = spec
	}
	return m
}()

// Profiles lists the kernel profiles Fetch knows, oldest first: btfmodel's.
var Profiles = modelled()

// modelled are btfmodel's profiles, oldest first.
func modelled() []string {
	var out []string
	for _, k := range btfmodel.Kernels {
		out = append(out, string(k))
	}
	return out
}

// allSuites are the suites of the private sources.list: every profile's, so that one index
// update serves them all.
func allSuites() []string {
	var out []string
	for _, p := range Profiles {
		out = append(out, kernelSpecs[p].suite)
	}
	return out
}
