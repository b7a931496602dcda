package vm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// debianProfile is one cached Debian kernel: its directory and the packaging's kernel.json.
type debianProfile struct {
	Dir     string
	Kernel  string `json:"kernel"`
	Arch    string `json:"arch"`
	Version string `json:"version"` // the package's: "6.12.117-1"
	Release string `json:"release"`
	Path    string `json:"path"`
	Config  string `json:"config"`
}

func debianProfiles(t *testing.T) []debianProfile {
	t.Helper()
	home, _ := os.UserHomeDir()
	files, _ := filepath.Glob(filepath.Join(home, ".cache/trampjit/kernels/*/kernel.json"))
	more, _ := filepath.Glob(filepath.Join(home, ".cache/trampjit/kernels/debian/*/kernel.json"))
	files = append(files, more...)
	var out []debianProfile
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p := debianProfile{Dir: filepath.Dir(f)}
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p.Config); err == nil {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Skip("no cached Debian kernels with their config (~/.cache/trampjit/kernels)")
	}
	return out
}

// TestReadDebianConfigs reads the packaged configs: release and arch as the packaging says,
// and every CONFIG_ line's value as the line spells it.
func TestReadDebianConfigs(t *testing.T) {
	for _, p := range debianProfiles(t) {
		t.Run(filepath.Base(p.Dir), func(t *testing.T) {
			c, err := ReadKernelConfig(p.Config)
			if err != nil {
				t.Fatal(err)
			}
			upstream, _, _ := strings.Cut(p.Version, "-")
			if c.Release() != upstream || c.Arch() != p.Arch || c.Source != p.Config {
				t.Errorf("release %q arch %q source %q; the package is %s %s", c.Release(), c.Arch(), c.Source, p.Version, p.Arch)
			}
			f, _ := os.ReadFile(p.Config)
			set := 0
			sc := bufio.NewScanner(bytes.NewReader(f))
			for sc.Scan() {
				line := sc.Text()
				if opt, ok := strings.CutPrefix(line, "# "); ok && strings.HasSuffix(opt, " is not set") {
					opt = strings.TrimSuffix(opt, " is not set")
					if v := c.Value(opt); v != "" {
						t.Errorf("%s is not set, Value says %q", opt, v)
					}
					continue
				}
				opt, val, ok := strings.Cut(line, "=")
				if !ok || strings.HasPrefix(line, "#") {
					continue
				}
				set++
				if len(val) >= 2 && val[0] == '"' && !strings.Contains(val, `\`) {
					val = val[1 : len(val)-1]
				}
				if got := c.Value(opt); got != val && !strings.Contains(val, `\`) {
					t.Errorf("%s: Value %q, the line says %q", opt, got, val)
				}
			}
			if c.Options() != set {
				t.Errorf("%d options, the file sets %d", c.Options(), set)
			}
			for opt, want := range map[string]string{"BPF_SYSCALL": "y", "CONFIG_BPF_SYSCALL": "y", "IKCONFIG": "", "NO_SUCH_OPTION": ""} {
				if got := c.Value(opt); got != want {
					t.Errorf("Value(%s) = %q, want %q", opt, got, want)
				}
			}
		})
	}
}

func TestParseKernelConfig(t *testing.T) {
	src := "#\n# Linux/riscv 6.18.0-rc3 Kernel Configuration\n#\r\n" +
		"CONFIG_64BIT=y\nCONFIG_RISCV=y\n" +
		"CONFIG_A=m\nCONFIG_S=\"a \\\"quoted\\\" \\\\ path\"\nCONFIG_N=0x1000\n" +
		"# CONFIG_B is not set\nCONFIG_C=y\n# CONFIG_C is not set\n   \n# a comment\n" +
		"CONFIG_D=y\r\n"
	c, err := ParseKernelConfig([]byte(src), "x.config")
	if err != nil {
		t.Fatal(err)
	}
	for opt, want := range map[string]string{"A": "m", "S": `a "quoted" \ path`, "N": "0x1000", "B": "", "C": "", "D": "y"} {
		if got := c.Value(opt); got != want {
			t.Errorf("%s = %q, want %q", opt, got, want)
		}
	}
	if c.Release() != "6.18.0-rc3" || c.Arch() != "riscv64" || c.Source != "x.config" {
		t.Errorf("release %q arch %q source %q", c.Release(), c.Arch(), c.Source)
	}
	// Without the header: no release; the arch from the options.
	c, err = ParseKernelConfig([]byte("CONFIG_X86_64=y\nCONFIG_64BIT=y\n"), "y")
	if err != nil || c.Release() != "" || c.Arch() != "amd64" {
		t.Errorf("%v release %q arch %q", err, c.Release(), c.Arch())
	}
}

func TestKernelConfigErrors(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge")
	f, _ := os.Create(huge)
	f.Truncate(maxKernelConfig + 1)
	f.Close()
	for _, tc := range []struct {
		name, data, path, want string
	}{
		{name: "garbage", data: "CONFIG_A=y\nCONFIG_B=y\nhello world\nmore garbage\n", want: `line 3: not a CONFIG_ line or comment: "hello world"`},
		{name: "empty-value", data: "CONFIG_A=y\nCONFIG_B=\n", want: "line 2: CONFIG_B: empty value"},
		{name: "bad-string", data: "CONFIG_A=y\nCONFIG_S=\"open\n", want: `line 2: CONFIG_S: bad string value "open`},
		{name: "bad-name", data: "CONFIG_A=y\nCONFIG_B-C=y\n", want: `line 2: bad option name "CONFIG_B-C"`},
		{name: "not-a-config", data: "hello\nworld\n", want: "not a kernel .config (no CONFIG_ lines)"},
		{name: "empty", data: "", want: "not a kernel .config (no CONFIG_ lines)"},
		{name: "binary", data: "\x7fELF\x02\x01\x01\x00\x00", want: "not a kernel .config (no CONFIG_ lines)"},
		{name: "directory", path: dir, want: "is a directory, not a kernel .config"},
		{name: "huge", path: huge, want: fmt.Sprintf("%d bytes: larger than the 4 MiB a kernel .config may be", maxKernelConfig+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = writeFile(t, tc.name, []byte(tc.data))
			}
			_, err := ReadKernelConfig(path)
			if want := path + ": " + tc.want; err == nil || err.Error() != want {
				t.Errorf("got  %v\nwant %s", err, want)
			}
		})
	}
	if _, err := ReadKernelConfig(filepath.Join(dir, "absent")); err == nil || !strings.Contains(err.Error(), "absent: no such file") {
		t.Errorf("absent file: %v", err)
	}
}
