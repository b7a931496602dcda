package kernel

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
)

// TestCatalogAbsentMatchesBTF checks catalogAbsent against the corpora's own BTF: a function
// listed absent is not there, every kernel function the catalog keeps is.
func TestCatalogAbsentMatchesBTF(t *testing.T) {
	for _, p := range btfmodel.Profiles {
		absent, ok := catalogAbsent[p.Kernel]
		if !ok {
			t.Errorf("profile %s has no catalogAbsent entry", p.Kernel)
			continue
		}
		for _, a := range btfmodel.AllArches { // a corpus needs no backend for this
			tag := string(p.Kernel) + "-" + string(a)
			if _, err := os.Stat(filepath.Join("..", "testdata", "kernel", tag, "vmlinux.btf.xz")); err != nil {
				continue
			}
			spec := corpusBTF(t, tag)
			hasFunc := func(name string) bool {
				var fn *btf.Func
				return spec.TypeByName(name, &fn) == nil
			}
			for name := range absent {
				if hasFunc(name) {
					t.Errorf("%s: %s is listed absent but its BTF has it", tag, name)
				}
			}
			for name := range catalogAbsentArch[a] {
				if hasFunc(name) {
					t.Errorf("%s: %s is listed absent on %s but its BTF has it", tag, name, a)
				}
			}
			for _, c := range Catalog(string(p.Kernel), string(a)) {
				if c.Target == "" && !hasFunc(c.Func) {
					t.Errorf("%s: case %s: the BTF has no %s", tag, c.ID, c.Func)
				}
			}
		}
	}
}
