package vm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeRoot lays out a fake etc/ tree with the given files.
func writeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, data := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestMainArchiveDeb822(t *testing.T) {
	root := writeRoot(t, map[string]string{
		"etc/os-release": "ID=debian\nVERSION_CODENAME=bookworm\n",
		"etc/apt/sources.list.d/debian.sources": `Types: deb
# a comment naming http://mirror.example/ignored
URIs: http://archive.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://archive.example/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
`,
		"etc/apt/sources.list.d/other.sources.disabled": "Types: deb\nURIs: http://wrong.example/\nSuites: bookworm\nComponents: main\n",
		"etc/apt/sources.list.d/disabled.sources":       "Enabled: no\nTypes: deb\nURIs: http://wrong.example/debian\nSuites: bookworm\nComponents: main\n",
	})
	srcs, err := ReadSources(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 3 {
		t.Fatalf("got %d entries, want 3 (two suites of one stanza, one security): %+v", len(srcs), srcs)
	}
	s, err := MainArchive(srcs, Codename(root))
	if err != nil {
		t.Fatal(err)
	}
	if s.URI != "http://archive.example/debian" || s.Suite != "bookworm" ||
		s.SignedBy != "/usr/share/keyrings/debian-archive-keyring.gpg" {
		t.Errorf("picked %+v", s)
	}
}

func TestMainArchiveOneLine(t *testing.T) {
	root := writeRoot(t, map[string]string{
		"etc/apt/sources.list": `# deb http://old.example/debian bookworm main
deb http://archive.example/debian-security bookworm-security main
deb-src http://archive.example/debian bookworm main
deb [arch=amd64 signed-by=/k.gpg] https://archive.example/debian/ bookworm main contrib
deb http://archive.example/debian bookworm-updates main
`,
		"etc/apt/sources.list.d/extra.list": "deb https://vendor.example/apt stable main\n",
	})
	srcs, err := ReadSources(root)
	if err != nil {
		t.Fatal(err)
	}
	// No os-release: the codename-looking suite wins, and "stable" from a later file loses
	// because the first qualifying entry is taken.
	s, err := MainArchive(srcs, Codename(root))
	if err != nil {
		t.Fatal(err)
	}
	if s.URI != "https://archive.example/debian" || s.Suite != "bookworm" || s.SignedBy != "/k.gpg" {
		t.Errorf("picked %+v", s)
	}
	if got := strings.Join(s.Components, ","); got != "main,contrib" {
		t.Errorf("components %q", got)
	}
}

func TestMainArchiveMissing(t *testing.T) {
	root := writeRoot(t, map[string]string{
		"etc/os-release":       "VERSION_CODENAME=bookworm\n",
		"etc/apt/sources.list": "deb http://archive.example/debian-security bookworm-security main\n",
	})
	srcs, err := ReadSources(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := MainArchive(srcs, "bookworm"); err == nil || !strings.Contains(err.Error(), `"bookworm"`) {
		t.Fatalf("want an error naming the codename, got %v", err)
	}
}

func TestParseOneLineErrors(t *testing.T) {
	if _, err := ParseOneLine(strings.NewReader("deb http://archive.example/debian\n"), "x.list"); err == nil {
		t.Fatal("a line without a suite must fail")
	}
}

func TestSourcesList(t *testing.T) {
	a := &Apt{URI: "http://archive.example/debian", Keyring: "/k.gpg", Arches: []string{"amd64", "arm64"},
		Suites: []string{"bookworm", "trixie"}}
	got := a.SourcesList()
	for _, want := range []string{
		"deb [arch=amd64,arm64 signed-by=/k.gpg] http://archive.example/debian bookworm main\n",
		"deb [arch=amd64,arm64 signed-by=/k.gpg] http://archive.example/debian trixie main\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("sources.list lacks %q:\n%s", want, got)
		}
	}
}
