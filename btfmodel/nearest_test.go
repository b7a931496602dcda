package btfmodel

import (
	"strings"
	"testing"
)

// TestReleaseVersion: the release strings of real kernels (Debian's three layouts, this
// repository's host, an upstream -rc and a local build).
func TestReleaseVersion(t *testing.T) {
	for rel, want := range map[string]Version{
		"6.12.117+deb13-cloud-amd64": {6, 12, 117},
		"6.1.0-50-cloud-amd64":       {6, 1, 0},
		"7.2.13+deb14-cloud-arm64":   {7, 2, 13},
		"6.18.44-fc-v857":            {6, 18, 44},
		"6.19-rc3":                   {6, 19, 0},
		"6.13.0-rc1+":                {6, 13, 0},
		"7.3.4":                      {7, 3, 4},
		"6.12.":                      {6, 12, 0},
	} {
		got, err := ReleaseVersion(rel)
		if err != nil || got != want {
			t.Errorf("ReleaseVersion(%q) = %v, %v; want %v", rel, got, err, want)
		}
	}
	for _, rel := range []string{"", "linux", "-6.12", "6", "6-rc1"} {
		if v, err := ReleaseVersion(rel); err == nil {
			t.Errorf("ReleaseVersion(%q) = %v, want an error", rel, v)
		}
	}
}

// TestNearestProfile: the examples of issue 13, against the profile table of this tree
// (6.1, 6.12, 7.2).
func TestNearestProfile(t *testing.T) {
	for rel, want := range map[string]Kernel{
		"6.12.95+deb12-cloud-amd64":  Kernel612, // older than the modelled 6.12.117: same series
		"6.12.117+deb13-cloud-amd64": Kernel612,
		"6.18":                       Kernel612,
		"6.18.44-fc-v857":            Kernel612,
		"7.3.4+deb13-cloud-amd64":    Kernel72,
		"7.2.0":                      Kernel72,
		"7.1.9":                      Kernel612,
		"6.1.0-50-cloud-arm64":       Kernel61,
		"6.11":                       Kernel61,
		"8.0":                        Kernel72,
	} {
		got, err := NearestProfile(rel)
		if err != nil || got != want {
			t.Errorf("NearestProfile(%q) = %q, %v; want %q", rel, got, err, want)
		}
	}
	_, err := NearestProfile("5.15.0-91-generic")
	if err == nil || !strings.Contains(err.Error(), "oldest model profile, 6.1") || !strings.Contains(err.Error(), "--profile") {
		t.Errorf("5.15: %v; want an error naming the oldest profile 6.1 and --profile", err)
	}
	if _, err := NearestProfile("garbage"); err == nil {
		t.Error("NearestProfile(garbage): no error")
	}
}
