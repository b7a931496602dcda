package verifier

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
)

// Generated programs as ground truth: `go test ./verifier -run TestWriteGeneratedPrograms
// -gentruth N` writes N programs of verifier.Generator (seed -gentruthseed, for the
// 6.12-amd64 BTF) to testdata/verifier/generated.json in the instruction-list format;
// `go test ./verifier -run TestGroundTruth -update` then records what each real kernel
// says about them, and TestGroundTruth holds the model to it from then on.

var (
	genTruth     = flag.Int("gentruth", 0, "write this many generated programs to testdata/verifier/generated.json")
	genTruthSeed = flag.Int64("gentruthseed", 7, "generator seed for -gentruth")
)

func TestWriteGeneratedPrograms(t *testing.T) {
	if *genTruth <= 0 {
		t.Skip("writes testdata/verifier/generated.json: set -gentruth N")
	}
	spec, err := btfmodel.LoadFile("../testdata/kernel/6.12-amd64/vmlinux.btf.xz", nil)
	if err != nil {
		t.Fatal(err)
	}
	env := Env{Kernel: btfmodel.Kernel612, Arch: btfmodel.AMD64, BTF: spec}
	g := NewGenerator(env, *genTruthSeed)
	var f jsonFile
	dropped := 0
	for i := 0; len(f.Programs) < *genTruth; i++ {
		p := g.Program(fmt.Sprintf("gen%d", i))
		lines, ok := textLines(p)
		if !ok {
			dropped++
			continue
		}
		f.Programs = append(f.Programs, jsonProgram{Name: p.Name, Section: p.Section, License: p.License, Maps: p.Maps, Insns: lines})
	}
	data, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("../testdata/verifier/generated.json", append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d programs written, %d dropped (no text form that parses back to the same instructions)", len(f.Programs), dropped)
}

// textLines prints p's instructions as the log does and keeps them only if they parse back
// to the same instructions.
func textLines(p Program) ([]string, bool) {
	ins, err := decode(p.Instructions)
	if err != nil {
		return nil, false
	}
	var lines []string
	for i := range ins {
		if i > 0 && ins[i-1].isLdImm64() {
			continue // the second half of a ld_imm64
		}
		s := disasm(&ins[i], func(*insn) string { return "" }, helperName)
		if _, rest, ok := strings.Cut(s, ") "); ok && strings.HasPrefix(s, "(") {
			s = rest // "(79) r2 = ..." -> "r2 = ..."
		}
		lines = append(lines, s)
	}
	back, err := ParseInstructions(lines, p.Maps)
	if err != nil || fmt.Sprint(back) != fmt.Sprint(p.Instructions) {
		return nil, false
	}
	return lines, true
}
