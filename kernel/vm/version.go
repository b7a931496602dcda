package vm

import (
	"strconv"
	"strings"
)

// CompareVersions compares two Debian package versions ([epoch:]upstream[-revision]) the way
// dpkg does (deb-version(7)): it returns -1, 0 or 1.
func CompareVersions(a, b string) int {
	ea, ua, ra := splitVersion(a)
	eb, ub, rb := splitVersion(b)
	if ea != eb {
		if ea < eb {
			return -1
		}
		return 1
	}
	if c := compareFragment(ua, ub); c != 0 {
		return c
	}
	return compareFragment(ra, rb)
}

func splitVersion(v string) (epoch int, upstream, revision string) {
	if e, rest, ok := strings.Cut(v, ":"); ok {
		epoch, _ = strconv.Atoi(e)
		v = rest
	}
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		return epoch, v[:i], v[i+1:]
	}
	return epoch, v, ""
}

// compareFragment alternates non-digit and digit runs; '~' sorts before everything, even
// the end of the string, and letters sort before other characters.
func compareFragment(a, b string) int {
	for a != "" || b != "" {
		var na, nb string
		na, a = span(a, false)
		nb, b = span(b, false)
		for i := 0; i < len(na) || i < len(nb); i++ {
			if c := order(at(na, i)) - order(at(nb, i)); c != 0 {
				return sign(c)
			}
		}
		na, a = span(a, true)
		nb, b = span(b, true)
		x, _ := strconv.ParseUint("0"+na, 10, 64)
		y, _ := strconv.ParseUint("0"+nb, 10, 64)
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

func span(s string, digits bool) (string, string) {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9') == digits {
		i++
	}
	return s[:i], s[i:]
}

func at(s string, i int) int {
	if i < len(s) {
		return int(s[i])
	}
	return 0
}

func order(c int) int {
	switch {
	case c == '~':
		return -1
	case c == 0:
		return 0
	case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
		return c
	}
	return c + 256
}

func sign(c int) int {
	if c < 0 {
		return -1
	}
	return 1
}
