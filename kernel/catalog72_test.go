package kernel

import (
	"reflect"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// The 7.2 catalogue keeps every 6.12 case under the same id and content (its corpus is
// compared case by case with 6.12's), adds at least the new kinds, and passes validation;
// 6.1 and 6.12 have no fsession case.
func TestCatalog72(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64", "riscv64"} {
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

// TestCatalogRISCV64: riscv64's catalogue is arm64's, case for case (the kernel decides what
// it refuses: the refusals are captured too), but for the syscall wrappers' names and the
// functions Debian's riscv64 builds lack in BTF; it is data, no arch test elsewhere.
func TestCatalogRISCV64(t *testing.T) {
	for _, k := range []string{"6.12", "7.2"} {
		rv := map[string]Case{}
		for _, c := range Catalog(k, "riscv64") {
			rv[c.ID] = c
		}
		n := 0
		for _, c := range Catalog(k, "arm64") {
			if catalogAbsentArch[btfmodel.RISCV64][c.Func] {
				continue
			}
			n++
			id, fn := strings.ReplaceAll(c.ID, "__arm64_sys_", "__riscv_sys_"), strings.ReplaceAll(c.Func, "__arm64_sys_", "__riscv_sys_")
			got, ok := rv[id]
			if !ok {
				t.Errorf("%s: arm64 case %s has no riscv64 counterpart %s", k, c.ID, id)
				continue
			}
			c.ID, c.Func = id, fn
			if !reflect.DeepEqual(got, c) {
				t.Errorf("%s: %s differs from arm64's: %+v / %+v", k, id, got, c)
			}
		}
		if n != len(rv) || n < 200 {
			t.Errorf("%s: riscv64 has %d cases, arm64 %d to compare with (want equal, at least 200)", k, len(rv), n)
		}
	}
}
