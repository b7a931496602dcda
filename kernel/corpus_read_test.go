package kernel

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A corpus that does not hold together is refused whole, naming the line; before these checks
// a short addrs.progs reached jit.Resolve and panicked, duplicate ids were compared twice and
// an empty corpus reported "0/0 byte-identical" with exit 0.
func TestParseCorpusRefuses(t *testing.T) {
	const ok = `{"id":"a","request":{"arch":"amd64","kernel":"6.12","proto":"int f(int a)","progs":[{"kind":"fentry"}]},"image":"c3"}`
	for _, c := range []struct{ name, doc, want string }{
		{"empty", "", "no cases"},
		{"blank lines only", "\n\n  \n", "no cases"},
		{"duplicate id", ok + "\n" + ok + "\n", `cases.jsonl:2: case id "a" already used on line 1`},
		{"no id", `{"request":{"arch":"amd64","kernel":"6.12","proto":"int f(int a)","progs":[{"kind":"fentry"}]}}`, "cases.jsonl:1: case has no id"},
		{"no request", `{"id":"x"}`, "case x has no request"},
		{"short addrs.progs", `{"id":"x","request":{"arch":"amd64","kernel":"6.12","proto":"int f(int a)","progs":[{"kind":"fentry"},{"kind":"fexit"}],"addrs":{"image":"0x1000","func":"0x2000","progs":[{"prog":"0x1","bpf_func":"0x2"}]}},"image":"c3"}`,
			"cases.jsonl:1: case x: request: addrs.progs has 1 entries for 2 progs"},
		{"flags over 32 bits", `{"id":"x","request":{"arch":"amd64","kernel":"6.12","proto":"int f(int a)","progs":[{"kind":"fentry"}],"flags":"0x100000000"},"image":"c3"}`,
			"wider than the kernel's 32-bit"},
		{"bad image hex", `{"id":"x","request":{"arch":"amd64","kernel":"6.12","proto":"int f(int a)","progs":[{"kind":"fentry"}]},"image":"zz"}`, "case x: image:"},
		{"not JSON", "{", "cases.jsonl:1:"},
		{"line too long", `{"id":"` + strings.Repeat("x", maxCorpusLine) + `"}`, "a line longer than 16 MiB"},
	} {
		_, err := ParseCorpus(strings.NewReader(c.doc), "cases.jsonl", "")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	cases, err := ParseCorpus(strings.NewReader(ok+"\n"), "cases.jsonl", "")
	if err != nil || len(cases) != 1 {
		t.Fatalf("a good corpus: %v", err)
	}
}

func TestReadCorpusFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadCorpus(dir); err == nil || !strings.Contains(err.Error(), "read corpus") {
		t.Errorf("no cases.jsonl: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "cases.jsonl"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCorpus(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory as cases.jsonl: %v", err)
	}
}

// A partial capture (an interrupted `kernel capture`) is never read as a corpus.
func TestReadCorpusRefusesPartial(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "cases.jsonl"), []byte(`{"id":"a","request":{"arch":"amd64","kernel":"6.12","proto":"int f(int a)","progs":[{"kind":"fentry"}]},"image":"c3"}`+"\n"), 0o644)
	if _, err := ReadCorpus(dir); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, PartialNote), []byte("missing: b\n"), 0o644)
	if _, err := ReadCorpus(dir); err == nil || !strings.Contains(err.Error(), "interrupted capture") {
		t.Errorf("got %v", err)
	}
}
