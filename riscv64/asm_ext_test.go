package riscv64

import (
	"bytes"
	"debug/elf"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// GNU binutils is the independent encoder: each form the helpers emit is assembled by
// riscv64-linux-gnu-as (linked by ld so that pc-relative operands resolve) and
// compared byte for byte, and both sides are decoded by objdump.
const (
	gasName     = "riscv64-linux-gnu-as"
	ldName      = "riscv64-linux-gnu-ld"
	objdumpName = "riscv64-linux-gnu-objdump"
	gasMarch    = "-march=rv64gc_zbb"
	// textBase is where ld puts .text: high enough that negative call offsets are
	// still addresses.
	textBase = 0x100000000
)

func haveBinutils() bool {
	for _, n := range []string{gasName, ldName, objdumpName} {
		if _, err := exec.LookPath(n); err != nil {
			return false
		}
	}
	return true
}

func binutils(t testing.TB) (as, ld, objdump string) {
	t.Helper()
	var paths [3]string
	for i, n := range []string{gasName, ldName, objdumpName} {
		p, err := exec.LookPath(n)
		if err != nil {
			t.Skipf("%s not installed (binutils-riscv64-linux-gnu); skipping the comparison with GNU binutils", n)
		}
		paths[i] = p
	}
	return paths[0], paths[1], paths[2]
}

// gasResult is one assembled case: its bytes and objdump's text for them, in GNU
// syntax with aliases and with -M no-aliases (the exact form).
type gasResult struct {
	code    []byte
	alias   []string
	noAlias []string
}

// assemble assembles each case's lines as one labelled block (rvc: with .option rvc,
// so as may compress) and returns the blocks. A line starting with "!" is assembled
// under .option norvc (an explicit 32-bit form).
func assemble(t testing.TB, cases [][]string, rvc bool) []gasResult {
	t.Helper()
	as, ld, objdump := binutils(t)
	var src strings.Builder
	src.WriteString(".option norelax\n")
	if rvc {
		src.WriteString(".option rvc\n")
	} else {
		src.WriteString(".option norvc\n")
	}
	for i, c := range cases {
		fmt.Fprintf(&src, "c%d:\n", i)
		for _, l := range c {
			if s, ok := strings.CutPrefix(l, "!"); ok {
				fmt.Fprintf(&src, ".option push\n.option norvc\n%s\n.option pop\n", s)
				continue
			}
			src.WriteString(l + "\n")
		}
	}
	fmt.Fprintf(&src, "c%d:\n", len(cases))
	dir := t.TempDir()
	in, obj, exe := filepath.Join(dir, "t.s"), filepath.Join(dir, "t.o"), filepath.Join(dir, "t.elf")
	if err := os.WriteFile(in, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) []byte {
		cmd := exec.Command(name, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", filepath.Base(name), err, stderr.String())
		}
		return stdout.Bytes()
	}
	run(as, gasMarch, "-o", obj, in)
	run(ld, "--no-relax", fmt.Sprintf("-Ttext=%#x", textBase), "-e", "0", "-o", exe, obj)
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text, err := f.Section(".text").Data()
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	start := make([]uint64, len(cases)+1)
	found := 0
	for _, s := range syms {
		var i int
		if _, err := fmt.Sscanf(s.Name, "c%d", &i); err == nil && "c"+strconv.Itoa(i) == s.Name && i <= len(cases) {
			start[i] = s.Value - textBase
			found++
		}
	}
	if found != len(cases)+1 {
		t.Fatalf("found %d of %d case labels", found, len(cases)+1)
	}
	out := make([]gasResult, len(cases))
	for i := range cases {
		out[i].code = text[start[i]:start[i+1]]
	}
	caseAt := func(addr uint64) int {
		for i := range cases {
			if addr >= textBase+start[i] && addr < textBase+start[i+1] {
				return i
			}
		}
		return -1
	}
	for _, aliases := range []bool{true, false} {
		args := []string{"-d", exe}
		if !aliases {
			args = []string{"-d", "-M", "no-aliases", exe}
		}
		for _, line := range strings.Split(string(run(objdump, args...)), "\n") {
			addr, text, ok := objdumpLine(line)
			if !ok {
				continue
			}
			i := caseAt(addr)
			if i < 0 {
				continue
			}
			if aliases {
				out[i].alias = append(out[i].alias, text)
			} else {
				out[i].noAlias = append(out[i].noAlias, text)
			}
		}
	}
	return out
}

// branchOps print an absolute target that objdumpLine rewrites as .+N / .-N.
var branchOps = map[string]bool{
	"beq": true, "bne": true, "beqz": true, "bnez": true, "jal": true, "j": true,
	"c.beqz": true, "c.bnez": true, "c.j": true,
}

// objdumpLine parses "   addr:\tbytes \tmnemonic\toperands [# comment]".
func objdumpLine(line string) (uint64, string, bool) {
	f := strings.Split(line, "\t")
	if len(f) < 3 || !strings.HasSuffix(f[0], ":") {
		return 0, "", false
	}
	addr, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(f[0], ":")), 16, 64)
	if err != nil {
		return 0, "", false
	}
	op := strings.TrimSpace(f[2])
	if len(f) == 3 {
		return addr, op, true
	}
	args := f[3]
	if i := strings.Index(args, " #"); i >= 0 {
		args = args[:i]
	}
	if i := strings.Index(args, " <"); i >= 0 {
		args = args[:i]
	}
	if branchOps[op] {
		parts := strings.Split(args, ",")
		last := parts[len(parts)-1]
		if to, err := strconv.ParseUint(last, 16, 64); err == nil {
			parts[len(parts)-1] = fmt.Sprintf(".%+d", int64(to-addr))
			args = strings.Join(parts, ",")
		}
	}
	return addr, op + " " + strings.TrimSpace(args), true
}

// insnLines writes code as .insn directives, one per instruction (a low pair of bits
// other than 0b11 is a 2-byte instruction), so that objdump decodes our bytes.
func insnLines(code []byte) []string {
	var l []string
	for i := 0; i < len(code); {
		if code[i]&3 != 3 {
			l = append(l, fmt.Sprintf(".insn 2, %#04x", uint16(code[i])|uint16(code[i+1])<<8))
			i += 2
			continue
		}
		l = append(l, fmt.Sprintf(".insn 4, %#08x", uint32(code[i])|uint32(code[i+1])<<8|uint32(code[i+2])<<16|uint32(code[i+3])<<24))
		i += 4
	}
	return l
}

// kernelForms emits every case with RVC on and off.
func kernelForms(t testing.TB, cases []formCase, rvc bool) [][]byte {
	t.Helper()
	got := make([][]byte, len(cases))
	for i, c := range cases {
		a := &asm{base: caseBase, rvc: rvc, zbb: c.zbb, sizing: c.sizing}
		if err := c.emit(a); err != nil {
			t.Fatalf("%s: %v", c.form, err)
		}
		got[i] = a.b
	}
	return got
}

// TestFormsVsGNUAs checks every form against GNU as: with RVC on, the bytes equal the
// kernel's choice written explicitly (c.* mnemonics, or a 32-bit form under .option
// norvc); with RVC off, they equal the 32-bit forms. Where as, left to choose, picks
// another encoding, both decode to the same 32-bit instruction, and the difference is
// one of knownDiffs.
func TestFormsVsGNUAs(t *testing.T) {
	cases := formCases()
	kern, base, natural := make([][]string, len(cases)), make([][]string, len(cases)), make([][]string, len(cases))
	for i, c := range cases {
		kern[i] = c.kernLines()
		base[i] = c.baseLines()
		natural[i] = c.naturalLines()
	}
	wantRVC := assemble(t, kern, true)
	want32 := assemble(t, base, false)
	asChoice := assemble(t, natural, true)
	gotRVC, got32 := kernelForms(t, cases, true), kernelForms(t, cases, false)
	var gotSrc [][]string
	for _, b := range gotRVC {
		gotSrc = append(gotSrc, insnLines(b))
	}
	decoded := assemble(t, gotSrc, true)

	agree, differ := 0, 0
	seen := map[string]bool{}
	for i, c := range cases {
		if !bytes.Equal(gotRVC[i], wantRVC[i].code) {
			t.Errorf("%s (RVC): got % x, as % x (%s)", c.form, gotRVC[i], wantRVC[i].code, strings.Join(kern[i], "; "))
		}
		if !bytes.Equal(got32[i], want32[i].code) {
			t.Errorf("%s (no RVC): got % x, as % x (%s)", c.form, got32[i], want32[i].code, strings.Join(base[i], "; "))
		}
		// Same meaning as the 32-bit form: objdump shows a compressed instruction as its
		// expansion.
		if g, w := strings.Join(decoded[i].alias, "; "), strings.Join(want32[i].alias, "; "); g != w {
			t.Errorf("%s: decodes as %q, the 32-bit form as %q", c.form, g, w)
		}
		if bytes.Equal(gotRVC[i], asChoice[i].code) {
			agree++
			continue
		}
		differ++
		d := fmt.Sprintf("%s: kernel %s, as %s", c.form, strings.Join(decoded[i].noAlias, "; "), strings.Join(asChoice[i].noAlias, "; "))
		seen[c.form] = true
		if !knownDiffs[c.form] {
			t.Errorf("unexpected difference from as's own choice: %s", d)
		} else {
			t.Log(d)
		}
	}
	for f := range knownDiffs {
		if !seen[f] {
			t.Errorf("%s: expected the kernel and as to choose differently, they agree", f)
		}
	}
	t.Logf("%d forms, each equal to GNU as with RVC and without; as's own choice agrees on %d, differs on %d", len(cases), agree, differ)
}

// updateForms rewrites testdata/asm/forms.txt from GNU binutils' output (after the
// encoder agrees with it). A package-wide -update, if some test defines one, does too.
var updateForms = flag.Bool("update-forms", false, "rewrite testdata/asm/forms.txt from GNU as and objdump")

const formsGolden = "testdata/asm/forms.txt"

const formsHeader = `# The instruction forms of the kernel's riscv BPF JIT helpers (arch/riscv/net/bpf_jit.h,
# bpf_jit_comp64.c) as the trampoline emitter uses them: each helper call, with CONFIG_RISCV_ISA_C
# (rvc) and without (norvc), the bytes GNU as gives for the kernel's choice (one hex number per
# instruction, as objdump prints them) and objdump -M no-aliases' text for them; branch targets
# are relative (.+N). "as:" is what GNU as chooses itself for the plain instruction, where that
# differs from the kernel. Written by go test -run TestFormsGolden -update-forms from
# riscv64-linux-gnu-as/objdump, only when the encoder agrees with them; without binutils the
# test checks the encoder and the listing against this file.
#
# form | config | bytes | instructions [| as: ...]
`

func updating() bool {
	if *updateForms {
		return true
	}
	if f := flag.Lookup("update"); f != nil {
		return f.Value.String() == "true"
	}
	return false
}

// formsRows renders the table from our encoder and listing.
func formsRows(t testing.TB, cases []formCase) []string {
	var rows []string
	for _, rvc := range []bool{true, false} {
		got := kernelForms(t, cases, rvc)
		for i, c := range cases {
			var text []string
			pc := uint64(caseBase)
			for off := 0; off < len(got[i]); {
				inst, _ := Disassembler{}.Decode(got[i][off:], pc+uint64(off))
				text = append(text, relativeText(inst.Text, pc+uint64(off)))
				off += inst.Len
			}
			rows = append(rows, fmt.Sprintf("%s | %s | %s | %s", c.form, cfgName(rvc), objdumpHex(got[i]), strings.Join(text, "; ")))
		}
	}
	return rows
}

func cfgName(rvc bool) string {
	if rvc {
		return "rvc"
	}
	return "norvc"
}

// TestFormsGolden: testdata/asm/forms.txt is GNU binutils' encoding and decoding of
// every form; the encoder and the listing reproduce it.
func TestFormsGolden(t *testing.T) {
	cases := formCases()
	ours := formsRows(t, cases)
	if haveBinutils() {
		// The oracle's table: bytes from as for the kernel's choice, text from objdump.
		var rows []string
		for _, rvc := range []bool{true, false} {
			src := make([][]string, len(cases))
			nat := make([][]string, len(cases))
			for i, c := range cases {
				if rvc {
					src[i] = c.kernLines()
				} else {
					src[i] = c.baseLines()
				}
				nat[i] = c.naturalLines()
			}
			want := assemble(t, src, rvc)
			choice := assemble(t, nat, true)
			for i, c := range cases {
				row := fmt.Sprintf("%s | %s | %s | %s", c.form, cfgName(rvc), objdumpHex(want[i].code), strings.Join(want[i].noAlias, "; "))
				if rvc && !bytes.Equal(want[i].code, choice[i].code) {
					row += " | as: " + strings.Join(choice[i].noAlias, "; ")
				}
				rows = append(rows, row)
			}
		}
		agree := true
		for i := range rows {
			if r, _, _ := strings.Cut(rows[i], " | as: "); r != ours[i] {
				agree = false
				t.Errorf("encoder and listing: %s\nbinutils:            %s", ours[i], r)
			}
		}
		text := formsHeader + strings.Join(rows, "\n") + "\n"
		if updating() {
			if !agree {
				t.Fatalf("not writing %s: the encoder disagrees with GNU binutils", formsGolden)
			}
			if err := os.WriteFile(formsGolden, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s: %d rows", formsGolden, len(rows))
			return
		}
		old, err := os.ReadFile(formsGolden)
		if err != nil {
			t.Fatalf("%v (go test -run TestFormsGolden -update-forms writes it)", err)
		}
		if string(old) != text {
			t.Errorf("%s differs from what GNU binutils gives now; rerun with -update-forms", formsGolden)
		}
		return
	}
	// Without binutils: the recorded oracle output against the encoder and the listing.
	old, err := os.ReadFile(formsGolden)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(string(old)), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		r, _, _ := strings.Cut(l, " | as: ")
		rows = append(rows, r)
	}
	if len(rows) != len(ours) {
		t.Fatalf("%s has %d rows, the cases give %d", formsGolden, len(rows), len(ours))
	}
	for i := range rows {
		if rows[i] != ours[i] {
			t.Errorf("encoder and listing: %s\n%s: %s", ours[i], formsGolden, rows[i])
		}
	}
}
