package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trampjit/trampjit/kernel/vm"
	"github.com/trampjit/trampjit/kernel/wire"
)

// HostKernel is the running kernel as uname and /proc/version describe it.
type HostKernel struct {
	Release string // uname -r
	Version string // uname -v
	Banner  string // /proc/version ("Linux version ...")
}

// RunningKernel reads the running kernel's release, version and banner.
func RunningKernel() (HostKernel, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return HostKernel{}, fmt.Errorf("uname: %w", err)
	}
	h := HostKernel{Release: unix.ByteSliceToString(u.Release[:]), Version: unix.ByteSliceToString(u.Version[:])}
	if b, err := os.ReadFile("/proc/version"); err == nil {
		h.Banner = strings.TrimSpace(string(b))
	}
	return h, nil
}

// hostBTF is where the running kernel exposes its BTF (CONFIG_DEBUG_INFO_BTF); maxHostBTF
// bounds it as btfmodel bounds every BTF it reads (a distribution's is 5-10 MiB).
const (
	hostBTF    = "/sys/kernel/btf/vmlinux"
	maxHostBTF = 256 << 20
)

// CaptureHost runs the agent on the running kernel instead of a guest (it needs root), for
// the profile o.Kernel and o.Cases; OutDir, CopyBTF and Progress as for Capture (the BTF is
// the host's own /sys/kernel/btf/vmlinux; Arch, Jobs, Timeout, Pin do not apply). The report's
// Kernel names the running kernel. When the kernel refused every case for want of permission
// (EPERM, EACCES) the error wraps ErrHostNotPermitted and says why: not root, a missing
// capability, lockdown, or the kernel's own policy; nothing is written.
func CaptureHost(ctx context.Context, o CaptureOptions) (*CaptureReport, error) {
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	if err := validateCases(o.Cases); err != nil {
		return nil, err
	}
	host, err := RunningKernel()
	if err != nil {
		return nil, err
	}
	rep := &CaptureReport{Kernel: &vm.KernelImage{Kernel: o.Kernel, Arch: runtime.GOARCH, Release: host.Release,
		Source: "host", Banner: host.Banner}}
	// The config decides features (x86 IBT, arm64 BTI); Debian and most distributions keep
	// it in /boot.
	if cfg := "/boot/config-" + host.Release; fileExists(cfg) {
		rep.Kernel.Config = cfg
	}
	if o.OutDir != "" {
		if err := CheckOutDir(o.OutDir); err != nil {
			return nil, err
		}
		if _, err := ReadExtraCases(o.OutDir, o.Kernel, o.Arch); err != nil {
			return nil, err
		}
	}
	if o.CopyBTF {
		b, err := ReadFileLimit(hostBTF, "vmlinux BTF", maxHostBTF)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("the running kernel %s has no %s (CONFIG_DEBUG_INFO_BTF): a corpus without its BTF cannot be read back", host.Release, hostBTF)
		}
		if err != nil {
			return nil, fmt.Errorf("the running kernel's BTF: %w", err)
		}
		rep.BTF = b
	}
	results := map[string]wire.CaptureResult{}
	req := wire.Request{Kernel: o.Kernel, Arch: runtime.GOARCH, Info: true, Cases: o.Cases}
	t0 := time.Now()
	err = runHostAgent(ctx, req, progress, func(f wire.Frame) {
		switch f.Kind {
		case wire.KindInfo:
			var in wire.Info
			if json.Unmarshal(f.JSON, &in) == nil {
				rep.Info = &in
			}
		case wire.KindCapture:
			var c wire.CaptureResult
			if json.Unmarshal(f.JSON, &c) == nil {
				results[c.ID] = c
			}
		}
	})
	if errors.Is(err, ErrHostNotPermitted) {
		return rep, &hostDenied{fmt.Sprintf("%s: %s", withoutMemlockHint(err.Error()), hostDenial())}
	}
	if err != nil {
		return rep, err
	}
	rep.Boots = []BootStat{{Cases: len(o.Cases), Duration: time.Since(t0)}}
	if o.BTF == "" {
		o.BTF = "vmlinux.btf.xz"
	}
	// Every case refused for want of permission, or, on a kernel locked down for
	// confidentiality, refused at all: that mode stops the agent's reads of kernel memory
	// (LOCKDOWN_BPF_READ_KERNEL) with whatever errno the helper gives. Integrity mode does not,
	// so there a refusal with another errno is the kernel's verdict on the case.
	lock, lockErr := Lockdown()
	locked := lockErr == nil && lock == "confidentiality"
	denied := 0
	var first *CorpusCase
	for _, c := range o.Cases {
		cc := toCorpus(rep.Kernel, rep.Info, c, results[c.ID], o.BTF)
		if cc.Errno == "EPERM" || cc.Errno == "EACCES" || locked && cc.Error != "" {
			denied++
			if first == nil {
				first = &cc
			}
		}
		rep.Cases = append(rep.Cases, cc)
	}
	if denied > 0 && denied == len(o.Cases) {
		return rep, &hostDenied{fmt.Sprintf("the running kernel %s refused all %d cases (e.g. %s with %s at %s: %s): %s",
			host.Release, denied, first.ID, orDefault(first.Errno, "no errno"), first.Stage, withoutMemlockHint(firstLine(first.Error)), hostDenial())}
	}
	if o.OutDir != "" {
		files, err := corpusFiles(rep)
		if err == nil && o.Merge {
			files, err = mergeFiles(o.OutDir, files)
		}
		if err == nil {
			files, err = withExtraFile(files, o.OutDir, o.Kernel, o.Arch, o.Cases)
		}
		if err != nil {
			return rep, err
		}
		if err := commitDir(ctx, o.OutDir, files, true); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// hostDenied is a host capture the kernel refused for want of permission, with the reason.
type hostDenied struct{ msg string }

func (e *hostDenied) Error() string        { return e.msg }
func (e *hostDenied) Is(target error) bool { return target == ErrHostNotPermitted }

// withoutMemlockHint drops cilium/ebpf's advice on EPERM: since 5.11 BPF memory is charged to
// the memory cgroup, not RLIMIT_MEMLOCK, so on every kernel a profile models it misleads.
func withoutMemlockHint(s string) string {
	return strings.Replace(s, " (MEMLOCK may be too low, consider rlimit.RemoveMemlock)", "", 1)
}

// The capabilities attaching a trampoline takes: CAP_BPF to load, CAP_PERFMON for tracing
// programs and reading kernel memory, CAP_SYS_ADMIN for the rest the agent does (kallsyms
// addresses, debugfs).
var hostCaps = []struct {
	name string
	bit  uint
}{{"CAP_BPF", unix.CAP_BPF}, {"CAP_PERFMON", unix.CAP_PERFMON}, {"CAP_SYS_ADMIN", unix.CAP_SYS_ADMIN}}

// hostDenial says why the running kernel denies BPF to this process, as far as it can be
// told from here (denialReason).
func hostDenial() string {
	eff, capErr := effectiveCaps()
	lock, lockErr := Lockdown()
	return denialReason(os.Geteuid(), eff, capErr, lock, lockErr)
}

// denialReason: not root, a missing capability, lockdown, or else the kernel's own policy.
func denialReason(euid int, eff uint64, capErr error, lock string, lockErr error) string {
	var missing []string
	for _, c := range hostCaps {
		if capErr == nil && eff&(1<<c.bit) == 0 {
			missing = append(missing, c.name)
		}
	}
	switch {
	case euid != 0:
		return fmt.Sprintf("trampjit runs as uid %d: capturing on the host needs root (CAP_BPF + CAP_PERFMON + CAP_SYS_ADMIN)", euid)
	case len(missing) > 0:
		return fmt.Sprintf("trampjit runs as root without %s: capturing on the host needs CAP_BPF + CAP_PERFMON + CAP_SYS_ADMIN (a container drops them)", strings.Join(missing, ", "))
	case lockErr == nil && lock == "confidentiality":
		return fmt.Sprintf("the kernel is locked down (%s: [%s]): it forbids BPF reads of kernel memory (LOCKDOWN_BPF_READ_KERNEL), which a capture needs", lockdownFile, lock)
	case lockErr == nil && lock != "none":
		return fmt.Sprintf("the kernel is locked down (%s: [%s]): integrity lockdown alone allows BPF tracing, but it usually comes with a policy (Secure Boot, a security module) that refuses it", lockdownFile, lock)
	}
	how := "the kernel is not locked down"
	if lockErr != nil {
		how = fmt.Sprintf("lockdown unknown (%v)", lockErr)
	}
	have := "with CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN"
	if capErr != nil {
		have = fmt.Sprintf("(capabilities unknown: %v)", capErr)
	}
	return fmt.Sprintf("trampjit runs as root %s, %s: the running kernel itself refuses (a security module, a sandbox or the hypervisor's policy)", have, how)
}

const lockdownFile = "/sys/kernel/security/lockdown"

// Lockdown is the kernel's lockdown mode: "none", "integrity" or "confidentiality", the
// bracketed word of /sys/kernel/security/lockdown (security/lockdown/lockdown.c
// lockdown_read). An error when securityfs or the lockdown LSM is absent.
func Lockdown() (string, error) {
	b, err := os.ReadFile(lockdownFile)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("%s: %w", lockdownFile, err)
	}
	return parseLockdown(string(b))
}

func parseLockdown(s string) (string, error) {
	for _, w := range strings.Fields(s) {
		if len(w) > 2 && w[0] == '[' && w[len(w)-1] == ']' {
			return w[1 : len(w)-1], nil
		}
	}
	return "", fmt.Errorf("%s: no mode selected in %q", lockdownFile, strings.TrimSpace(s))
}

// effectiveCaps is this process's CapEff from /proc/self/status.
func effectiveCaps() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			var c uint64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%x", &c); err != nil {
				return 0, fmt.Errorf("CapEff %q: %w", v, err)
			}
			return c, nil
		}
	}
	return 0, errors.New("/proc/self/status has no CapEff")
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
