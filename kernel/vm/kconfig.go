package vm

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// maxKernelConfig bounds a .config read: a distribution's is ~150 KiB.
const maxKernelConfig = configMax

// KernelConfig is a kernel .config (scripts/kconfig/confdata.c writes it): CONFIG_X=value
// lines, "# CONFIG_X is not set" for a bool or tristate that is off, and comments.
type KernelConfig struct {
	values map[string]string // CONFIG_X -> "y", "m", a number, a string without quotes
	unset  map[string]bool   // "# CONFIG_X is not set"
	header string            // "Linux/x86 6.12.117" of "# Linux/x86 6.12.117 Kernel Configuration"
	// Source: the file, or "embedded in FILE".
	Source string
}

// ReadKernelConfig reads and parses the .config at path.
func ReadKernelConfig(path string) (*KernelConfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory, not a kernel .config", path)
	} else if st.Size() > maxKernelConfig {
		return nil, fmt.Errorf("%s: %d bytes: larger than the %d MiB a kernel .config may be", path, st.Size(), maxKernelConfig>>20)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKernelConfig+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return ParseKernelConfig(data, path)
}

// ParseKernelConfig parses a .config; source names it in errors.
func ParseKernelConfig(data []byte, source string) (*KernelConfig, error) {
	if len(data) > maxKernelConfig {
		return nil, fmt.Errorf("%s: larger than the %d MiB a kernel .config may be", source, maxKernelConfig>>20)
	}
	c := &KernelConfig{values: map[string]string{}, unset: map[string]bool{}, Source: source}
	var firstBad error
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxKernelConfig)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if err := c.parseLine(line); err != nil && firstBad == nil {
			firstBad = fmt.Errorf("%s: line %d: %v", source, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", source, err)
	}
	if len(c.values) == 0 && len(c.unset) == 0 {
		return nil, fmt.Errorf("%s: not a kernel .config (no CONFIG_ lines)", source)
	}
	if firstBad != nil {
		return nil, firstBad
	}
	return c, nil
}

func (c *KernelConfig) parseLine(line string) error {
	t := strings.TrimSpace(line)
	switch {
	case t == "":
		return nil
	case strings.HasPrefix(t, "#"):
		body := strings.TrimSpace(strings.TrimPrefix(t, "#"))
		if opt, ok := strings.CutSuffix(body, " is not set"); ok && strings.HasPrefix(opt, "CONFIG_") {
			if !validOption(opt) {
				return fmt.Errorf("bad option name %q", opt)
			}
			c.unset[opt] = true
			delete(c.values, opt)
			return nil
		}
		if h, ok := strings.CutSuffix(body, " Kernel Configuration"); ok && strings.HasPrefix(h, "Linux/") && c.header == "" {
			c.header = h
		}
		return nil
	}
	opt, val, ok := strings.Cut(t, "=")
	if !ok || !strings.HasPrefix(opt, "CONFIG_") {
		return fmt.Errorf("not a CONFIG_ line or comment: %q", clip(line, 60))
	}
	if !validOption(opt) {
		return fmt.Errorf("bad option name %q", clip(opt, 60))
	}
	if strings.HasPrefix(val, `"`) {
		s, err := strconv.Unquote(val)
		if err != nil {
			return fmt.Errorf("%s: bad string value %s", opt, clip(val, 60))
		}
		val = s
	} else if val == "" {
		return fmt.Errorf("%s: empty value", opt)
	}
	c.values[opt] = val
	delete(c.unset, opt)
	return nil
}

func validOption(s string) bool {
	if len(s) <= len("CONFIG_") {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z') {
			return false
		}
	}
	return true
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func configName(option string) string {
	if !strings.HasPrefix(option, "CONFIG_") {
		return "CONFIG_" + option
	}
	return option
}

// Value is the option's value ("CONFIG_X" or "X"): "y", "m", a number, a string without
// quotes; "" when unset ("# CONFIG_X is not set", or absent).
func (c *KernelConfig) Value(option string) string {
	return c.values[configName(option)]
}

// Options is the number of options the config sets.
func (c *KernelConfig) Options() int { return len(c.values) }

// Release is the version of the "# Linux/x86 6.12.95 Kernel Configuration" header, if any.
func (c *KernelConfig) Release() string {
	_, v, _ := strings.Cut(c.header, " ")
	return v
}

// Arch is the architecture the config is for, as trampjit names it ("amd64", "arm64",
// "riscv64"), from the header and CONFIG_64BIT; "" when it does not say.
func (c *KernelConfig) Arch() string {
	karch, _, _ := strings.Cut(strings.TrimPrefix(c.header, "Linux/"), " ")
	switch {
	case c.Value("X86_64") == "y" || karch == "x86" && c.Value("64BIT") == "y":
		return "amd64"
	case c.Value("ARM64") == "y" || karch == "arm64":
		return "arm64"
	case c.Value("RISCV") == "y" && c.Value("64BIT") == "y":
		return "riscv64"
	case karch == "x86":
		return "386"
	case karch == "riscv":
		return "riscv32"
	}
	return karch
}

// KernelConfig is the file's embedded config, parsed; nil, nil when it has none.
func (k *KernelFile) KernelConfig() (*KernelConfig, error) {
	b, err := k.Config()
	if err != nil || b == nil {
		return nil, err
	}
	c, err := ParseKernelConfig(b, "embedded in "+k.Path)
	if err != nil {
		return nil, err
	}
	return c, nil
}
