package kernel

import (
	"fmt"
	"path"
	"strings"

	"github.com/trampjit/trampjit/internal/suggest"
)

// Only selects cases by id for --only: a comma-separated list of exact ids and globs
// (path.Match syntax: *, ?, [...]). An id matches when it equals a pattern or a glob matches
// it whole.
type Only struct {
	patterns []string
}

// ParseOnly reads an --only value; "" selects every case. A malformed glob is an error
// naming it.
func ParseOnly(spec string) (*Only, error) {
	o := &Only{}
	for _, p := range strings.Split(spec, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("--only: %q is not a valid glob: %v", p, err)
		}
		o.patterns = append(o.patterns, p)
	}
	return o, nil
}

// All reports whether o selects every case.
func (o *Only) All() bool { return o == nil || len(o.patterns) == 0 }

// Match reports whether o selects id.
func (o *Only) Match(id string) bool {
	if o.All() {
		return true
	}
	for _, p := range o.patterns {
		if p == id {
			return true
		}
		if ok, _ := path.Match(p, id); ok {
			return true
		}
	}
	return false
}

// Unmatched checks that every pattern selected at least one of ids: a pattern that selects
// nothing is a typo more often than not, so it is an error naming it (and the nearest id).
func (o *Only) Unmatched(ids []string) error {
	if o.All() {
		return nil
	}
	for _, p := range o.patterns {
		hit := false
		for _, id := range ids {
			if ok, _ := path.Match(p, id); ok || p == id {
				hit = true
				break
			}
		}
		if !hit {
			hint := ""
			if !strings.ContainsAny(p, "*?[") {
				hint = suggest.Hint(p, ids, "")
			}
			return fmt.Errorf("--only: %q matches no case%s (ids are exact; use a glob such as '*%s*' to match part of one)", p, hint, p)
		}
	}
	return nil
}
