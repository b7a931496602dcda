package verifier

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
)

// FuzzParseELF feeds BPF objects through the ELF path (cilium's reader, CO-RE against kernel
// BTF, section parsing) and the model: malformed objects are errors, never a crash or a hang.
// Seeds are the committed clang-built objects of testdata/verifier.
func FuzzParseELF(f *testing.F) {
	objs, _ := filepath.Glob("../testdata/verifier/*.bpf.o")
	for i, o := range objs {
		if i == 8 {
			break
		}
		data, err := os.ReadFile(o)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	spec, err := btfmodel.LoadFile("../testdata/kernel/6.12-amd64/vmlinux.btf.xz", nil)
	if err != nil {
		f.Fatal(err)
	}
	env := Env{Kernel: "6.12", Arch: "amd64", BTF: spec}
	f.Fuzz(func(t *testing.T, data []byte) {
		progs, err := ParseELF(data, spec)
		if err != nil {
			return
		}
		// The model itself is fuzzed by FuzzParseJSON; two programs keep executions fast.
		for _, p := range progs[:min(len(progs), 2)] {
			Check(p, env)
		}
	})
}
