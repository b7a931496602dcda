package main

import (
	"bufio"
	"bytes"
	"context"
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
		"nothing captured", "refused all ", "(e.g. bpf_fentry_test2-fentry-fexit with EPERM at load"}
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
