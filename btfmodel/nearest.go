package btfmodel

import (
	"fmt"
	"strings"
)

// ReleaseVersion reads the version at the start of a kernel release string (uname -r, or a
// banner's "Linux version" word): "6.12.117+deb13-cloud-amd64" is 6.12.117, "6.1.0-50-cloud"
// 6.1, "6.19-rc3" 6.19. What follows the version (a Debian ABI, LOCALVERSION) is ignored.
func ReleaseVersion(release string) (Version, error) {
	end := 0
	dots := 0
	for end < len(release) {
		c := release[end]
		if c == '.' {
			// a third dot ends the version ("6.12.1.2" is not one the kernel makes)
			if dots == 2 || end+1 >= len(release) || release[end+1] < '0' || release[end+1] > '9' {
				break
			}
			dots++
		} else if c < '0' || c > '9' {
			break
		}
		end++
	}
	if end == 0 {
		return Version{}, fmt.Errorf("kernel release %q does not start with a version", release)
	}
	v, err := ParseVersion(release[:end])
	if err != nil {
		return Version{}, fmt.Errorf("kernel release %q: %w", release, err)
	}
	return v, nil
}

// NearestProfile is the profile a kernel of this release is compared with: the newest one
// whose series is not newer than the release (6.12.95 -> 6.12, 6.18 -> 6.12, 7.3.4 -> 7.2).
// A profile's series, not its Debian stable build, decides: 6.12.95 predates the 6.12.117
// that was captured but runs the same series' code. A release older than every profile is
// an error: no profile knows what such a kernel lacks.
func NearestProfile(release string) (Kernel, error) {
	v, err := ReleaseVersion(release)
	if err != nil {
		return "", err
	}
	var best *Profile
	for i := range Profiles {
		p := &Profiles[i]
		if p.Version.Series().Compare(v) > 0 {
			continue
		}
		if best == nil || p.Version.Compare(best.Version) > 0 {
			best = p
		}
	}
	if best == nil {
		oldest := &Profiles[0]
		for i := range Profiles {
			if Profiles[i].Version.Compare(oldest.Version) < 0 {
				oldest = &Profiles[i]
			}
		}
		return "", fmt.Errorf("kernel %s (%s) is older than the oldest model profile, %s: name the profile to compare it with (--profile %s)",
			v, strings.TrimSpace(release), oldest.Kernel, oldest.Kernel)
	}
	return best.Kernel, nil
}
