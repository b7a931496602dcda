package vm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel/wire"
)

// Requirement is a kernel configuration option a capture depends on.
type Requirement struct {
	Options []string // all needed (one is the usual case); "=y": built in, a module is not loaded
	Arch    string   // "" for every architecture
	Fatal   bool     // nothing can be captured without it: the kernel is refused before it boots
	Cost    string   // what cannot run without it, said to the user
	// Stops reports, for a non-fatal requirement, whether a case cannot run without it. Nil
	// when that depends on the kernel's version (use StopsCase, or CheckConfig) or when the
	// requirement stops no case by itself.
	Stops func(c wire.Case) bool `json:"-"`
	// When, if set, says whether the requirement applies to a config at all (DEBUG_FS
	// matters only to a kernel that has an error-injection list to show).
	When func(c *KernelConfig) bool `json:"-"`
	// stopsIn is Stops for a kernel whose profile and arch are known.
	stopsIn func(k btfmodel.Kernel, arch btfmodel.Arch, c wire.Case) bool
}

// kernelFunction: the case attaches to a kernel function, not to a BPF program the agent
// loads (wire.Case.Target "bpf"), and is no struct_ops member (whose image is entered through
// its ops table, without ftrace).
func kernelFunction(c wire.Case) bool { return c.Target == "" && c.StructOps == nil }

func hasKind(c wire.Case, k btfmodel.AttachType) bool {
	return slices.ContainsFunc(c.Progs, func(p jit.Prog) bool { return p.Kind == k })
}

// Requirements is what the guest, the agent and the catalogue need of a kernel's config.
// The agent (kernel/agent) is a static Go ELF run as /init from a gzip initramfs; it mounts
// proc, sysfs, debugfs, tracefs and bpffs, reads /proc/kallsyms and /sys/kernel/btf/vmlinux,
// reads kernel memory with a SchedCLS program through BPF_PROG_TEST_RUN, and talks over
// the serial console.
var Requirements = []Requirement{
	// The bpf(2) syscall itself (kernel/bpf/syscall.c; kernel/bpf/Kconfig BPF_SYSCALL).
	{Options: []string{"BPF_SYSCALL"}, Fatal: true,
		Cost: "there is no bpf(2) syscall: no program can be loaded"},
	// Trampolines are JIT output (arch_prepare_bpf_trampoline in arch/*/net/bpf_jit_comp.c,
	// built only with BPF_JIT; bpf_types.h registers BPF_PROG_TYPE_LSM only under
	// CONFIG_BPF_JIT).
	{Options: []string{"BPF_JIT"}, Fatal: true,
		Cost: "no BPF JIT: the kernel builds no trampoline (arch_prepare_bpf_trampoline is JIT code) and programs run in the interpreter"},
	// The programs a trampoline calls must be JITed: bpf_jit_enable starts at
	// IS_BUILTIN(CONFIG_BPF_JIT_DEFAULT_ON) (kernel/bpf/core.c; Debian's riscv64 kernels start
	// with it off). The agent writes 1 to /proc/sys/net/core/bpf_jit_enable as a guest's
	// init; it leaves a host's sysctl alone and says so.
	{Options: []string{"BPF_JIT_DEFAULT_ON"},
		Cost: "the JIT starts disabled: a guest's agent enables it (net.core.bpf_jit_enable=1); with --host, set it first, or programs run in the interpreter and every trampoline calls it"},
	// fentry/fexit/fmod_ret name their target by BTF id in vmlinux BTF (bpf_check_attach_target,
	// kernel/bpf/verifier.c); the agent reads /sys/kernel/btf/vmlinux (kernel/bpf/sysfs_btf.c)
	// and the corpus carries it.
	{Options: []string{"DEBUG_INFO_BTF"}, Fatal: true,
		Cost: "no vmlinux BTF (/sys/kernel/btf/vmlinux): tracing programs cannot name their target and the corpus has no BTF"},
	// BPF_PROG_TYPE_TRACING (fentry, fexit, fmod_ret, fsession) is registered under
	// #ifdef CONFIG_BPF_EVENTS in include/linux/bpf_types.h.
	{Options: []string{"BPF_EVENTS"}, Fatal: true,
		Cost: "no BPF_PROG_TYPE_TRACING (include/linux/bpf_types.h registers it under CONFIG_BPF_EVENTS): no fentry, fexit or fmod_ret program loads"},
	// BPF_PROG_TYPE_SCHED_CLS (the agent's kernel-memory reader) is under #ifdef CONFIG_NET in
	// bpf_types.h, and BPF_PROG_TEST_RUN of it and of tracing programs, with bpf_fentry_test*
	// and bpf_modify_return_test*, is net/bpf/test_run.c.
	{Options: []string{"NET"}, Fatal: true,
		Cost: "no BPF_PROG_TYPE_SCHED_CLS nor net/bpf/test_run.c: the agent cannot read kernel memory, and bpf_fentry_test*/bpf_modify_return_test* do not exist"},
	// The agent finds every traced function and the trampoline helpers in /proc/kallsyms
	// (kernel/kallsyms.c).
	{Options: []string{"KALLSYMS"}, Fatal: true,
		Cost: "no /proc/kallsyms: the agent cannot find the traced functions nor the trampoline's helpers"},
	// The agent runs as /init from the initramfs qemu passes with -initrd (init/initramfs.c,
	// BLK_DEV_INITRD), gzip-compressed (BuildInitramfs; lib/decompress_inflate.c, RD_GZIP).
	{Options: []string{"BLK_DEV_INITRD"}, Fatal: true,
		Cost: "no initramfs support: the agent (/init in the initramfs) never starts"},
	{Options: []string{"RD_GZIP"}, Fatal: true,
		Cost: "the kernel cannot unpack the gzip initramfs that holds the agent"},
	// The agent is a static ELF executable (fs/binfmt_elf.c).
	{Options: []string{"BINFMT_ELF"}, Fatal: true,
		Cost: "the kernel cannot execute ELF binaries: the agent (/init) never starts"},
	// The agent is a Go program: the Go runtime's locks sleep on futexes (kernel/futex/).
	{Options: []string{"FUTEX"}, Fatal: true,
		Cost: "no futex(2): the agent, a Go program, cannot run"},
	// The Go runtime's poller starts at the agent's first file: epoll_create1 and eventfd,
	// each a throw when missing (runtime/netpoll_epoll.go, netpollinit).
	{Options: []string{"EPOLL", "EVENTFD"}, Fatal: true,
		Cost: "no epoll or eventfd: the Go runtime's poller cannot start and the agent dies at its first file"},
	{Options: []string{"PROC_FS"}, Fatal: true,
		Cost: "no /proc: the agent cannot read /proc/kallsyms"},
	// /sys/kernel/btf/vmlinux is a sysfs file.
	{Options: []string{"SYSFS"}, Fatal: true,
		Cost: "no sysfs: the agent cannot read /sys/kernel/btf/vmlinux"},
	// The serial console qemu's machine has: console=ttyS0 (an 8250 UART on the x86 PC and
	// riscv virt machines), console=ttyAMA0 (a PL011 on arm64 virt); kernel/vm/qemu.go. The
	// agent's frames go over it.
	{Options: []string{"SERIAL_8250", "SERIAL_8250_CONSOLE"}, Arch: "amd64", Fatal: true,
		Cost: "no 8250 serial console (ttyS0): the agent cannot talk to trampjit"},
	{Options: []string{"SERIAL_AMBA_PL011", "SERIAL_AMBA_PL011_CONSOLE"}, Arch: "arm64", Fatal: true,
		Cost: "no PL011 serial console (ttyAMA0): the agent cannot talk to trampjit"},
	{Options: []string{"SERIAL_8250", "SERIAL_8250_CONSOLE", "SERIAL_OF_PLATFORM"}, Arch: "riscv64", Fatal: true,
		Cost: "no device-tree 8250 serial console (ttyS0): the agent cannot talk to trampjit"},

	// A trampoline on a kernel function is entered from the function's ftrace site:
	// register_fentry (kernel/bpf/trampoline.c) uses register_ftrace_direct when ftrace
	// manages the site, and without DYNAMIC_FTRACE_WITH_DIRECT_CALLS that is -ENOTSUPP; without
	// FUNCTION_TRACER the function has no patchable entry for bpf_arch_text_poke
	// (arch/x86/net/bpf_jit_comp.c, arch/arm64/net/bpf_jit_comp.c) either. A BPF program's
	// entry is the JIT's own nop, patched by bpf_arch_text_poke without ftrace.
	{Options: []string{"FUNCTION_TRACER", "DYNAMIC_FTRACE", "DYNAMIC_FTRACE_WITH_DIRECT_CALLS"}, Arch: "amd64",
		Cost:  "kernel-function targets cannot attach (no ftrace direct calls, register_fentry); the BPF-program targets (tj_args*) still run",
		Stops: kernelFunction},
	// arm64 has direct calls from 6.4 on, and only with DYNAMIC_FTRACE_WITH_CALL_OPS (which
	// CFI_CLANG and CC_OPTIMIZE_FOR_SIZE rule out, arch/arm64/Kconfig); 6.1 has none.
	{Options: []string{"FUNCTION_TRACER", "DYNAMIC_FTRACE", "DYNAMIC_FTRACE_WITH_DIRECT_CALLS"}, Arch: "arm64",
		Cost:  "kernel-function targets cannot attach (arm64 has ftrace direct calls from 6.4 on, with DYNAMIC_FTRACE_WITH_CALL_OPS; register_fentry fails with ENOTSUPP); the BPF-program targets (tj_args*) still run",
		Stops: kernelFunction},
	{Options: []string{"FUNCTION_TRACER", "DYNAMIC_FTRACE", "DYNAMIC_FTRACE_WITH_DIRECT_CALLS"}, Arch: "riscv64",
		Cost:  "kernel-function targets cannot attach (no ftrace direct calls, register_fentry); the BPF-program targets (tj_args*) still run",
		Stops: kernelFunction},
	// BPF_PROG_TYPE_LSM is under #ifdef CONFIG_BPF_LSM in bpf_types.h (kernel/bpf/bpf_lsm.c);
	// the guest's command line enables the LSM (lsm=bpf, kernel/vm/qemu.go).
	{Options: []string{"BPF_LSM"},
		Cost:  "no BPF_PROG_TYPE_LSM: the LSM cases cannot load",
		Stops: func(c wire.Case) bool { return hasKind(c, btfmodel.LSM) }},
	// fmod_ret (and sleepable fentry/fexit) on a function outside the fmod_ret BTF id sets and
	// the security_ hooks needs within_error_injection_list (check_attach_modify_return,
	// check_attach_sleepable in kernel/bpf/verifier.c), which is false for every function
	// without FUNCTION_ERROR_INJECTION (include/linux/error-injection.h). The kernel refuses
	// those cases (EINVAL at load; the corpus records the refusal).
	{Options: []string{"FUNCTION_ERROR_INJECTION"},
		Cost:    "no error-injection list: fmod_ret and sleepable programs on syscall wrappers and other ALLOW_ERROR_INJECTION functions are refused at load",
		stopsIn: needsErrorInjection},
	// The agent records /sys/kernel/debug/error_injection/list (kernel/fail_function.c,
	// lib/error-inject.c), a debugfs file; diff models fmod_ret admission with it.
	{Options: []string{"DEBUG_FS"},
		Cost: "the agent cannot read /sys/kernel/debug/error_injection/list: the corpus has no error-injection list, and diff models fmod_ret as on a kernel without one",
		When: func(c *KernelConfig) bool { return c.Value("FUNCTION_ERROR_INJECTION") == "y" }},
}

// StopsCase reports whether case c cannot run without r on kernel profile k and arch.
func (r Requirement) StopsCase(k btfmodel.Kernel, arch string, c wire.Case) bool {
	switch {
	case r.Stops != nil:
		return r.Stops(c)
	case r.stopsIn != nil:
		return r.stopsIn(k, btfmodel.Arch(arch), c)
	}
	return false
}

// needsErrorInjection: a program of the case is refused at load without an error-injection
// list and admitted with the function on it (btfmodel.CheckAttach models both).
func needsErrorInjection(k btfmodel.Kernel, arch btfmodel.Arch, c wire.Case) bool {
	if c.Target != "" || c.StructOps != nil {
		return false // a sleepable struct_ops program is the table's to allow, not the list's
	}
	for _, p := range c.Progs {
		if p.Kind != btfmodel.ModRet && !p.Sleepable {
			continue
		}
		m := &btfmodel.FuncModel{Name: c.Func}
		env := btfmodel.AttachEnv{Kernel: k, Arch: arch, Sleepable: p.Sleepable}
		without := btfmodel.CheckAttach(c.Func, m, nil, p.Kind, env)
		env.ErrorInjection = map[string]bool{c.Func: true}
		with := btfmodel.CheckAttach(c.Func, m, nil, p.Kind, env)
		if !without.OK && without.Stage == btfmodel.StageLoad && (with.OK || with.Stage != btfmodel.StageLoad) {
			return true
		}
	}
	return false
}

// MissingOption is one unmet requirement of a kernel's config.
type MissingOption struct {
	Option string   `json:"option"`          // CONFIG_BPF_SYSCALL
	Value  string   `json:"value,omitempty"` // "" (not set) or "m" (a module: the guest loads none)
	Fatal  bool     `json:"fatal"`
	Cost   string   `json:"cost"`
	Cases  []string `json:"cases,omitempty"` // ids of the given cases it stops
}

// CheckConfig lists the requirements c does not meet for arch ("" for the config's own),
// fatal ones first, with the ids of the given cases each non-fatal one stops.
func CheckConfig(c *KernelConfig, arch string, cases []wire.Case) []MissingOption {
	if arch == "" {
		arch = c.Arch()
	}
	k := profileFor(c)
	var fatal, other []MissingOption
	for _, r := range Requirements {
		if r.Arch != "" && r.Arch != arch || r.When != nil && !r.When(c) {
			continue
		}
		var ids []string
		for _, o := range r.Options {
			v := c.Value(o)
			if v == "y" {
				continue
			}
			if ids == nil && !r.Fatal {
				ids = stoppedCases(r, k, arch, cases)
			}
			m := MissingOption{Option: configName(o), Value: v, Fatal: r.Fatal, Cost: r.Cost, Cases: ids}
			if r.Fatal {
				fatal = append(fatal, m)
			} else {
				other = append(other, m)
			}
		}
	}
	return append(fatal, other...)
}

func stoppedCases(r Requirement, k btfmodel.Kernel, arch string, cases []wire.Case) []string {
	ids := []string{}
	for _, cs := range cases {
		if r.StopsCase(k, arch, cs) {
			ids = append(ids, cs.ID)
		}
	}
	return ids
}

// profileFor is the profile a config's kernel is modelled by for the checks that depend on
// the version: the newest profile not newer than its release, else the oldest; the default
// profile when the config states no release.
func profileFor(c *KernelConfig) btfmodel.Kernel {
	// "6.18.0-rc3", "6.12.95+deb12": the version is the numeric part.
	rel := c.Release()
	if i := strings.IndexFunc(rel, func(r rune) bool { return r != '.' && (r < '0' || r > '9') }); i >= 0 {
		rel = rel[:i]
	}
	v, err := btfmodel.ParseVersion(strings.TrimSuffix(rel, "."))
	if err != nil {
		return btfmodel.DefaultKernel
	}
	best := btfmodel.Profiles[0].Kernel
	for _, p := range btfmodel.Profiles {
		if p.Version.Series().Compare(v.Series()) <= 0 {
			best = p.Kernel
		}
	}
	return best
}

// Fatal returns the fatal ones of ms.
func Fatal(ms []MissingOption) []MissingOption {
	var out []MissingOption
	for _, m := range ms {
		if m.Fatal {
			out = append(out, m)
		}
	}
	return out
}

// ConfigError refuses a kernel whose config misses fatal options, before it boots.
type ConfigError struct {
	Source  string // the config's
	Missing []MissingOption
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: the kernel cannot be captured:", e.Source)
	for _, m := range e.Missing {
		state := "is not set"
		if m.Value == "m" {
			state = "=m (a module: the guest loads none)"
		} else if m.Value != "" {
			state = "=" + m.Value
		}
		fmt.Fprintf(&b, "\n  %s %s: %s", m.Option, state, m.Cost)
	}
	return b.String()
}

// RefuseConfig is a *ConfigError naming the fatal misses of ms, nil when there are none.
func RefuseConfig(c *KernelConfig, ms []MissingOption) error {
	if f := Fatal(ms); len(f) > 0 {
		return &ConfigError{Source: c.Source, Missing: f}
	}
	return nil
}
