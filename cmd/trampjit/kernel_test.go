package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ulikunitz/xz"
	"golang.org/x/sys/unix"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/kernel/vm"
)

const btf612Corpus = "../../testdata/kernel/6.12-amd64/vmlinux.btf.xz"

// sparse makes a file of n zero bytes without writing them.
func sparse(t *testing.T, name string, n int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(n); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKernelInputsBounded: /dev/zero or an oversized file as --cases or as kernel verify's
// JSON is refused with the file and the limit named (before: read until out of memory).
func TestKernelInputsBounded(t *testing.T) {
	zeroJSON := filepath.Join(t.TempDir(), "zero.json")
	if err := os.Symlink("/dev/zero", zeroJSON); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"kernel", "capture", "--cases", "/dev/zero"}, "/dev/zero: larger than the 4 MiB limit of a cases file"},
		{[]string{"kernel", "capture", "--cases", sparse(t, "big.jsonl", kernel.MaxCasesFileSize+1)}, "larger than the 4 MiB limit of a cases file"},
		{[]string{"kernel", "verify", "--btf", btf612Corpus, zeroJSON}, zeroJSON + ": larger than the 64 MiB limit of a JSON instruction list"},
		{[]string{"kernel", "verify", "--btf", btf612Corpus, sparse(t, "big.json", kernel.MaxVerifyFileSize+1)}, "larger than the 64 MiB limit of a JSON instruction list"},
	} {
		t0 := time.Now()
		code, _, errOut := trampjit(c.args...)
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want 1 and %q", c.args, code, errOut, c.want)
		}
		if d := time.Since(t0); d > 10*time.Second {
			t.Errorf("%v took %v", c.args, d)
		}
	}
}

// writeCases writes capture cases for six bpf_fentry_test functions.
func writeCases(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= 6; i++ {
		b.WriteString(`{"id":"bpf_fentry_test` + strconv.Itoa(i) + `-fentry-fexit","func":"bpf_fentry_test` + strconv.Itoa(i) + `","progs":[{"kind":"fentry"},{"kind":"fexit"}]}` + "\n")
	}
	p := filepath.Join(t.TempDir(), "cases.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKernelCaptureOutChecked: an unusable -o is refused before anything boots.
func TestKernelCaptureOutChecked(t *testing.T) {
	cases := writeCases(t)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ out, want string }{
		{file, "output directory " + file + ": exists and is not a directory"},
		{filepath.Join(file, "sub"), "not a directory"},
		{"/sys/trampjit-out", "output directory /sys/trampjit-out: cannot write in /sys"},
	} {
		t0 := time.Now()
		code, _, errOut := trampjit("kernel", "capture", "--cases", cases, "-o", c.out)
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("-o %s: exit %d, %q; want 1 and %q", c.out, code, errOut, c.want)
		}
		if d := time.Since(t0); d > 2*time.Second || strings.Contains(errOut, "guests") {
			t.Errorf("-o %s: refused after %v, output %q: the check must come before the guest", c.out, d, errOut)
		}
	}
}

// buildCLI builds trampjit for the tests that signal it.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "trampjit")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// needGuest skips unless the 6.12-amd64 guest can boot (the kernel cached or fetchable).
func needGuest(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("boots a qemu guest; skipped with -short")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("qemu-system-x86_64 is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := kernel.Fetch(ctx, "6.12", "amd64", nil); err != nil {
		t.Skipf("cannot fetch the 6.12-amd64 kernel: %v", err)
	}
}

// qemuOf lists the live qemu processes whose parent or process group is pid.
func qemuOf(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st := procStat(p); strings.HasPrefix(st.comm, "qemu-system") && st.state != "Z" && (st.ppid == pid || st.pgrp == pid) {
			out = append(out, p)
		}
	}
	return out
}

type stat struct {
	comm, state string
	ppid, pgrp  int
}

// procStat reads /proc/PID/stat; the zero stat when the process is gone.
func procStat(pid int) stat {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return stat{}
	}
	s := string(b)
	i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if i < 0 || j < i {
		return stat{}
	}
	f := strings.Fields(s[j+1:])
	if len(f) < 3 {
		return stat{}
	}
	ppid, _ := strconv.Atoi(f[1])
	pgrp, _ := strconv.Atoi(f[2])
	return stat{comm: s[i+1 : j], state: f[0], ppid: ppid, pgrp: pgrp}
}

func running(pid int) bool {
	st := procStat(pid)
	return st.comm != "" && st.state != "Z"
}

// captureProcess starts `trampjit kernel capture` into out, with its temporary files in tmp.
func captureProcess(t *testing.T, bin, tmp, out string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(bin, "kernel", "capture", "--cases", writeCases(t), "-o", out)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewScanner(stderr)
}

// waitFor reads stderr lines until one contains s.
func waitFor(t *testing.T, sc *bufio.Scanner, s string) {
	t.Helper()
	for sc.Scan() {
		t.Log(sc.Text())
		if strings.Contains(sc.Text(), s) {
			return
		}
	}
	t.Fatalf("stderr ended before %q", s)
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// TestKernelCaptureSignals: SIGINT or SIGTERM after the guest booted exits 130, leaves the
// existing corpus byte-identical, and leaves no qemu and no work directory; SIGKILL leaves
// no qemu within two seconds (Pdeathsig).
func TestKernelCaptureSignals(t *testing.T) {
	needGuest(t)
	bin := buildCLI(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			out := filepath.Join(t.TempDir(), "6.12-amd64")
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			for n, d := range map[string]string{"cases.jsonl": "{\"id\":\"old\"}\n", "info.json": "{}", "kernel.json": "{}", "boots.json": "[]"} {
				if err := os.WriteFile(filepath.Join(out, n), []byte(d), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := readTree(t, out)
			cmd, sc := captureProcess(t, bin, tmp, out)
			waitFor(t, sc, "booted in")
			qemus := qemuOf(cmd.Process.Pid)
			if len(qemus) == 0 {
				t.Fatal("no qemu under trampjit after the boot")
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			var rest strings.Builder
			for sc.Scan() {
				rest.WriteString(sc.Text() + "\n")
			}
			cmd.Wait()
			t.Log(rest.String())
			if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(rest.String(), "interrupted by "+unix.SignalName(sig)) {
				t.Errorf("exit %d, want 130 with the interrupt named", code)
			}
			for _, p := range qemus {
				if running(p) {
					t.Errorf("qemu %d outlived trampjit", p)
				}
			}
			after := readTree(t, out)
			if len(after) != len(before) {
				t.Errorf("corpus files %v, want %v", after, before)
			}
			for n, d := range before {
				if after[n] != d {
					t.Errorf("%s changed: %q", n, after[n])
				}
			}
			if left, _ := filepath.Glob(filepath.Join(tmp, "trampjit-*")); len(left) > 0 {
				t.Errorf("left in TMPDIR: %v", left)
			}
		})
	}
	t.Run("SIGKILL", func(t *testing.T) {
		cmd, _ := captureProcess(t, bin, t.TempDir(), filepath.Join(t.TempDir(), "out"))
		var qemus []int
		for deadline := time.Now().Add(3 * time.Minute); len(qemus) == 0; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no qemu started under trampjit")
			}
			qemus = qemuOf(cmd.Process.Pid)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		t0 := time.Now()
		for _, p := range qemus {
			for running(p) {
				if time.Since(t0) > 2*time.Second {
					t.Fatalf("qemu %d still runs 2s after trampjit was killed", p)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		t.Logf("qemu gone %v after SIGKILL", time.Since(t0))
	})
}

// TestKernelCaptureHostRefused: this machine's kernel refuses trampolines to root (EPERM at
// load). The capture says which kernel it ran on and the profile it compared with, exits 1
// with the reason, and writes no -o directory. As uid 65534 the reason is root.
func TestKernelCaptureHostRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the agent on the host; skipped with -short")
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	release := unix.ByteSliceToString(u.Release[:])
	profile, err := btfmodel.NearestProfile(release)
	if err != nil {
		t.Skipf("host %s: %v", release, err)
	}
	out := filepath.Join(t.TempDir(), "host")
	t0 := time.Now()
	code, stdout, errOut := trampjit("kernel", "capture", "--host", "--only", "bpf_fentry_test2-*", "-o", out)
	if code == 0 {
		t.Skipf("this host permits trampolines (a privileged box): %s", stdout)
	}
	t.Logf("exit %d after %v:\n%s", code, time.Since(t0), errOut)
	want := []string{"host kernel: " + release + " (", "model profile: " + string(profile) + " (the nearest lower; --profile to choose)",
		"nothing captured", "refused all ", "cases with EPERM", "bpf_fentry_test2-fentry-fexit at load"}
	if os.Geteuid() == 0 {
		want = append(want, "root with CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN", "the running kernel itself refuses")
	}
	for _, w := range want {
		if code != 1 || !strings.Contains(errOut, w) {
			t.Errorf("exit %d; stderr lacks %q", code, w)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s written by a capture that captured nothing", out)
	}
	if left, _ := filepath.Glob(out + "*"); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	code, _, errOut = trampjit("kernel", "capture", "--host", "--profile", "7.2", "--only", "bpf_fentry_test2-fentry-fexit")
	if code != 1 || !strings.Contains(errOut, "model profile: 7.2 (--profile)") {
		t.Errorf("--profile 7.2: exit %d, %q", code, errOut)
	}

	// Not root: the agent cannot even create its map, and the reason says root.
	setpriv, err := exec.LookPath("setpriv")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and setpriv to run trampjit as uid 65534")
	}
	bin := buildCLI(t)
	dir := filepath.Dir(bin)
	agent := filepath.Join(dir, "agent-amd64")
	if b, err := exec.Command("go", "build", "-o", agent, "../../kernel/agent").CombinedOutput(); err != nil {
		t.Fatalf("build agent: %v\n%s", err, b)
	}
	for _, p := range []string{dir, filepath.Dir(dir)} {
		os.Chmod(p, 0o755)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
		bin, "kernel", "capture", "--host", "--only", "bpf_fentry_test2-fentry-fexit")
	cmd.Env = append(os.Environ(), "TMPDIR=/tmp", kernelAgentEnv()+"="+agent)
	b, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(b), "uid 65534: capturing on the host needs root (CAP_BPF + CAP_PERFMON + CAP_SYS_ADMIN)") {
		t.Errorf("as uid 65534: exit %d:\n%s", cmd.ProcessState.ExitCode(), b)
	}
}

func kernelAgentEnv() string {
	if runtime.GOARCH == "arm64" {
		return vm.AgentEnv + "ARM64"
	}
	return vm.AgentEnv + "AMD64"
}

// cached612 is the cached Debian 6.12 amd64 kernel (vmlinuz and config), or a skip.
func cached612(t *testing.T) *vm.KernelImage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	k, err := kernel.Fetch(ctx, "6.12", "amd64", nil)
	if err != nil {
		t.Skipf("cannot fetch the 6.12-amd64 kernel: %v", err)
	}
	return k
}

// noCapture checks that nothing of a failed capture into out is left: out, out.partial,
// a staging directory, a work directory in tmp, a qemu naming tmp.
func noCapture(t *testing.T, out, tmp string) {
	t.Helper()
	if left, _ := filepath.Glob(out + "*"); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if tmp == "" {
		return
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "trampjit-*")); len(left) > 0 {
		t.Errorf("work directories left in TMPDIR: %v", left)
	}
	if b, err := exec.Command("pgrep", "-a", "-f", tmp).Output(); err == nil && len(b) > 0 {
		t.Errorf("processes still naming %s:\n%s", tmp, b)
	}
}

// TestKernelCaptureVmlinuzRefused: what cannot be captured is refused before anything
// boots, naming the file and the reason: a file that is no kernel, a riscv64 kernel, a
// config without CONFIG_BPF_SYSCALL; and the flags that contradict --vmlinuz.
func TestKernelCaptureVmlinuzRefused(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(t.TempDir(), "corpus")
	notKernel := filepath.Join(dir, "vmlinuz-notes")
	if err := os.WriteFile(notKernel, []byte(strings.Repeat("these are notes, not a kernel\n", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	// A riscv64 Image header (Documentation/arch/riscv/boot-image-header.rst) and banner.
	rv := make([]byte, 4096)
	copy(rv[48:], "RISCV\x00\x00\x00")
	copy(rv[56:], "RSC\x05")
	copy(rv[512:], "Linux version 6.12.0 (builder@host) (riscv64-linux-gnu-gcc 14.2.0) #1 SMP PREEMPT Tue Dec  1 00:00:00 UTC 2026\n\x00")
	riscv := filepath.Join(dir, "Image")
	if err := os.WriteFile(riscv, rv, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--vmlinuz", notKernel}, 1, []string{notKernel, "not a kernel image"}},
		{[]string{"--vmlinuz", riscv}, 1, []string{riscv, "riscv64 guests are not supported yet"}},
		{[]string{"--vmlinuz", filepath.Join(dir, "absent")}, 1, []string{"absent: no such file"}},
		{[]string{"--vmlinuz", notKernel, "--kernel", "6.12"}, 2, []string{"--kernel names the Debian kernel of a profile", "--profile"}},
		{[]string{"--vmlinuz", notKernel, "--host"}, 2, []string{"not both"}},
		{[]string{"--profile", "6.12"}, 2, []string{"--profile chooses the model profile of a --vmlinuz or --host kernel"}},
		{[]string{"--config", notKernel}, 2, []string{"--config is the config of a --vmlinuz kernel"}},
	} {
		args := append([]string{"kernel", "capture", "-o", out}, c.args...)
		t0 := time.Now()
		code, _, errOut := trampjit(args...)
		for _, w := range c.want {
			if code != c.code || !strings.Contains(errOut, w) {
				t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, errOut, c.code, w)
			}
		}
		if d := time.Since(t0); d > 5*time.Second || strings.Contains(errOut, "booted in") {
			t.Errorf("%v: refused after %v: %s", c.args, d, errOut)
		}
		noCapture(t, out, "")
	}

	k := cached612(t)
	// --arch defaults to the file's; another one is an error naming both.
	code, _, errOut := trampjit("kernel", "capture", "--vmlinuz", k.Path, "--arch", "arm64", "-o", out)
	if code != 2 || !strings.Contains(errOut, "--arch arm64, but "+k.Path+" is an amd64 kernel") {
		t.Errorf("--arch arm64 on an amd64 bzImage: exit %d, %q", code, errOut)
	}
	// Debian's config with CONFIG_BPF_SYSCALL unset: refused before boot, naming it.
	cfg, err := os.ReadFile(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(cfg), "\nCONFIG_BPF_SYSCALL=y\n", "\n# CONFIG_BPF_SYSCALL is not set\n", 1)
	if edited == string(cfg) {
		t.Fatalf("%s does not set CONFIG_BPF_SYSCALL=y", k.Config)
	}
	noBPF := filepath.Join(dir, "config-nobpf")
	if err := os.WriteFile(noBPF, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	code, _, errOut = trampjit("kernel", "capture", "--vmlinuz", k.Path, "--config", noBPF, "-o", out)
	t.Logf("exit %d after %v:\n%s", code, time.Since(t0), errOut)
	for _, w := range []string{"kernel: " + k.Release + " (bzImage, " + k.Path + "); model profile: 6.12",
		"config: " + noBPF + " (--config)", "CONFIG_BPF_SYSCALL is not set", "nothing booted"} {
		if code != 1 || !strings.Contains(errOut, w) {
			t.Errorf("no BPF_SYSCALL: exit %d; stderr lacks %q", code, w)
		}
	}
	if d := time.Since(t0); d > 10*time.Second || strings.Contains(errOut, "booted in") {
		t.Errorf("no BPF_SYSCALL: refused after %v", d)
	}
	noCapture(t, out, "")
}

// brokenBzImages are two copies of a real bzImage that boot and never reach the agent: the
// first half of the file with the header's sizes cut to match (Documentation/arch/x86/
// boot.rst: setup_sects 0x1f1, syssize 0x1f4, payload_offset 0x248, payload_length 0x24c),
// and the whole file with the second half of its compressed payload zeroed.
func brokenBzImages(t *testing.T, src, dir string) (truncated, zeroed string) {
	t.Helper()
	d, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) < 0x250 || string(d[0x202:0x206]) != "HdrS" {
		t.Fatalf("%s is not a bzImage", src)
	}
	setup := (int(d[0x1f1]) + 1) * 512
	off := int(binary.LittleEndian.Uint32(d[0x248:]))
	n := int(binary.LittleEndian.Uint32(d[0x24c:]))
	half := append([]byte(nil), d[:len(d)/2]...)
	binary.LittleEndian.PutUint32(half[0x24c:], uint32(len(half)-setup-off))
	binary.LittleEndian.PutUint32(half[0x1f4:], uint32((len(half)-setup+15)/16))
	truncated = filepath.Join(dir, "bzImage-truncated")
	zero := append([]byte(nil), d...)
	p := setup + off
	clear(zero[p+n/2 : p+n-4])
	zeroed = filepath.Join(dir, "bzImage-zeroed")
	for name, data := range map[string][]byte{truncated: half, zeroed: zero} {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return truncated, zeroed
}

// TestKernelCaptureVmlinuzNeverReachesAgent: a kernel that boots and never reaches the
// agent fails within its --timeout with the console's last lines, leaves no qemu, no work
// directory, and neither DIR nor DIR.partial.
func TestKernelCaptureVmlinuzNeverReachesAgent(t *testing.T) {
	needGuest(t)
	k := cached612(t)
	bin := buildCLI(t)
	truncated, zeroed := brokenBzImages(t, k.Path, t.TempDir())
	for _, c := range []struct {
		name, img string
		want      []string
	}{
		// The decompressor unpacks a stream cut short: the guest dies at once.
		{"truncated", truncated, []string{"kernel failed to boot", "--- console tail ---"}},
		// It finds the corruption and halts (arch/x86/boot/compressed/misc.c error()).
		{"zeroed", zeroed, []string{"guest hung: no agent output within 30s", "--- console tail ---", "-- System halted"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			out := filepath.Join(t.TempDir(), "corpus")
			cmd := exec.Command(bin, "kernel", "capture", "--vmlinuz", c.img, "--config", k.Config,
				"--only", "bpf_fentry_test2-fentry-fexit", "--timeout", "30s", "-o", out)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			t0 := time.Now()
			b, _ := cmd.CombinedOutput()
			d := time.Since(t0)
			t.Logf("exit %d after %v:\n%s", cmd.ProcessState.ExitCode(), d, b)
			if cmd.ProcessState.ExitCode() != 1 {
				t.Errorf("exit %d, want 1", cmd.ProcessState.ExitCode())
			}
			if d > 45*time.Second {
				t.Errorf("took %v: more than the 30s timeout + 15s", d)
			}
			for _, w := range append(c.want, c.img) {
				if !strings.Contains(string(b), w) {
					t.Errorf("output lacks %q", w)
				}
			}
			noCapture(t, out, tmp)
		})
	}
}

// TestKernelCaptureVmlinuz captures Debian's 6.12 amd64 bzImage as a file (--vmlinuz, its
// config found beside it): the images equal the profile corpus's modulo addresses, the
// refusals are the corpus's, kernel.json names the file, and the BTF is in the corpus.
func TestKernelCaptureVmlinuz(t *testing.T) {
	needGuest(t)
	k := cached612(t)
	const sample = "bpf_fentry_test2-fentry-fexit,bpf_fentry_test2-fexit3,tcp_v4_connect-fentry2-fexit2-func-ip,tcp_v4_connect-fmod_ret"
	out := filepath.Join(t.TempDir(), "corpus")
	t0 := time.Now()
	code, stdout, errOut := trampjit("kernel", "capture", "--vmlinuz", k.Path, "--only", sample, "-o", out, "--color", "never")
	t.Logf("exit %d after %v:\n%s\n%s", code, time.Since(t0), stdout, errOut)
	if code != 0 {
		t.Fatal("capture failed")
	}
	for _, w := range []string{"kernel: " + k.Release + " (bzImage, " + k.Path + "); model profile: 6.12 (the nearest lower; --profile to choose)",
		"config: " + k.Config + " (beside the kernel)"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q", w)
		}
	}
	got, err := kernel.ReadCorpus(out)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := kernel.ReadCorpus("../../testdata/kernel/6.12-amd64")
	if err != nil {
		t.Fatal(err)
	}
	refByID := map[string]kernel.CorpusCase{}
	for _, c := range ref {
		refByID[c.ID] = c
	}
	if len(got) != 4 {
		t.Fatalf("%d cases, want 4", len(got))
	}
	for _, c := range got {
		r := refByID[c.ID]
		if c.Request.Kernel != "6.12" || c.Request.BTF != "vmlinux.btf.xz" {
			t.Errorf("%s: request kernel %q btf %q", c.ID, c.Request.Kernel, c.Request.BTF)
		}
		if (c.Image == "") != (r.Image == "") || c.Errno != r.Errno {
			t.Errorf("%s: image %d bytes, errno %q; the corpus: %d bytes, %q", c.ID, len(c.Image)/2, c.Errno, len(r.Image)/2, r.Errno)
			continue
		}
		if c.Image == "" {
			continue
		}
		a, _ := hex.DecodeString(c.Image)
		b, _ := hex.DecodeString(r.Image)
		if err := kernel.SameModuloAddresses("amd64", a, b); err != nil {
			t.Errorf("%s: differs from the 6.12-amd64 corpus beyond addresses: %v", c.ID, err)
		}
	}
	// kernel.json: the file, its hash, banner and config; no package, so the zero pin.
	b, err := os.ReadFile(filepath.Join(out, "kernel.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]string
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(k.Path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if rec["source"] != "vmlinuz" || rec["path"] != k.Path || rec["sha256"] != hex.EncodeToString(sum[:]) ||
		!strings.HasPrefix(rec["banner"], "Linux version "+k.Release+" ") || rec["config"] != k.Config ||
		rec["kernel"] != "6.12" || rec["arch"] != "amd64" || rec["release"] != k.Release || rec["package"] != "" {
		t.Errorf("kernel.json:\n%s", b)
	}
	if p, err := kernel.CorpusPin(out); err != nil || p != (vm.Pin{}) {
		t.Errorf("CorpusPin = %+v, %v; want the zero pin", p, err)
	}
	var info struct{ Release string }
	if b, err := os.ReadFile(filepath.Join(out, "info.json")); err != nil || json.Unmarshal(b, &info) != nil || info.Release != k.Release {
		t.Errorf("info.json release %q, want %q (%v)", info.Release, k.Release, err)
	}
	// The BTF: xz of the guest's /sys/kernel/btf/vmlinux (magic 0xeb9f).
	if code, _, e := trampjit("diff", "--corpus", out); code != 0 {
		t.Errorf("diff --corpus: exit %d: %s", code, e)
	}
	xzb, err := os.ReadFile(filepath.Join(out, "vmlinux.btf.xz"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := xz.NewReader(bytes.NewReader(xzb))
	if err != nil {
		t.Fatal(err)
	}
	var magic [2]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil || binary.LittleEndian.Uint16(magic[:]) != 0xeb9f {
		t.Errorf("vmlinux.btf.xz: magic %x, %v", magic, err)
	}
	// A re-capture of this corpus needs the file: a profile's kernel is refused before boot.
	before := readTree(t, out)
	code, _, errOut = trampjit("kernel", "capture", "--kernel", "6.12", "--only", "bpf_fentry_test2-fentry-fexit", "-o", out)
	if code != 1 || !strings.Contains(errOut, "re-capture it with --vmlinuz "+k.Path) || strings.Contains(errOut, "booted in") {
		t.Errorf("re-capture with --kernel: exit %d, %q", code, errOut)
	}
	if after := readTree(t, out); len(after) != len(before) || after["cases.jsonl"] != before["cases.jsonl"] {
		t.Error("the refused re-capture changed the corpus")
	}
}

// TestKernelCaptureHostOut: --host -o writes a corpus whose BTF is the running kernel's
// /sys/kernel/btf/vmlinux and whose kernel.json names the host. One case the kernel may
// refuse for want of permission and one cilium refuses before the kernel sees it (no such
// function), so that something is written here too.
func TestKernelCaptureHostOut(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the agent on the host; skipped with -short")
	}
	btf, err := os.ReadFile("/sys/kernel/btf/vmlinux")
	if err != nil {
		t.Skipf("the host has no BTF: %v", err)
	}
	cases := filepath.Join(t.TempDir(), "cases.jsonl")
	if err := os.WriteFile(cases, []byte(`{"id":"t2","func":"bpf_fentry_test2","progs":[{"kind":"fentry"}]}`+"\n"+
		`{"id":"nosuch","func":"tj_no_such_function","progs":[{"kind":"fentry"}]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "host")
	code, stdout, errOut := trampjit("kernel", "capture", "--host", "--cases", cases, "-o", out, "--color", "never")
	t.Logf("exit %d\n%s\n%s", code, stdout, errOut)
	if code != 0 {
		t.Fatal("capture failed")
	}
	xzb, err := os.ReadFile(filepath.Join(out, "vmlinux.btf.xz"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := xz.NewReader(bytes.NewReader(xzb))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, btf) {
		t.Errorf("vmlinux.btf.xz: %d bytes (%v), the host's BTF %d", len(got), err, len(btf))
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var rec map[string]string
	b, err := os.ReadFile(filepath.Join(out, "kernel.json"))
	if err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("kernel.json: %v\n%s", err, b)
	}
	if rec["source"] != "host" || rec["release"] != unix.ByteSliceToString(u.Release[:]) || rec["arch"] != runtime.GOARCH ||
		!strings.HasPrefix(rec["banner"], "Linux version "+rec["release"]+" ") || rec["package"] != "" {
		t.Errorf("kernel.json:\n%s", b)
	}
	if p, err := kernel.CorpusPin(out); err != nil || p != (vm.Pin{}) {
		t.Errorf("CorpusPin = %+v, %v; want the zero pin", p, err)
	}
	got2, err := kernel.ReadCorpus(out)
	if err != nil || len(got2) != 2 || got2[1].Error == "" || !strings.Contains(got2[1].Error, "tj_no_such_function") {
		t.Errorf("cases: %+v, %v", got2, err)
	}
}

// TestKernelCasesFormats: jsonl stays the default; json is the same cases as one array; text
// is a table with a row per case; --only selects by ids and globs, and a pattern matching
// nothing is an error; --vmlinuz gives the catalogue of the file's architecture and profile.
func TestKernelCasesFormats(t *testing.T) {
	code, jsonl, e := trampjit("kernel", "cases", "--kernel", "6.12", "--arch", "amd64")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	var lines []kernel.Case
	for _, l := range strings.Split(strings.TrimSpace(jsonl), "\n") {
		var c kernel.Case
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatalf("jsonl line %q: %v", l, err)
		}
		lines = append(lines, c)
	}
	code, js, e := trampjit("kernel", "cases", "--kernel", "6.12", "--arch", "amd64", "--format", "json")
	var arr []kernel.Case
	if code != 0 || json.Unmarshal([]byte(js), &arr) != nil {
		t.Fatalf("--format json: exit %d, %s", code, e)
	}
	a, _ := json.Marshal(arr)
	b, _ := json.Marshal(lines)
	if len(arr) < 100 || !bytes.Equal(a, b) {
		t.Errorf("--format json has %d cases, jsonl %d, or they differ", len(arr), len(lines))
	}
	code, text, e := trampjit("kernel", "cases", "--kernel", "6.12", "--arch", "amd64", "--format", "text", "--only", "bpf_fentry_test2-links-*,do_exit-fexit")
	rows := strings.Split(strings.TrimSpace(text), "\n")
	if code != 0 || len(rows) != 1+4+1 || !strings.HasPrefix(rows[0], "ID ") || !strings.Contains(rows[0], "PROGRAMS") || rows[len(rows)-1] != "4 cases" {
		t.Fatalf("--format text: exit %d, %s\n%s", code, e, text)
	}
	for _, w := range []string{"bpf_fentry_test2-links-38-fentry", "38×fentry", "19×fentry,19×fexit", "do_exit-fexit"} {
		if !strings.Contains(text, w) {
			t.Errorf("table lacks %q:\n%s", w, text)
		}
	}
	if code, _, e := trampjit("kernel", "cases", "--only", "bpf_fentry_test2-fentry-fexit,bpf_fentry_tset2-*"); code != 2 || !strings.Contains(e, `"bpf_fentry_tset2-*" matches no case`) {
		t.Errorf("unmatched glob: exit %d, %q", code, e)
	}
	if code, _, e := trampjit("kernel", "cases", "--format", "yaml"); code != 2 || !strings.Contains(e, "jsonl, json or text") {
		t.Errorf("--format yaml: exit %d, %q", code, e)
	}

	cache, err := vm.CacheDir()
	if err != nil {
		t.Skip(err)
	}
	imgs, _ := filepath.Glob(filepath.Join(cache, "kernels", "7.2-arm64", "vmlinuz-*"))
	if len(imgs) == 0 {
		t.Skip("the 7.2-arm64 kernel is not cached")
	}
	code, got, e := trampjit("kernel", "cases", "--vmlinuz", imgs[0])
	_, want, _ := trampjit("kernel", "cases", "--kernel", "7.2", "--arch", "arm64")
	if code != 0 || got != want || !strings.Contains(e, "model profile: 7.2 (the nearest lower") {
		t.Errorf("--vmlinuz %s: exit %d, %s; same as --kernel 7.2 --arch arm64: %v", imgs[0], code, e, got == want)
	}
	if code, _, e := trampjit("kernel", "cases", "--vmlinuz", imgs[0], "--profile", "6.12"); code != 0 || !strings.Contains(e, "model profile: 6.12 (--profile)") {
		t.Errorf("--profile 6.12: exit %d, %s", code, e)
	}
}

// TestKernelCaptureVmlinuzReleaseMismatch: a bzImage whose header names another release
// than the kernel inside (kernel_version, Documentation/arch/x86/boot.rst: the pointer at
// 0x20e, +0x200) is booted, and the capture says loudly that the guest ran something else;
// kernel.json keeps a note of it.
func TestKernelCaptureVmlinuzReleaseMismatch(t *testing.T) {
	needGuest(t)
	k := cached612(t)
	d, err := os.ReadFile(k.Path)
	if err != nil {
		t.Fatal(err)
	}
	kv := int(binary.LittleEndian.Uint16(d[0x20e:])) + 0x200
	end := kv + bytes.IndexByte(d[kv:], 0)
	i := kv + bytes.Index(d[kv:end], []byte(k.Release))
	if i < kv {
		t.Fatalf("%s: kernel_version %q does not start with %s", k.Path, d[kv:end], k.Release)
	}
	fake := strings.Replace(k.Release, "6.12.", "6.13.", 1)
	copy(d[i:], fake)
	img := filepath.Join(t.TempDir(), "bzImage")
	if err := os.WriteFile(img, d, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "corpus")
	code, _, errOut := trampjit("kernel", "capture", "--vmlinuz", img, "--config", k.Config, "--only", "bpf_fentry_test2-fentry", "-o", out)
	t.Logf("exit %d\n%s", code, errOut)
	want := "WARNING: RELEASE MISMATCH: the guest ran " + k.Release + ", but " + img + " says " + fake
	if code != 0 || !strings.Contains(errOut, "kernel: "+fake+" (bzImage") || !strings.Contains(errOut, want) ||
		!strings.Contains(errOut, "warning: the config is for 6.12.") {
		t.Errorf("exit %d; want the file's release stated, then %q", code, want)
	}
	var rec map[string]string
	if b, err := os.ReadFile(filepath.Join(out, "kernel.json")); err != nil || json.Unmarshal(b, &rec) != nil ||
		!strings.Contains(rec["note"], "the guest ran "+k.Release) || rec["release"] != fake {
		t.Errorf("kernel.json: %v, %v", rec, err)
	}
}
