package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Suites the kernel profiles come from.
const (
	SuiteBookworm = "bookworm" // Linux 6.1
	SuiteTrixie   = "trixie"   // Linux 6.12
)

// Apt runs apt-get and apt-cache against a private configuration under Dir: its own
// sources.list, state, cache and (empty) dpkg status, so the system's apt setup is read
// (to find the archive) but never changed.
//
// Signatures: the private sources.list names the keyring of the system's own main archive
// entry (its Signed-By, else the debian-archive-keyring file). bookworm's
// debian-archive-keyring (2023.3+deb12u2 and later) already carries the 13/trixie archive and
// release keys, so trixie's InRelease verifies without trusted=yes; if it does not, apt's
// NO_PUBKEY error is reported with that explanation.
type Apt struct {
	Dir     string // private root, e.g. ~/.cache/trampjit/apt
	URI     string // archive root derived from the system sources
	Keyring string // keyring file used for signed-by
	Arches  []string
	Suites  []string
	Log     io.Writer // apt's output goes here (progress); nil discards it
}

// DefaultKeyring is where debian-archive-keyring installs the archive keys.
const DefaultKeyring = "/usr/share/keyrings/debian-archive-keyring.gpg"

// NewApt derives the archive from the machine's apt sources and prepares the private
// configuration under dir.
func NewApt(dir string) (*Apt, error) {
	srcs, err := ReadSources("/")
	if err != nil {
		return nil, fmt.Errorf("read the system apt sources: %w", err)
	}
	main, err := MainArchive(srcs, Codename("/"))
	if err != nil {
		return nil, err
	}
	key := main.SignedBy
	if key == "" || strings.Contains(key, "\n") || !filepath.IsAbs(key) {
		key = DefaultKeyring // inline keys or fingerprints: fall back to the package keyring
	}
	if _, err := os.Stat(key); err != nil {
		return nil, fmt.Errorf("archive keyring %s: %w (install debian-archive-keyring)", key, err)
	}
	a := &Apt{Dir: dir, URI: main.URI, Keyring: key,
		Arches: slices.Clone(FetchArches), Suites: []string{SuiteBookworm, SuiteTrixie}}
	return a, a.setup()
}

// SourcesList renders the private sources.list.
func (a *Apt) SourcesList() string {
	var b strings.Builder
	b.WriteString("# Written by trampjit (kernel/vm); derived from the system's main archive entry.\n")
	for _, s := range a.Suites {
		fmt.Fprintf(&b, "deb [arch=%s signed-by=%s] %s %s main\n",
			strings.Join(a.Arches, ","), a.Keyring, a.URI, s)
	}
	return b.String()
}

func (a *Apt) setup() error {
	for _, d := range []string{"state/lists/partial", "cache/archives/partial", "preferences.d", "debs"} {
		if err := os.MkdirAll(filepath.Join(a.Dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := writeIfChanged(filepath.Join(a.Dir, "sources.list"), []byte(a.SourcesList())); err != nil {
		return err
	}
	st := filepath.Join(a.Dir, "status")
	if _, err := os.Stat(st); err != nil {
		return os.WriteFile(st, nil, 0o644)
	}
	return nil
}

func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	return os.WriteFile(path, data, 0o644)
}

// options are the -o flags that point apt at the private configuration.
func (a *Apt) options() []string {
	o := []string{
		"Dir::Etc::sourcelist=" + filepath.Join(a.Dir, "sources.list"),
		"Dir::Etc::sourceparts=-",
		"Dir::Etc::preferences=" + filepath.Join(a.Dir, "preferences"),
		"Dir::Etc::preferencesparts=" + filepath.Join(a.Dir, "preferences.d"),
		"Dir::State=" + filepath.Join(a.Dir, "state"),
		"Dir::State::status=" + filepath.Join(a.Dir, "status"),
		"Dir::Cache=" + filepath.Join(a.Dir, "cache"),
		"APT::Architecture=" + runtime.GOARCH,
		"APT::Architectures=" + strings.Join(a.Arches, ","),
		"Acquire::Languages=none",
		// The private dirs live in the user's cache, which apt's _apt sandbox user cannot
		// read; apt would fall back to the invoking user anyway, with a warning.
		"APT::Sandbox::User=" + sandboxUser(),
	}
	var args []string
	for _, x := range o {
		args = append(args, "-o", x)
	}
	return args
}

func sandboxUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "root"
}

// run runs an apt tool with the private options and returns its stdout.
func (a *Apt) run(ctx context.Context, dir, tool string, args ...string) ([]byte, error) {
	path, err := exec.LookPath(tool)
	if err != nil {
		return nil, fmt.Errorf("%s not found: kernel fetching needs Debian's apt tools", tool)
	}
	cmd := exec.CommandContext(ctx, path, append(a.options(), args...)...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	if a.Log != nil && tool == "apt-get" {
		cmd.Stdout = io.MultiWriter(&out, a.Log)
	}
	err = cmd.Run()
	if err != nil || (tool == "apt-get" && bytes.Contains(errb.Bytes(), []byte("W: GPG error"))) {
		msg := strings.TrimSpace(errb.String())
		if strings.Contains(msg, "NO_PUBKEY") || strings.Contains(msg, "GPG error") {
			return nil, fmt.Errorf("%s %s: archive signature not verifiable with %s (does this debian-archive-keyring carry the keys of all of %v?): %s",
				tool, strings.Join(args, " "), a.Keyring, a.Suites, msg)
		}
		if err == nil {
			err = errors.New("failed")
		}
		return nil, fmt.Errorf("%s %s: %w: %s", tool, strings.Join(args, " "), err, msg)
	}
	return out.Bytes(), nil
}

// Update runs apt-get update on the private sources.
func (a *Apt) Update(ctx context.Context) error {
	_, err := a.run(ctx, a.Dir, "apt-get", "update", "-q")
	return err
}

// Fresh reports whether every suite's InRelease was fetched within maxAge, so that fetching
// several kernels in a row updates the indexes once.
func (a *Apt) Fresh(maxAge time.Duration) bool {
	lists := filepath.Join(a.Dir, "state", "lists")
	for _, s := range a.Suites {
		m, _ := filepath.Glob(filepath.Join(lists, "*_dists_"+s+"_InRelease"))
		if len(m) == 0 {
			return false
		}
		if st, err := os.Stat(m[0]); err != nil || time.Since(st.ModTime()) > maxAge {
			return false
		}
	}
	return true
}

// PkgNames lists package names starting with prefix (apt-cache pkgnames).
func (a *Apt) PkgNames(ctx context.Context, prefix string) ([]string, error) {
	out, err := a.run(ctx, a.Dir, "apt-cache", "pkgnames", prefix)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// Show returns the control stanzas apt-cache knows for pkg (e.g. "name:arm64").
func (a *Apt) Show(ctx context.Context, pkg string) ([]map[string]string, error) {
	out, err := a.run(ctx, a.Dir, "apt-cache", "show", pkg)
	if err != nil {
		return nil, err
	}
	return parseStanzas(out), nil
}

// Download fetches pkg=version:arch into the private debs directory and returns the file.
func (a *Apt) Download(ctx context.Context, pkg, arch, version string) (string, error) {
	dir := filepath.Join(a.Dir, "debs")
	name := fmt.Sprintf("%s_%s_%s.deb", pkg, strings.ReplaceAll(version, ":", "%3a"), arch)
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if _, err := a.run(ctx, dir, "apt-get", "download", "-q", fmt.Sprintf("%s:%s=%s", pkg, arch, version)); err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("apt-get download %s: expected %s: %w", pkg, name, err)
	}
	return path, nil
}

// parseStanzas splits Debian control data into field maps (continuation lines joined).
func parseStanzas(b []byte) []map[string]string {
	var out []map[string]string
	cur := map[string]string{}
	last := ""
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.TrimSpace(l) == "":
			if len(cur) > 0 {
				out = append(out, cur)
				cur = map[string]string{}
			}
		case l[0] == ' ' || l[0] == '\t':
			if last != "" {
				cur[last] += "\n" + strings.TrimSpace(l)
			}
		default:
			k, v, _ := strings.Cut(l, ":")
			last = k
			cur[k] = strings.TrimSpace(v)
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
