package main

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel"
)

const corpus612 = "../../testdata/kernel/6.12-amd64"

// Flags that do not apply are refused, not ignored; --count is bounded.
func TestRunRefusesFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"run", "--corpus", corpus612, "--case", "bpf_fentry_test2-fentry-fexit", "--arch", "arm64", "--kernel", "6.1"}, 2,
			"--corpus runs the case's own request; drop --arch, --kernel"},
		{[]string{"run", "--corpus", corpus612, "--case", "bpf_fentry_test2-fentry-fexit", "--fentry", "2"}, 2, "drop --fentry"},
		{[]string{"run", "--corpus", corpus612}, 2, "--corpus needs --case ID"},
		{[]string{"run", "--proto", "int f(int a)", "--fentry", "1", "--case", "x"}, 2, "--case needs --corpus DIR"},
		{[]string{"run", "--proto", "int f(int a)", "--fentry", "1", "--count", "100001"}, 2, "--count must be 1..100000"},
		{[]string{"run", "--proto", "int f(int a)", "--fentry", "1", "--count", "0"}, 2, "--count must be 1..100000"},
		{[]string{"run", "--proto", "int f(int a)", "--fentry", "1", "--engine", "native", "--untrusted-native"}, 2,
			"--untrusted-native applies to --corpus with --engine native only"},
		{[]string{"run", "--corpus", corpus612, "--case", "bpf_fentry_test2-fentry-fexit", "--untrusted-native"}, 2,
			"--untrusted-native applies to --corpus with --engine native only"},
	} {
		code, _, errOut := trampjit(c.args...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("trampjit %v: exit %d, stderr %q; want exit %d and %q", c.args, code, errOut, c.code, c.msg)
		}
	}
}

// userCorpus writes a one-case corpus at user-space addresses whose image is trampjit's,
// behind payload (padded to 16 bytes; the image is generated for where it then sits).
func userCorpus(t *testing.T, payload []byte) string {
	t.Helper()
	r := &jit.Request{Arch: btfmodel.AMD64, Kernel: btfmodel.Kernel612, Proto: "long f(int a, u64 b)",
		Progs: []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit}}}
	r.Addrs = emu.NativeAddrs(r.Kernel, len(r.Progs))
	pad := (len(payload) + 15) &^ 15
	g := *r
	a := *r.Addrs
	a.Image += jit.Addr(pad)
	g.Addrs = &a
	img, _, err := emu.Generate(&g)
	if err != nil {
		t.Fatal(err)
	}
	code := append([]byte{}, payload...)
	for len(code) < pad {
		code = append(code, 0x90)
	}
	b, err := json.Marshal(kernel.CorpusCase{ID: "user", Request: r, Image: hex.EncodeToString(append(code, img.Code...))})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cases.jsonl"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Bytes from a case file run natively only with --untrusted-native, confined: a system
// call hidden in an otherwise passing image is a failed check.
func TestRunUntrustedNative(t *testing.T) {
	if !emu.NativeSupported {
		t.Skip("the native engine needs an x86_64 Linux host")
	}
	clean := userCorpus(t, []byte{0x90})
	code, _, errOut := trampjit("run", "--corpus", clean, "--case", "user", "--engine", "native")
	if code != 2 || !strings.Contains(errOut, "--untrusted-native") {
		t.Errorf("without --untrusted-native: exit %d, %q", code, errOut)
	}
	code, out, errOut := trampjit("run", "--corpus", clean, "--case", "user", "--engine", "native", "--untrusted-native", "--count", "10")
	if code != 0 || !strings.Contains(out, "(native, 10 call(s)") {
		t.Errorf("clean image: exit %d\n%s%s", code, out, errOut)
	}
	// push rax..r11; mov eax, 39 (getpid); syscall; pop r11..rax
	hidden := []byte{0x50, 0x51, 0x52, 0x56, 0x57, 0x41, 0x50, 0x41, 0x51, 0x41, 0x52, 0x41, 0x53,
		0xb8, 39, 0, 0, 0, 0x0f, 0x05,
		0x41, 0x5b, 0x41, 0x5a, 0x41, 0x59, 0x41, 0x58, 0x5f, 0x5e, 0x5a, 0x59, 0x58}
	code, out, errOut = trampjit("run", "--corpus", userCorpus(t, hidden), "--case", "user", "--engine", "native", "--untrusted-native")
	if code != 1 || !strings.Contains(out, "made a system call (nr 39, getpid): refused") {
		t.Errorf("hidden system call: exit %d\n%s%s", code, out, errOut)
	}
}
