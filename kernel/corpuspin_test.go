package kernel

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/trampjit/trampjit/kernel/vm"
)

// CorpusPin reads the committed corpora's kernel.json: the package and version they were
// captured from, which a re-capture asks the archive for first.
func TestCorpusPin(t *testing.T) {
	p, err := CorpusPin(filepath.Join(corpusRoot, "6.12-amd64"))
	if err != nil || p != (vm.Pin{Package: "linux-image-6.12.117+deb13-cloud-amd64", Version: "6.12.117-1"}) {
		t.Errorf("6.12-amd64: %+v %v", p, err)
	}
	dir := t.TempDir()
	if p, err := CorpusPin(dir); err != nil || p != (vm.Pin{}) {
		t.Errorf("no kernel.json: %+v %v, want the zero pin", p, err)
	}
	os.WriteFile(filepath.Join(dir, "kernel.json"), []byte(`{"package":"linux-binary-7.2.13+deb14-cloud-amd64"}`), 0o644)
	if _, err := CorpusPin(dir); err == nil {
		t.Error("a package without a version must be refused")
	}
	os.WriteFile(filepath.Join(dir, "kernel.json"), []byte(`{`), 0o644)
	if _, err := CorpusPin(dir); err == nil {
		t.Error("a broken kernel.json must be refused")
	}
}
