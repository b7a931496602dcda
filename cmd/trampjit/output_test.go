package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

var genArgs = []string{"gen", "--proto", "int f(int a, long b)", "--fentry", "2", "--fexit", "1", "--kernel", "6.12", "--arch", "amd64"}

func gen(extra ...string) (int, string, string) {
	return trampjit(append(append([]string{}, genArgs...), extra...)...)
}

// tempFiles lists what -o may have left behind in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".trampjit-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOutputReplacesRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "new.bin")
	if code, _, e := gen("--format", "bin", "-o", fresh); code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	old := unix.Umask(0)
	unix.Umask(old)
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o644&^fs.FileMode(old) || fi.Size() == 0 {
		t.Errorf("new file: %v, mode %v; want 0644 less umask %#o", err, fi.Mode(), old)
	}

	kept := filepath.Join(dir, "kept.bin")
	if err := os.WriteFile(kept, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, e := gen("--format", "bin", "-o", kept); code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	if fi, _ := os.Stat(kept); fi.Mode().Perm() != 0o600 || fi.Size() < 2 {
		t.Errorf("replaced file: mode %v size %d; want its own mode 0600 kept and the image in it", fi.Mode(), fi.Size())
	}

	// A symbolic link is followed: its file gets the output, the link stays a link.
	target := filepath.Join(dir, "target.bin")
	os.WriteFile(target, nil, 0o644)
	link := filepath.Join(dir, "link.bin")
	if err := os.Symlink("target.bin", link); err != nil {
		t.Fatal(err)
	}
	if code, _, e := gen("--format", "bin", "-o", link); code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a %v", fi.Mode())
	}
	if fi, _ := os.Stat(target); fi.Size() == 0 {
		t.Errorf("the link's target did not get the output")
	}
	dangling := filepath.Join(dir, "dangling")
	os.Symlink("nowhere/x", dangling)
	if code, _, e := gen("-o", dangling); code != 1 || !strings.Contains(e, "symbolic link to a missing file") {
		t.Errorf("dangling link: exit %d, %q", code, e)
	}
	if tf := tempFiles(t, dir); len(tf) > 0 {
		t.Errorf("left behind: %v", tf)
	}
}

// Before, -o replaced FIFOs and device nodes (and tried directories) with a new 0600 file.
func TestOutputRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	for _, c := range []struct{ path, kind string }{{fifo, "a FIFO"}, {sub, "a directory"}, {"/dev/null", "a device"}} {
		code, _, e := gen("-o", c.path)
		if code != 1 || !strings.Contains(e, "is "+c.kind) {
			t.Errorf("-o %s: exit %d, %q; want a refusal naming %s", c.path, code, e, c.kind)
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO is gone: %v %v", fi.Mode(), err)
	}
	if fi, err := os.Stat("/dev/null"); err != nil || fi.Mode()&fs.ModeDevice == 0 {
		t.Fatalf("/dev/null is no longer a device: %v %v", fi.Mode(), err)
	}
	if tf := tempFiles(t, dir); len(tf) > 0 {
		t.Errorf("left behind: %v", tf)
	}
}

// A full disk: before, `gen --format json -o FILE` exited 0 with a truncated file (the
// encoder's error was shadowed). Needs root to mount a small tmpfs.
func TestOutputFullDisk(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=8k"); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v)", err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	out := filepath.Join(dir, "img.json")
	code, _, e := gen("--format", "json", "-o", out)
	if code != 1 || !strings.Contains(e, "no space left on device") {
		t.Errorf("exit %d, %q; want exit 1 naming ENOSPC", code, e)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a partial %s exists (%v)", out, err)
	}
	if tf := tempFiles(t, dir); len(tf) > 0 {
		t.Errorf("left behind: %v", tf)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.EIO }

// Output that cannot be written is a failure, for every command.
func TestStdoutWriteErrors(t *testing.T) {
	for _, args := range [][]string{
		genArgs,
		append(append([]string{}, genArgs...), "--format", "json"),
		{"model", "--proto", "int f(int a)"},
		{"model", "--proto", "int f(int a)", "--format", "json"},
		{"diff", "--corpus", "../../testdata/kernel/6.1-arm64"},
		{"kernel", "cases", "--kernel", "6.12", "--arch", "amd64"},
	} {
		var e strings.Builder
		if code := run(args, failingWriter{}, &e); code != 1 || !strings.Contains(e.String(), "input/output error") {
			t.Errorf("trampjit %v with a failing stdout: exit %d, %q", args, code, e.String())
		}
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		return
	}
	// The same through a real descriptor, in a real process.
	bin := filepath.Join(t.TempDir(), "trampjit")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	full, _ := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	defer full.Close()
	cmd := exec.Command(bin, genArgs...)
	cmd.Stdout = full
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("stdout on /dev/full: %v, want exit 1", err)
	}
}

// One convention: usage errors exit 2 on every command, bad input 1; a typo is one line with
// the nearest flag, not the whole flag list.
func TestExitCodesAndFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"gen", "--proto", "int f(int a)", "--fentry", "1", "--kernel", "6.5"}, 2, `--kernel: unknown kernel profile "6.5"`},
		{[]string{"gen", "--proto", "int f(int a)", "--fentry", "1", "--arch", "mips"}, 2, "--arch: unknown architecture"},
		{[]string{"gen", "--proto", "int f(int a)", "--fentry", "1", "--format", "yaml"}, 2, "unknown --format"},
		{[]string{"gen", "--proto", "int f(int a)", "--fentr", "1"}, 2, "unknown flag --fentr (did you mean --fentry?)"},
		{[]string{"model", "--prot", "int f(int a)"}, 2, "did you mean --proto?"},
		{[]string{"diff", "--corpsu", "x"}, 2, "did you mean --corpus?"},
		{[]string{"verify", "x.json", "--btff", "y"}, 2, "did you mean --btf?"},
		{[]string{"gen", "--proto", "int f(int a)", "--fentry", "x"}, 2, `invalid value "x" for flag -fentry`},
		{[]string{"gen", "--proto", "int f(int a)", "--fentry", "2000000000"}, 2, "the kernel allows 38 (BPF_MAX_TRAMP_LINKS)"},
		{[]string{"gen", "--proto", "int f(int a)", "--fentry", "30", "--fexit", "9"}, 2, "39 programs on one trampoline"},
		{[]string{"gen", "--proto", "int f(int a"}, 2, "no programs"},
		{[]string{"gen", "--proto", "int f(int a", "--fentry", "1"}, 1, "proto: line 1, column 12: expected ',', found end of input"},
		{[]string{"gen", "--btf", btf612, "--func", "tcp_v4_conect", "--fentry", "1"}, 1, "did you mean tcp_v4_connect"},
		{[]string{"model", "--base", btf612, "--proto", "int f(int a)"}, 2, "--base is the base of split BTF"},
		{[]string{"gne"}, 2, "unknown command \"gne\" (did you mean gen?)"},
		{[]string{"diff", "--corpus", "x", "--format", "json", "--all"}, 2, "--all does not apply with --format json"},
		{[]string{"kernel", "captur"}, 2, `unknown kernel subcommand "captur" (did you mean capture?)`},
		{[]string{"kernel", "capture", "--btf=false", "-o", "x"}, 2, "a corpus without its BTF cannot be read back"},
		{[]string{"kernel", "capture", "--host", "--jobs", "2", "--timeout", "1s"}, 2, "--jobs, --timeout do not apply with --host"},
		{[]string{"verify", "x.json", "--format", "json", "--log"}, 2, "--log does not apply with --format json"},
	} {
		code, _, e := trampjit(c.args...)
		if code != c.code || !strings.Contains(e, c.msg) {
			t.Errorf("trampjit %v: exit %d, %q; want exit %d and %q", c.args, code, e, c.code, c.msg)
		}
		if strings.Count(e, "\n") > 2 {
			t.Errorf("trampjit %v: %d lines of stderr, want one:\n%s", c.args, strings.Count(e, "\n"), e)
		}
		if strings.Contains(e, "proto: proto") || strings.Contains(e, "trampjit gen: trampjit gen") {
			t.Errorf("doubled prefix: %q", e)
		}
	}
	// -h still prints every flag, and succeeds.
	code, _, e := trampjit("gen", "-h")
	if code != 0 || !strings.Contains(e, "-fentry") || !strings.Contains(e, "-request") {
		t.Errorf("gen -h: exit %d\n%s", code, e)
	}
}

// Corpora that do not hold together are refused with the line, not compared (or crashed on).
func TestDiffRefusesBadCorpora(t *testing.T) {
	good, err := os.ReadFile("../../testdata/kernel/6.1-arm64/cases.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	first := strings.SplitN(string(good), "\n", 2)[0]
	var short string
	for _, l := range strings.Split(string(good), "\n") {
		if strings.Contains(l, `"progs":[{"prog"`) {
			short = strings.Replace(l, `"progs":[{"prog"`, `"progs":[],"x":[{"prog"`, 1)
			break
		}
	}
	for _, c := range []struct{ name, doc, msg string }{
		{"empty", "", "no cases"},
		{"duplicate ids", first + "\n" + first + "\n", "already used on line 1"},
		{"addrs.progs shorter than progs", short + "\n", "addrs.progs has 0 entries"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "cases.jsonl"), []byte(c.doc), 0o644)
		code, _, e := trampjit("diff", "--corpus", dir)
		if code != 1 || !strings.Contains(e, c.msg) {
			t.Errorf("%s: exit %d, %q; want exit 1 and %q", c.name, code, e, c.msg)
		}
	}
}

// A kernel image the model does not reproduce is a disagreement with the kernel: exit 3.
func TestDiffDisagreementExit(t *testing.T) {
	good, err := os.ReadFile("../../testdata/kernel/6.1-arm64/cases.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(good), "\n") {
		if strings.Contains(l, `"image":"`) {
			line = l
			break
		}
	}
	dir := t.TempDir()
	// The corpus's BTF is referenced relative to the corpus directory.
	if err := os.Symlink(filepath.Join(mustAbs(t, "../../testdata/kernel/6.1-arm64"), "vmlinux.btf.xz"), filepath.Join(dir, "vmlinux.btf.xz")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cases.jsonl"), []byte(line+"\n"), 0o644)
	if code, out, e := trampjit("diff", "--corpus", dir); code != 0 {
		t.Fatalf("the kernel's own case: exit %d\n%s%s", code, out, e)
	}
	i := strings.LastIndex(line, `"image":"`) + len(`"image":"`) // the case's, after the request's addrs.image
	flipped := line[:i] + "00000000" + line[i+8:]                // the first instruction, zeroed
	os.WriteFile(filepath.Join(dir, "cases.jsonl"), []byte(flipped+"\n"), 0o644)
	if code, out, e := trampjit("diff", "--corpus", dir); code != exitDisagree || !strings.Contains(out, "differ") {
		t.Errorf("a changed image: exit %d\n%s%s; want exit 3 and the difference", code, out, e)
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// An endless input is refused at its bound, not read into memory (before: /dev/zero as an
// instruction list ran the machine out of memory).
func TestVerifyInputBounded(t *testing.T) {
	link := filepath.Join(t.TempDir(), "zero.json")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	code, _, e := trampjit("verify", link, "--btf", "../../testdata/kernel/6.12-amd64/vmlinux.btf.xz")
	if code != 1 || !strings.Contains(e, "larger than 64 MiB") {
		t.Errorf("exit %d, %q", code, e)
	}
	obj := filepath.Join(t.TempDir(), "zero.o")
	os.Symlink("/dev/zero", obj)
	code, _, e = trampjit("verify", obj, "--btf", "../../testdata/kernel/6.12-amd64/vmlinux.btf.xz")
	if code != 1 || !strings.Contains(e, "larger than 64 MiB") {
		t.Errorf("object: exit %d, %q", code, e)
	}
}
