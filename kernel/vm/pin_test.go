package vm

import (
	"errors"
	"strings"
	"testing"
)

// Package names as sid, trixie and bookworm list them (apt-cache pkgnames): only the
// cloud image of the profile's series qualifies.
func TestMatchSeries(t *testing.T) {
	for _, c := range []struct{ kernel, name, arch string }{
		{"7.2", "linux-binary-7.2.13+deb14-cloud-amd64", "amd64"},
		{"7.2", "linux-binary-7.2.13+deb14-cloud-arm64", "arm64"},
		{"7.2", "linux-binary-7.2.15+deb14-cloud-arm64", "arm64"},
		{"7.2", "linux-binary-unsigned-7.2.13+deb14-cloud-amd64", ""},
		{"7.2", "linux-binary-7.2.13+deb14-amd64", ""},
		{"7.2", "linux-binary-7.2.13+deb14-rt-amd64", ""},
		{"7.2", "linux-binary-7.2.13+deb14-arm64-16k", ""},
		{"7.2", "linux-image-7.2.13+deb14-cloud-amd64", ""}, // a metapackage since Debian 14
		{"7.2", "linux-image-7.2.13+deb14-cloud-amd64-dbg", ""},
		{"7.2", "linux-binary-7.20.1+deb14-cloud-amd64", ""},
		{"7.2", "linux-binary-7.3.1+deb14-cloud-amd64", ""},
		{"6.12", "linux-image-6.12.117+deb13-cloud-amd64", "amd64"},
		{"6.12", "linux-image-6.12.117+deb13-cloud-amd64-unsigned", ""},
		{"6.12", "linux-binary-7.2.13+deb14-cloud-amd64", ""},
		{"6.1", "linux-image-6.1.0-50-cloud-arm64", "arm64"},
		{"6.1", "linux-image-6.12.117+deb13-cloud-arm64", ""},
		{"6.9", "linux-image-6.9.1-cloud-amd64", ""},
		// riscv64 has no cloud flavour (Debian's package names in trixie and sid).
		{"7.2", "linux-binary-7.2.13+deb14-riscv64", "riscv64"},
		{"7.2", "linux-binary-7.2.13+deb14-cloud-riscv64", ""},
		{"7.2", "linux-binary-unsigned-7.2.13+deb14-riscv64", ""},
		{"6.12", "linux-image-6.12.117+deb13-riscv64", "riscv64"},
		{"6.12", "linux-image-6.12.117+deb13-riscv64-dbg", ""},
		{"6.12", "linux-image-6.12.117+deb13-riscv64-unsigned", ""},
		{"6.12", "linux-image-6.12.117+deb13-amd64", ""},
		{"6.1", "linux-image-6.1.0-50-riscv64", ""}, // no riscv64 profile data for 6.1
	} {
		if got := MatchSeries(c.kernel, c.name); got != c.arch {
			t.Errorf("MatchSeries(%s, %s) = %q, want %q", c.kernel, c.name, got, c.arch)
		}
	}
}

func TestChoose(t *testing.T) {
	c13 := Candidate{Package: "linux-binary-7.2.13+deb14-cloud-amd64", Version: "7.2.13-1"}
	c13b := Candidate{Package: "linux-binary-7.2.13+deb14-cloud-amd64", Version: "7.2.13-2"}
	c15 := Candidate{Package: "linux-binary-7.2.15+deb14-cloud-amd64", Version: "7.2.15-1"}
	pin := Pin{Package: c13.Package, Version: c13.Version}

	// No pin: the newest build.
	if got, note, err := Choose("7.2", "amd64", []Candidate{c13, c15, c13b}, Pin{}); err != nil || got.Version != c15.Version || note != "" {
		t.Errorf("unpinned: %v %q %v, want %v", got, note, err, c15)
	}
	// The pinned build is still there: it wins over newer ones, without a note.
	if got, note, err := Choose("7.2", "amd64", []Candidate{c15, c13, c13b}, pin); err != nil || got.Version != c13.Version || note != "" {
		t.Errorf("pinned present: %v %q %v, want %v", got, note, err, c13)
	}
	// The pinned build left the archive: the newest of the series, with a note naming both.
	got, note, err := Choose("7.2", "amd64", []Candidate{c13b, c15}, pin)
	if err != nil || got.Version != c15.Version {
		t.Errorf("pinned gone: %v %v, want %v", got, err, c15)
	}
	for _, w := range []string{"7.2.13-1", "no longer has", "7.2.15-1", "sid"} {
		if !strings.Contains(note, w) {
			t.Errorf("note %q does not say %q", note, w)
		}
	}
	// A 6.12 corpus records the signed image; the archive may list it next to others of
	// the same version: the version decides, the recorded name breaks the tie.
	s := Candidate{Package: "linux-image-6.12.117+deb13-cloud-amd64", Version: "6.12.117-1"}
	u := Candidate{Package: "linux-image-6.12.119+deb13-cloud-amd64", Version: "6.12.119-1"}
	if got, note, err := Choose("6.12", "amd64", []Candidate{u, s}, Pin{Package: "linux-image-6.12.117+deb13-cloud-amd64-unsigned", Version: "6.12.117-1"}); err != nil || got.Version != s.Version || note != "" {
		t.Errorf("6.12 pinned by version: %v %q %v", got, note, err)
	}
	// The series is gone: ErrSeriesGone, saying which series and suite.
	_, _, err = Choose("7.2", "arm64", nil, pin)
	if !errors.Is(err, ErrSeriesGone) || !strings.Contains(err.Error(), "7.2-arm64") || !strings.Contains(err.Error(), "sid") {
		t.Errorf("series gone: %v", err)
	}
}

// Every profile Fetch knows has a spec, and the private sources list their suites.
func TestProfilesHaveSuites(t *testing.T) {
	got := strings.Join(allSuites(), " ")
	if got != "bookworm trixie sid" {
		t.Errorf("suites %q", got)
	}
	if _, err := FetchPinned(t.Context(), "7.3", "amd64", Pin{}, nil); err == nil || !strings.Contains(err.Error(), "6.1, 6.12, 7.2") {
		t.Errorf("unknown profile: %v", err)
	}
}
