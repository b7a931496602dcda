// Package suggest finds the names closest to a misspelt one, for "did you mean" hints.
package suggest

import (
	"sort"
	"strings"
)

// Closest returns up to max candidates within a small edit distance of name, nearest first
// (ties in candidate order): those at the best distance found and one edit more. The distance
// allowed grows with the name's length, one edit per four characters (at least one, at most
// three), so that "tcp_v4_conect" finds "tcp_v4_connect" but "qq" finds nothing in particular.
func Closest(name string, candidates []string, most int) []string {
	limit := min(max(len(name)/4, 1), 3)
	type hit struct {
		s string
		d int
		i int
	}
	var hits []hit
	lname := strings.ToLower(name)
	for i, c := range candidates {
		if c == name {
			continue
		}
		if abs(len(c)-len(name)) > limit {
			continue
		}
		if d := distance(lname, strings.ToLower(c), limit); d <= limit {
			hits = append(hits, hit{c, d, i})
		}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].d < hits[b].d })
	var out []string
	for _, h := range hits {
		if len(out) == most || h.d > hits[0].d+1 {
			break
		}
		out = append(out, h.s)
	}
	return out
}

// Hint formats Closest's answer as " (did you mean X?)", or "" when nothing is close.
func Hint(name string, candidates []string, prefix string) string {
	c := Closest(name, candidates, 3)
	if len(c) == 0 {
		return ""
	}
	for i := range c {
		c[i] = prefix + c[i]
	}
	if len(c) == 1 {
		return " (did you mean " + c[0] + "?)"
	}
	return " (did you mean " + strings.Join(c[:len(c)-1], ", ") + " or " + c[len(c)-1] + "?)"
}

// distance is the Damerau-Levenshtein (optimal string alignment) distance of a and b, or a
// value above limit as soon as every alignment exceeds it.
func distance(a, b string, limit int) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
			rowMin = min(rowMin, v)
		}
		if rowMin > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
