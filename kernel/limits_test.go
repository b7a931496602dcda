package kernel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trampjit/trampjit/kernel/wire"
)

func writeTemp(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadCasesBounded: a device or an oversized cases file is refused, naming the file and
// the limit, after reading at most the limit.
func TestReadCasesBounded(t *testing.T) {
	big := writeTemp(t, "big.jsonl", strings.Repeat(" ", MaxCasesFileSize+1))
	for _, p := range []string{"/dev/zero", big} {
		t0 := time.Now()
		_, err := ReadCases(p)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "4 MiB limit") {
			t.Errorf("%s: %v, want the file and its 4 MiB limit named", p, err)
		}
		if d := time.Since(t0); d > 5*time.Second {
			t.Errorf("%s: took %v", p, d)
		}
	}
	if _, err := ParseCases(strings.NewReader(strings.Repeat(" ", MaxCasesFileSize+1))); err == nil || !strings.Contains(err.Error(), "4 MiB") {
		t.Errorf("ParseCases of an oversized reader: %v", err)
	}
}

func TestCasesCountsBounded(t *testing.T) {
	var lines strings.Builder
	for i := 0; i <= MaxCases; i++ {
		fmt.Fprintf(&lines, "{\"id\":\"c%d\",\"func\":\"f\"}\n", i)
	}
	if _, err := ReadCases(writeTemp(t, "many.jsonl", lines.String())); err == nil || !strings.Contains(err.Error(), "more than 4096 cases") {
		t.Errorf("4097 cases: %v", err)
	}
	progs := strings.Repeat(`{"kind":"fentry"},`, MaxCaseProgs)
	one := `{"id":"wide","func":"f","progs":[` + progs + `{"kind":"fexit"}]}`
	if _, err := ReadCases(writeTemp(t, "wide.jsonl", one)); err == nil || !strings.Contains(err.Error(), "65 programs: at most 64") {
		t.Errorf("65 programs: %v", err)
	}
	// The catalogue's widest case (39 programs, to see -E2BIG) stays within the limits.
	for _, k := range []string{"6.1", "6.12"} {
		for _, a := range []string{"amd64", "arm64"} {
			if err := validateCases(Catalog(k, a)); err != nil {
				t.Errorf("catalogue %s-%s: %v", k, a, err)
			}
		}
	}
}

// TestVerifyProgramBounded: a program past BPF_COMPLEXITY_LIMIT_INSNS is refused before any
// boot (Verify would otherwise fetch a kernel and boot it).
func TestVerifyProgramBounded(t *testing.T) {
	exit := []byte{0x95, 0, 0, 0, 0, 0, 0, 0}
	p := wire.VerifyProgram{Name: "huge", Type: "tracing", AttachType: "fentry", License: "GPL",
		Insns: wire.Bytecode(strings.Repeat(string(exit), MaxProgramInsns+1))}
	for name, f := range map[string]func(context.Context, VerifyOptions) ([]VerifyResult, error){"Verify": Verify, "VerifyHost": VerifyHost} {
		t0 := time.Now()
		_, err := f(context.Background(), VerifyOptions{Kernel: "6.12", Arch: "amd64", Programs: []wire.VerifyProgram{p}})
		if err == nil || !strings.Contains(err.Error(), "1000001 instructions") || !strings.Contains(err.Error(), "BPF_COMPLEXITY_LIMIT_INSNS") {
			t.Errorf("%s: %v", name, err)
		}
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("%s took %v: refused after setup", name, d)
		}
	}
	many := make([]wire.VerifyProgram, MaxVerifyPrograms+1)
	if _, err := Verify(context.Background(), VerifyOptions{Programs: many}); err == nil || !strings.Contains(err.Error(), "4097 programs: at most 4096") {
		t.Errorf("4097 programs: %v", err)
	}
}
