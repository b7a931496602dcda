package mutation

import (
	"go/parser"
	"go/token"
	"sort"
	"testing"
)

const sample = `package p

import "fmt"

func f(a, b int) (int, error) {
	if a < b {
		return 0, fmt.Errorf("a %d < b", a+1)
	}
	for i := 0; i != b; i++ {
		a += 0x10
	}
	g(true)
	return a - b, nil
}

func g(bool) {}
`

// TestGenerate checks the mutants of a small file against the list written by hand, and
// that each mutated source still parses.
func TestGenerate(t *testing.T) {
	ms, err := Generate("p.go", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.ID())
		if _, err := parser.ParseFile(token.NewFileSet(), "m.go", m.Apply([]byte(sample)), 0); err != nil {
			t.Errorf("%s: mutated source does not parse: %v", m.ID(), err)
		}
	}
	want := []string{
		"p.go:6:7: < -> <=",
		"p.go:6:5: negate a < b",
		"p.go:7:3: delete return return 0, fmt.Errorf(\"a %d < b\", a+1)",
		"p.go:7:10: 0 -> 1",
		"p.go:9:11: 0 -> 1",
		"p.go:9:16: != -> ==",
		"p.go:9:14: negate i != b",
		"p.go:9:23: ++ -> --",
		"p.go:10:3: delete assignment a += 0x10",
		"p.go:10:5: += -> -=",
		"p.go:10:8: 0x10 -> 0x11",
		"p.go:10:8: 0x10 -> 0xf",
		"p.go:12:2: delete call g(true)",
		"p.go:12:4: true -> false",
		"p.go:13:2: delete return return a - b, nil",
		"p.go:13:11: - -> +",
	}
	sort.Strings(got)
	sort.Strings(want)
	if len(got) != len(want) {
		t.Fatalf("got %d mutants, want %d:\n%q", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mutant %d: got %q, want %q", i, got[i], want[i])
		}
	}
}

// TestApplyNegate checks the two edits of a negation.
func TestApplyNegate(t *testing.T) {
	ms, _ := Generate("p.go", []byte(sample))
	for _, m := range ms {
		if m.ID() == "p.go:6:5: negate a < b" {
			out := string(m.Apply([]byte(sample)))
			if want := "if !(a < b) {"; !contains(out, want) {
				t.Errorf("negated source lacks %q:\n%s", want, out)
			}
			return
		}
	}
	t.Fatal("no negation of a < b")
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestAgain: a rerun keeps kills, reruns survivors, follows a line that moved and reports
// a mutant that is no longer generated.
func TestAgain(t *testing.T) {
	ms, _ := Generate("p.go", []byte(sample))
	shifted, _ := Generate("p.go", []byte("package p\n\n"+sample[len("package p\n"):]))
	prev := []Prior{
		{ID: ms[0].ID(), Outcome: Killed},
		{ID: ms[1].ID(), Outcome: Survived},
		{ID: "p.go:99:1: < -> <=", Outcome: Survived},
	}
	out, kept := again(shifted, prev)
	if len(out) != 3 {
		t.Fatalf("%d mutants, want 3", len(out))
	}
	if out[0].Line != ms[0].Line+1 || kept[out[0].ID()] != Killed {
		t.Errorf("moved kill: %s kept %q", out[0].ID(), kept[out[0].ID()])
	}
	if out[1].Line != ms[1].Line+1 {
		t.Errorf("moved survivor: %s", out[1].ID())
	}
	if _, ok := kept[out[1].ID()]; ok {
		t.Errorf("survivor %s kept instead of run again", out[1].ID())
	}
	if kept[out[2].ID()] != Gone {
		t.Errorf("missing mutant: %q", kept[out[2].ID()])
	}
}
