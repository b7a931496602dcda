package vm

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel/wire"
)

// captured is one case of a corpus in testdata/kernel: what was asked and what the kernel said.
type captured struct {
	wire.Case
	Error string // "" when the kernel attached it
	Stage string
}

// readCorpus reads testdata/kernel/<name>/cases.jsonl (the captures of the Debian kernels).
func readCorpus(t *testing.T, name string) []captured {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "testdata", "kernel", name, "cases.jsonl"))
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	var out []captured
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var r struct {
			ID      string `json:"id"`
			Request struct {
				Func      string         `json:"func"`
				Proto     string         `json:"proto"`
				Progs     []jit.Prog     `json:"progs"`
				Target    string         `json:"target"`
				StructOps *jit.StructOps `json:"struct_ops"`
			} `json:"request"`
			Error string `json:"error"`
			Stage string `json:"stage"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		fn := r.Request.Func
		if fn == "" { // a BPF target's request gives its prototype: "int tj_args0(void)"
			if m := regexp.MustCompile(`(\w+)\(`).FindStringSubmatch(r.Request.Proto); m != nil {
				fn = m[1]
			}
		}
		cs := wire.Case{ID: r.ID, Func: fn, Progs: r.Request.Progs, Target: r.Request.Target}
		if so := r.Request.StructOps; so != nil {
			cs.Func = so.String()
			cs.StructOps = &wire.StructOpsCase{Ops: so.Ops}
		}
		out = append(out, captured{cs, r.Error, r.Stage})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func casesOf(cs []captured) []wire.Case {
	out := make([]wire.Case, len(cs))
	for i, c := range cs {
		out[i] = c.Case
	}
	return out
}

func missing(ms []MissingOption, opt string) *MissingOption {
	for i := range ms {
		if ms[i].Option == opt {
			return &ms[i]
		}
	}
	return nil
}

// TestDebianConfigsCapture: the Debian kernels are captured daily, so their configs have no
// fatal miss; every case a non-fatal miss claims to stop was refused in that kernel's corpus.
func TestDebianConfigsCapture(t *testing.T) {
	for _, p := range debianProfiles(t) {
		name := filepath.Base(p.Dir)
		t.Run(name, func(t *testing.T) {
			c, err := ReadKernelConfig(p.Config)
			if err != nil {
				t.Fatal(err)
			}
			if f := Fatal(CheckConfig(c, p.Arch, nil)); len(f) > 0 {
				t.Fatalf("fatal misses in a kernel that is captured: %+v", f)
			}
			corpus := readCorpus(t, name) // a kernel fetched by name has none in testdata
			ms := CheckConfig(c, p.Arch, casesOf(corpus))
			if err := RefuseConfig(c, ms); err != nil {
				t.Fatal(err)
			}
			byID := map[string]captured{}
			for _, cs := range corpus {
				byID[cs.ID] = cs
			}
			for _, m := range ms {
				t.Logf("%s: %s (%d cases)", m.Option, m.Cost, len(m.Cases))
				for _, id := range m.Cases {
					if byID[id].Error == "" {
						t.Errorf("%s stops %s, which the kernel attached", m.Option, id)
					}
				}
			}
			// Direct calls are missing exactly where no kernel-function case attached.
			kfunc := func(cs captured) bool { return cs.Target == "" && cs.StructOps == nil }
			attached := slices.ContainsFunc(corpus, func(cs captured) bool { return kfunc(cs) && cs.Error == "" })
			if dc := missing(ms, "CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS"); (dc == nil) != attached {
				t.Errorf("DYNAMIC_FTRACE_WITH_DIRECT_CALLS missing: %v; a kernel-function case attached: %v", dc != nil, attached)
			} else if dc != nil {
				for _, cs := range corpus {
					if stopped := slices.Contains(dc.Cases, cs.ID); stopped != kfunc(cs) {
						t.Errorf("%s (target %q): stopped %v", cs.ID, cs.Target, stopped)
					}
				}
			}
			// Debian builds without error injection; the syscall wrappers the kernel refused
			// fmod_ret or sleepable on are what that costs.
			fei := missing(ms, "CONFIG_FUNCTION_ERROR_INJECTION")
			if fei == nil {
				t.Fatal("FUNCTION_ERROR_INJECTION is not reported missing; Debian's configs do not set it")
			}
			for _, cs := range corpus {
				wrapper := strings.HasPrefix(cs.Func, "__x64_sys_") || strings.HasPrefix(cs.Func, "__arm64_sys_")
				refused := cs.Stage == "load" && (strings.Contains(cs.Error, "is not modifiable") || strings.Contains(cs.Error, "is not sleepable"))
				if wrapper && refused && !slices.Contains(fei.Cases, cs.ID) {
					t.Errorf("%s: refused (%s), not listed as stopped by FUNCTION_ERROR_INJECTION", cs.ID, cs.Error)
				}
			}
			for _, id := range fei.Cases {
				if byID[id].Stage != "load" {
					t.Errorf("%s: listed for FUNCTION_ERROR_INJECTION, the kernel said %q at %q", id, byID[id].Error, byID[id].Stage)
				}
			}
		})
	}
}

// The fatal options per arch, written out here rather than taken from Requirements.
var wantFatal = map[string][]string{
	"amd64": {"BPF_SYSCALL", "BPF_JIT", "DEBUG_INFO_BTF", "BPF_EVENTS", "NET", "KALLSYMS",
		"BLK_DEV_INITRD", "RD_GZIP", "BINFMT_ELF", "FUTEX", "EPOLL", "EVENTFD", "PROC_FS", "SYSFS", "SERIAL_8250", "SERIAL_8250_CONSOLE"},
	"arm64": {"BPF_SYSCALL", "BPF_JIT", "DEBUG_INFO_BTF", "BPF_EVENTS", "NET", "KALLSYMS",
		"BLK_DEV_INITRD", "RD_GZIP", "BINFMT_ELF", "FUTEX", "EPOLL", "EVENTFD", "PROC_FS", "SYSFS", "SERIAL_AMBA_PL011", "SERIAL_AMBA_PL011_CONSOLE"},
}

// What each fatal option's cost has to say.
var wantCost = map[string]string{
	"BPF_SYSCALL": "bpf(2)", "BPF_JIT": "trampoline",
	"DEBUG_INFO_BTF": "/sys/kernel/btf/vmlinux", "BPF_EVENTS": "BPF_PROG_TYPE_TRACING", "NET": "SCHED_CLS",
	"KALLSYMS": "/proc/kallsyms", "BLK_DEV_INITRD": "initramfs", "RD_GZIP": "gzip initramfs", "BINFMT_ELF": "ELF",
	"FUTEX": "futex", "EPOLL": "epoll", "EVENTFD": "eventfd", "PROC_FS": "/proc", "SYSFS": "sysfs", "SERIAL_8250": "ttyS0", "SERIAL_8250_CONSOLE": "ttyS0",
	"SERIAL_AMBA_PL011": "ttyAMA0", "SERIAL_AMBA_PL011_CONSOLE": "ttyAMA0",
}

// edit returns config text with option's line replaced by line ("" drops it).
func edit(t *testing.T, text, option, line string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^CONFIG_` + option + `=.*$`)
	if !re.MatchString(text) {
		t.Fatalf("the config does not set CONFIG_%s", option)
	}
	return re.ReplaceAllString(text, line)
}

func profileConfig(t *testing.T, arch string) (string, debianProfile) {
	for _, p := range debianProfiles(t) {
		if p.Arch == arch && p.Kernel == "6.12" {
			b, err := os.ReadFile(p.Config)
			if err != nil {
				t.Fatal(err)
			}
			return string(b), p
		}
	}
	t.Skipf("no cached 6.12 %s config", arch)
	return "", debianProfile{}
}

// TestFatalOptionRemoved: a config without one fatal option, or with it as a module, reports
// exactly that option, with its cost, and is refused.
func TestFatalOptionRemoved(t *testing.T) {
	for arch, opts := range wantFatal {
		text, _ := profileConfig(t, arch)
		for _, opt := range opts {
			for _, line := range []string{"", "# CONFIG_" + opt + " is not set", "CONFIG_" + opt + "=m"} {
				c, err := ParseKernelConfig([]byte(edit(t, text, opt, line)), "test.config")
				if err != nil {
					t.Fatal(err)
				}
				ms := CheckConfig(c, arch, nil)
				f := Fatal(ms)
				wantValue := map[bool]string{true: "m"}[strings.HasSuffix(line, "=m")]
				if len(f) != 1 || f[0].Option != "CONFIG_"+opt || f[0].Value != wantValue || !strings.Contains(f[0].Cost, wantCost[opt]) {
					t.Errorf("%s %s with %q: fatal misses %+v", arch, opt, line, f)
					continue
				}
				err = RefuseConfig(c, ms)
				state := map[string]string{"": "is not set", "m": "=m (a module: the guest loads none)"}[wantValue]
				if want := "test.config: the kernel cannot be captured:\n  CONFIG_" + opt + " " + state + ": " + f[0].Cost; err == nil || err.Error() != want {
					t.Errorf("RefuseConfig: %v\nwant %s", err, want)
				}
			}
		}
	}
}

// TestNonFatalCosts: what each non-fatal miss stops, in terms of the corpus's cases.
func TestNonFatalCosts(t *testing.T) {
	text, p := profileConfig(t, "amd64")
	corpus := casesOf(readCorpus(t, "6.12-amd64"))
	var lsm, kernelFuncs []string
	for _, cs := range corpus {
		if slices.ContainsFunc(cs.Progs, func(p jit.Prog) bool { return p.Kind == btfmodel.LSM }) {
			lsm = append(lsm, cs.ID)
		}
		if cs.Target != "bpf" && cs.StructOps == nil { // struct_ops images need no ftrace
			kernelFuncs = append(kernelFuncs, cs.ID)
		}
	}
	if len(lsm) == 0 || len(kernelFuncs) == len(corpus) {
		t.Fatalf("the corpus has %d LSM cases, %d of %d on kernel functions", len(lsm), len(kernelFuncs), len(corpus))
	}
	for _, tc := range []struct {
		opt   string
		cases []string
		cost  string
	}{
		{"BPF_LSM", lsm, "LSM cases"},
		{"FUNCTION_TRACER", kernelFuncs, "the BPF-program targets (tj_args*) still run"},
		{"DYNAMIC_FTRACE", kernelFuncs, "register_fentry"},
		{"DYNAMIC_FTRACE_WITH_DIRECT_CALLS", kernelFuncs, "ftrace direct calls"},
	} {
		c, err := ParseKernelConfig([]byte(edit(t, text, tc.opt, "")), p.Config)
		if err != nil {
			t.Fatal(err)
		}
		ms := CheckConfig(c, "", corpus)
		m := missing(ms, "CONFIG_"+tc.opt)
		if m == nil || m.Fatal || !strings.Contains(m.Cost, tc.cost) || !slices.Equal(m.Cases, tc.cases) {
			t.Errorf("%s: %+v\nwant %d cases %v", tc.opt, m, len(tc.cases), tc.cases)
		}
		if len(Fatal(ms)) != 0 {
			t.Errorf("%s: fatal misses %+v", tc.opt, Fatal(ms))
		}
	}
	// DEBUG_FS matters only where there is an error-injection list to read.
	noDebugFS := edit(t, text, "DEBUG_FS", "")
	c, _ := ParseKernelConfig([]byte(noDebugFS), "a")
	if m := missing(CheckConfig(c, "amd64", nil), "CONFIG_DEBUG_FS"); m != nil {
		t.Errorf("DEBUG_FS reported without FUNCTION_ERROR_INJECTION: %+v", m)
	}
	c, _ = ParseKernelConfig([]byte(noDebugFS+"CONFIG_FUNCTION_ERROR_INJECTION=y\n"), "b")
	ms := CheckConfig(c, "amd64", nil)
	if m := missing(ms, "CONFIG_DEBUG_FS"); m == nil || m.Fatal || !strings.Contains(m.Cost, "error_injection/list") {
		t.Errorf("DEBUG_FS with FUNCTION_ERROR_INJECTION=y: %+v", m)
	}
	if m := missing(ms, "CONFIG_FUNCTION_ERROR_INJECTION"); m != nil {
		t.Errorf("FUNCTION_ERROR_INJECTION=y reported missing: %+v", m)
	}
	// Another arch's console is not asked for.
	armText, _ := profileConfig(t, "arm64")
	c, _ = ParseKernelConfig([]byte(edit(t, armText, "SERIAL_8250", "")), "c")
	if f := Fatal(CheckConfig(c, "arm64", nil)); len(f) != 0 {
		t.Errorf("arm64 without 8250: %+v", f)
	}
}

// TestProfileFor: the profile a config's version is modelled by.
func TestProfileFor(t *testing.T) {
	for header, want := range map[string]btfmodel.Kernel{
		"# Linux/x86 6.1.176 Kernel Configuration":   "6.1",
		"# Linux/x86 5.15.0 Kernel Configuration":    "6.1",
		"# Linux/x86 6.11.9 Kernel Configuration":    "6.1",
		"# Linux/x86 6.12.117 Kernel Configuration":  "6.12",
		"# Linux/arm64 6.17.1 Kernel Configuration":  "6.12",
		"# Linux/arm64 7.3.4 Kernel Configuration":   "7.2",
		"# Linux/x86 7.2.0-rc1 Kernel Configuration": "7.2",
		"# Linux/x86 6.13-rc1 Kernel Configuration":  "6.12",
		"# no header": btfmodel.DefaultKernel,
		"# Linux/x86 6.12.95+deb12 Kernel Configuration": "6.12",
		"# Linux/x86 banana Kernel Configuration":        btfmodel.DefaultKernel,
	} {
		c, err := ParseKernelConfig([]byte(header+"\nCONFIG_X86_64=y\n"), "h")
		if err != nil {
			t.Fatal(err)
		}
		if got := profileFor(c); got != want {
			t.Errorf("%s: profile %s, want %s", header, got, want)
		}
	}
}

// TestJITDefaultOnNotFatal: Debian's riscv64 kernels start with the JIT off (no
// CONFIG_BPF_JIT_DEFAULT_ON); the agent enables it, so such a config is not refused, on
// riscv64 as it is nor on another arch with the option dropped, and the cost says what the
// agent does about it.
func TestJITDefaultOnNotFatal(t *testing.T) {
	for _, p := range debianProfiles(t) {
		b, err := os.ReadFile(p.Config)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if strings.Contains(text, "\nCONFIG_BPF_JIT_DEFAULT_ON=y") {
			text = edit(t, text, "BPF_JIT_DEFAULT_ON", "# CONFIG_BPF_JIT_DEFAULT_ON is not set")
		} else if p.Arch != "riscv64" {
			continue
		}
		c, err := ParseKernelConfig([]byte(text), p.Config)
		if err != nil {
			t.Fatal(err)
		}
		ms := CheckConfig(c, p.Arch, nil)
		if f := Fatal(ms); len(f) != 0 {
			t.Errorf("%s %s without BPF_JIT_DEFAULT_ON: refused for %+v", p.Kernel, p.Arch, f)
		}
		i := slices.IndexFunc(ms, func(m MissingOption) bool { return m.Option == "CONFIG_BPF_JIT_DEFAULT_ON" })
		if i < 0 || !strings.Contains(ms[i].Cost, "bpf_jit_enable=1") {
			t.Errorf("%s %s: BPF_JIT_DEFAULT_ON not reported with the agent's sysctl: %+v", p.Kernel, p.Arch, ms)
		}
	}
}
