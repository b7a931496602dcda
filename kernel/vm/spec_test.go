package vm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestKernelSpecsMatchCorpus: the package each corpus was captured from (its kernel.json)
// qualifies under its profile's spec (from btfmodel.Profiles), from its suite; -dbg and
// -unsigned do not.
func TestKernelSpecsMatchCorpus(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/kernel/*/kernel.json")
	if len(files) == 0 {
		t.Fatal("no corpus kernel.json")
	}
	var want []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var k KernelImage
		if err := json.Unmarshal(b, &k); err != nil {
			t.Fatal(err)
		}
		spec, ok := kernelSpecs[k.Kernel]
		if !ok {
			t.Errorf("%s: no spec for kernel %s", f, k.Kernel)
			continue
		}
		if spec.suite != k.Suite || !spec.re.MatchString(k.Package) {
			t.Errorf("%s: %s from %s does not qualify (spec %s, %s)", f, k.Package, k.Suite, spec.suite, spec.re)
		}
		for _, bad := range []string{k.Package + "-dbg", k.Package + "-unsigned"} {
			if spec.re.MatchString(bad) {
				t.Errorf("%s: %s qualifies", f, bad)
			}
		}
		if !slices.Contains(want, k.Suite) {
			want = append(want, k.Suite)
		}
	}
	for _, w := range want {
		if !slices.Contains(allSuites(), w) {
			t.Errorf("allSuites() = %v lacks the corpus's %s", allSuites(), w)
		}
	}
	for _, k := range modelled() {
		if !slices.Contains(Profiles, k) {
			t.Errorf("Profiles = %v lacks the modelled profile %s", Profiles, k)
		}
	}
}
