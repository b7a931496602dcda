package vm

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Source is one apt source entry (one URI, one suite), from either format.
type Source struct {
	Type       string   // "deb" or "deb-src"
	URI        string   // archive root, without trailing slash
	Suite      string   // e.g. "bookworm", "bookworm-updates"
	Components []string // e.g. ["main"]
	SignedBy   string   // keyring path, if the entry names one
	File       string   // where it was read
}

// ParseOneLine parses the classic sources.list format ("deb [opts] URI suite comp...").
func ParseOneLine(r io.Reader, file string) ([]Source, error) {
	var out []Source
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		s := Source{Type: f[0], File: file}
		f = f[1:]
		if len(f) > 0 && strings.HasPrefix(f[0], "[") {
			// Options run to the closing bracket, possibly across fields.
			var opts []string
			for len(f) > 0 {
				o := f[0]
				f = f[1:]
				end := strings.HasSuffix(o, "]")
				o = strings.TrimSuffix(strings.TrimPrefix(o, "["), "]")
				if o != "" {
					opts = append(opts, o)
				}
				if end {
					break
				}
			}
			for _, o := range opts {
				if k, v, ok := strings.Cut(o, "="); ok && strings.EqualFold(k, "signed-by") {
					s.SignedBy = v
				}
			}
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("%s:%d: want \"%s URI suite [components]\", got %q", file, n, s.Type, sc.Text())
		}
		s.URI = strings.TrimSuffix(f[0], "/")
		s.Suite = f[1]
		s.Components = f[2:]
		out = append(out, s)
	}
	return out, sc.Err()
}

// ParseDeb822 parses the deb822 .sources format: stanzas of "Field: value" separated by
// blank lines; each stanza expands to one Source per type, URI and suite.
func ParseDeb822(r io.Reader, file string) ([]Source, error) {
	var out []Source
	fields := map[string]string{}
	last := ""
	flush := func() {
		defer func() { fields = map[string]string{}; last = "" }()
		if len(fields) == 0 || strings.EqualFold(fields["enabled"], "no") {
			return
		}
		for _, t := range strings.Fields(fields["types"]) {
			for _, u := range strings.Fields(fields["uris"]) {
				for _, su := range strings.Fields(fields["suites"]) {
					out = append(out, Source{Type: t, URI: strings.TrimSuffix(u, "/"), Suite: su,
						Components: strings.Fields(fields["components"]),
						SignedBy:   strings.TrimSpace(fields["signed-by"]), File: file})
				}
			}
		}
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			continue
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] == ' ' || line[0] == '\t':
			// Continuation line (for instance an inline Signed-By key block).
			if last != "" {
				fields[last] += "\n" + strings.TrimSpace(line)
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				return nil, fmt.Errorf("%s: malformed deb822 line %q", file, line)
			}
			last = strings.ToLower(strings.TrimSpace(k))
			fields[last] = strings.TrimSpace(v)
		}
	}
	flush()
	return out, sc.Err()
}

// ReadSources reads the apt sources under root ("/" for the machine): etc/apt/sources.list
// and etc/apt/sources.list.d/*.list and *.sources.
func ReadSources(root string) ([]Source, error) {
	var out []Source
	read := func(path string, deb822 bool) error {
		f, err := os.Open(path)
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		defer f.Close()
		var s []Source
		if deb822 {
			s, err = ParseDeb822(f, path)
		} else {
			s, err = ParseOneLine(f, path)
		}
		out = append(out, s...)
		return err
	}
	if err := read(filepath.Join(root, "etc/apt/sources.list"), false); err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "etc/apt/sources.list.d")
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		var err error
		switch {
		case strings.HasSuffix(n, ".list"):
			err = read(filepath.Join(dir, n), false)
		case strings.HasSuffix(n, ".sources"):
			err = read(filepath.Join(dir, n), true)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Codename returns VERSION_CODENAME from root's etc/os-release, or "" if absent.
func Codename(root string) string {
	b, err := os.ReadFile(filepath.Join(root, "etc/os-release"))
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VERSION_CODENAME="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return ""
}

// MainArchive picks the main Debian archive entry: a "deb" entry with component main whose
// suite is the release codename itself (not -security, -updates, -backports...). With an
// empty codename, any suite without a '-' qualifies. It fails if no entry qualifies.
func MainArchive(srcs []Source, codename string) (Source, error) {
	for _, s := range srcs {
		if s.Type != "deb" || !hasMain(s.Components) {
			continue
		}
		if codename != "" && s.Suite != codename {
			continue
		}
		if strings.Contains(s.Suite, "-") || strings.Contains(s.Suite, "/") {
			continue
		}
		if !strings.HasPrefix(s.URI, "http://") && !strings.HasPrefix(s.URI, "https://") {
			continue // cdrom:, file:, mirror+file: cannot serve other suites reliably
		}
		return s, nil
	}
	want := "its codename"
	if codename != "" {
		want = fmt.Sprintf("%q", codename)
	}
	return Source{}, fmt.Errorf("no main Debian archive in the apt sources (want a \"deb\" entry with suite %s and component main among %d entries)", want, len(srcs))
}

func hasMain(c []string) bool {
	for _, x := range c {
		if x == "main" {
			return true
		}
	}
	return false
}
