package kernel

import (
	"reflect"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// The 7.2 catalogue keeps every 6.12 case under the same id and content (its corpus is
// compared case by case with 6.12's), adds at least the new kinds, and passes validation;
// 6.1 and 6.12 have no fsession case.
func TestCatalog72(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		old := map[string]Case{}
		for _, c := range Catalog("6.12", arch) {
			old[c.ID] = c
			for _, p := range c.Progs {
				if p.Kind == jit.Fsession || p.SessionCookie {
					t.Errorf("6.12-%s: %s has an fsession program", arch, c.ID)
				}
			}
		}
		cur := Catalog("7.2", arch)
		if err := validateCases(cur); err != nil {
			t.Fatalf("7.2-%s: %v", arch, err)
		}
		if len(cur) < 220 {
			t.Errorf("7.2-%s: %d cases, want at least 220", arch, len(cur))
		}
		seen, fsess, cookies := map[string]bool{}, 0, 0
		for _, c := range cur {
			seen[c.ID] = true
			if o, ok := old[c.ID]; ok && !reflect.DeepEqual(o, c) {
				t.Errorf("7.2-%s: %s differs from the 6.12 case of the same id", arch, c.ID)
			}
			for _, p := range c.Progs {
				if p.Kind == jit.Fsession {
					fsess++
				}
				if p.SessionCookie {
					cookies++
				}
			}
		}
		for id, c := range old {
			if !seen[id] && !catalogAbsent[btfmodel.Kernel72][c.Func] {
				t.Errorf("7.2-%s: 6.12 case %s is missing", arch, id)
			}
		}
		if fsess < 40 || cookies < 10 {
			t.Errorf("7.2-%s: %d fsession programs, %d with session cookies", arch, fsess, cookies)
		}
	}
}
