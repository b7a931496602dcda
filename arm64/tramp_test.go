package arm64

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

const captureFile = "testdata/captures/6.12-arm64-bpf_fentry_test2-fentry-fexit.txt"

// readCapture returns the captured bytes up to the first brk #0x100 (the end of code)
// and the disassembly text of each word.
func readCapture(t *testing.T, name string) ([]byte, []string) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var code []byte
	var text []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		off, rest, _ := strings.Cut(line, ":")
		fields := strings.Fields(rest)
		o, err := strconv.ParseUint(off, 16, 32)
		if err != nil || len(fields) < 2 || int(o) != len(code) {
			t.Fatalf("bad capture line %q", line)
		}
		b, err := hex.DecodeString(fields[0])
		if err != nil || len(b) != 4 {
			t.Fatalf("bad capture word in %q", line)
		}
		if binary.LittleEndian.Uint32(b) == Fault {
			break
		}
		code = append(code, b...)
		text = append(text, strings.Join(fields[1:], " "))
	}
	return code, text
}

// Addresses recovered from the 6.12 capture (captureFile).
const (
	capIM = 0xfff0000003561400 // 0x2c..0x34: movz #0xfff0,lsl48; movk #0x356,lsl16; movk #0x1400
	// Helpers: movn gives bits 0..15 (mov x10, #0xffffffffffffXXXX), then movk 0x4f4b
	// (lsl 16) and 0xa1cb (lsl 32); bits 48..63 are all ones.
	capTrampEnter = 0xffffa1cb4f4bd9a8 // 0x38
	capProgEnter  = 0xffffa1cb4f4bd4e8 // 0x60 and 0xd0: __bpf_prog_enter_recur
	capProgExit   = 0xffffa1cb4f4bd408 // 0x8c and 0xfc: __bpf_prog_exit_recur
	capTrampExit  = 0xffffa1cb4f4bda08 // 0x118
	capProg1      = 0xffff8000800b5000 // 0x4c..0x54: movn → 0x5000, movk 0x800b, movk 0x8000
	capProg2      = 0xffff8000800d5000 // 0xbc..0xc4
	// The image address is not in the capture; bl is pc-relative, so any base puts
	// bpf_func at base-(0x30c-0x7c) (bl at 0x7c, .-0x30c) and base-(0x1c4-0xec).
	// Any base works; this one puts the image in the BPF area like the capture's.
	capBase      = 0xffff80008a3b0000
	capFunc1Off  = 0x30c - 0x7c // below base
	capFunc2Off  = 0x1c4 - 0xec
	capSizeBytes = 0x168 // the sizing pass: 90 words (worst-case calls and im load)
)

var capHelpers = map[string]uint64{
	"__bpf_tramp_enter":      capTrampEnter,
	"__bpf_tramp_exit":       capTrampExit,
	"__bpf_prog_enter_recur": capProgEnter,
	"__bpf_prog_exit_recur":  capProgExit,
	// 6.1 and LSM names, placed where the _recur ones are so capture lines can be reused.
	"__bpf_prog_enter":                 capProgEnter,
	"__bpf_prog_exit":                  capProgExit,
	"__bpf_prog_enter_sleepable_recur": capProgEnter + 0x100,
	"__bpf_prog_exit_sleepable_recur":  capProgExit + 0x100,
	"__bpf_prog_enter_sleepable":       capProgEnter + 0x200,
	"__bpf_prog_exit_sleepable":        capProgExit + 0x200,
}

func u64Args(n int) []btfmodel.Arg {
	a := make([]btfmodel.Arg, n)
	for i := range a {
		a[i] = btfmodel.Arg{Name: fmt.Sprintf("a%d", i), TypeName: "u64", Size: 8}
	}
	return a
}

func structArg(size int) btfmodel.Arg {
	return btfmodel.Arg{Name: "s", TypeName: "struct s", Size: size, Flags: btfmodel.StructArg}
}

// captureTramp is the captured case: int bpf_fentry_test2(int a, u64 b), one fentry
// (prog#1) and one fexit (prog#2), cookies 0.
func captureTramp(base uint64) *jit.Tramp {
	return &jit.Tramp{
		Arch:   btfmodel.ARM64,
		Kernel: btfmodel.Kernel612,
		Model: &btfmodel.FuncModel{Name: "bpf_fentry_test2", RetSize: 4, RetTypeName: "int",
			Args: []btfmodel.Arg{{Name: "a", TypeName: "int", Size: 4}, {Name: "b", TypeName: "u64", Size: 8}}},
		Flags:   jit.FlagCallOrig | jit.FlagSkipFrame,
		Fentry:  []jit.ProgRef{{Prog: jit.Prog{Kind: jit.Fentry}, Index: 1, Addr: capProg1, BPFFunc: base - capFunc1Off}},
		Fexit:   []jit.ProgRef{{Prog: jit.Prog{Kind: jit.Fexit}, Index: 2, Addr: capProg2, BPFFunc: base - capFunc2Off}},
		Image:   base,
		Func:    0xffffa1cb4f4c0000, // not embedded without IP_ARG
		IM:      capIM,
		Helpers: capHelpers,
	}
}

func words(b []byte) []uint32 {
	w := make([]uint32, len(b)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return w
}

func mustGen(t testing.TB, b generator, tr *jit.Tramp) *jit.Image {
	t.Helper()
	im, err := b.Generate(tr)
	if err != nil {
		t.Fatal(err)
	}
	return im
}

func TestCapture612(t *testing.T) {
	want, text := readCapture(t, captureFile)
	if len(want) != 0x148 {
		t.Fatalf("capture has %#x bytes of code, want 0x148", len(want))
	}
	for _, base := range []uint64{capBase, 0xffff800080a00040, 0xffff8000c0000000, 0xffff80008a3afd40} {
		im := mustGen(t, Backend{}, captureTramp(base))
		if !bytes.Equal(im.Code, want) {
			g, w := words(im.Code), words(want)
			for i := range w {
				if i >= len(g) || g[i] != w[i] {
					t.Errorf("base %#x: first difference at %#x: got %08x, want %08x (%s)", base, 4*i, g[min(i, len(g)-1)], w[i], text[i])
					break
				}
			}
			t.Fatalf("base %#x: %d bytes generated, %d captured", base, len(im.Code), len(want))
		}
	}
	n, err := Backend{}.Size(captureTramp(capBase))
	if err != nil || n != capSizeBytes {
		t.Errorf("Size = %#x, %v; want %#x", n, err, capSizeBytes)
	}
}

// TestCaptureAnnotations checks sections against the capture's instructions (prologue,
// arg spill, prog calls, call original, epilogue, as prepare_trampoline emits them; the
// x19/x20 saves are the prologue's and the ip_after_call nop its own) and
// relocations against the capture's address-bearing instructions.
func TestCaptureAnnotations(t *testing.T) {
	im := mustGen(t, Backend{}, captureTramp(capBase))
	wantSecs := []jit.Section{
		{Name: jit.SecPrologue, Start: 0x00, End: 0x14},
		{Name: jit.SecNrArgs, Start: 0x14, End: 0x1c},
		{Name: jit.SecArgSpill, Start: 0x1c, End: 0x24},
		{Name: jit.SecPrologue, Start: 0x24, End: 0x2c}, // str x19, x20: saved after the arguments
		{Name: jit.SecTrampEnter, Start: 0x2c, End: 0x48},
		{Name: jit.SecFentry(1), Start: 0x48, End: 0x9c},
		{Name: jit.SecCallOrig, Start: 0x9c, End: 0xb0},
		{Name: jit.SecRetval, Start: 0xb0, End: 0xb4},
		{Name: jit.SecIPAfterCall, Start: 0xb4, End: 0xb8},
		{Name: jit.SecFexit(2), Start: 0xb8, End: 0x10c},
		{Name: jit.SecTrampExit, Start: 0x10c, End: 0x128},
		{Name: jit.SecEpilogue, Start: 0x128, End: 0x148},
	}
	if fmt.Sprint(im.Sections) != fmt.Sprint(wantSecs) {
		t.Errorf("sections\n got %v\nwant %v", im.Sections, wantSecs)
	}
	i64 := func(off int, sym string) jit.Reloc { return jit.Reloc{Offset: off, Kind: jit.RelocImm64, Symbol: sym} }
	br := func(off int, sym string) jit.Reloc { return jit.Reloc{Offset: off, Kind: jit.RelocBranch, Symbol: sym} }
	wantRel := []jit.Reloc{
		i64(0x2c, "im"), i64(0x38, "__bpf_tramp_enter"),
		i64(0x4c, "prog#1"), i64(0x60, "__bpf_prog_enter_recur"), br(0x7c, "bpf_func#1"), i64(0x8c, "__bpf_prog_exit_recur"),
		i64(0xbc, "prog#2"), i64(0xd0, "__bpf_prog_enter_recur"), br(0xec, "bpf_func#2"), i64(0xfc, "__bpf_prog_exit_recur"),
		i64(0x10c, "im"), i64(0x118, "__bpf_tramp_exit"),
	}
	if fmt.Sprint(im.Relocs) != fmt.Sprint(wantRel) {
		t.Errorf("relocs\n got %v\nwant %v", im.Relocs, wantRel)
	}
}

// Capture lines reused as GNU as text (the shapes below are built from them).
const (
	asmFrames  = "stp x29, x9, [sp,#-16]!; mov x29, sp; stp x29, x30, [sp,#-16]!; mov x29, sp"
	asmIM612   = "mov x0, #0xfff0000000000000; movk x0, #0x356, lsl #16; movk x0, #0x1400"
	asmEnterT  = "mov x10, #0xffffffffffffd9a8; movk x10, #0x4f4b, lsl #16; movk x10, #0xa1cb, lsl #32; blr x10"
	asmExitT   = "mov x10, #0xffffffffffffda08; movk x10, #0x4f4b, lsl #16; movk x10, #0xa1cb, lsl #32; blr x10"
	asmEnterP  = "mov x10, #0xffffffffffffd4e8; movk x10, #0x4f4b, lsl #16; movk x10, #0xa1cb, lsl #32; blr x10"
	asmExitP   = "mov x10, #0xffffffffffffd408; movk x10, #0x4f4b, lsl #16; movk x10, #0xa1cb, lsl #32; blr x10"
	asmProg1   = "mov x19, #0xffffffffffff5000; movk x19, #0x800b, lsl #16; movk x19, #0x8000, lsl #32"
	asmProg2   = "mov x19, #0xffffffffffff5000; movk x19, #0x800d, lsl #16; movk x19, #0x8000, lsl #32"
	asmExitSeq = "add x0, x19, #0; add x1, x20, #0; mov x2, sp; " + asmExitP
	asmRetPar  = "mov sp, x29; ldp x29, x30, [sp],#16; ldp x29, x9, [sp],#16; add x30, x9, #0; ret x9"
)

// expect assembles "; "-separated lines after a start label (bl start-N resolves).
func expect(t *testing.T, lines ...string) []byte {
	t.Helper()
	src := "start:\n" + strings.ReplaceAll(strings.Join(lines, "\n"), "; ", "\n")
	var b []byte
	for _, w := range gas(t, src) {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}

func diffCode(t *testing.T, name string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	g, w := words(got), words(want)
	for i := 0; i < max(len(g), len(w)); i++ {
		if i >= len(g) || i >= len(w) || g[i] != w[i] {
			t.Errorf("%s: %d bytes, want %d; first difference at %#x", name, len(got), len(want), 4*i)
			return
		}
	}
}

// checkSections: sections tile the code in order.
func checkSections(t *testing.T, im *jit.Image) {
	t.Helper()
	at := 0
	for _, s := range im.Sections {
		if s.Start != at || s.End <= s.Start {
			t.Errorf("section %q [%#x,%#x) after %#x", s.Name, s.Start, s.End, at)
		}
		at = s.End
	}
	if at != len(im.Code) {
		t.Errorf("sections end at %#x, code at %#x", at, len(im.Code))
	}
}

// TestShapeModRetIPCookie is a shape derived by hand from prepare_trampoline: "1 fmod_ret,
// 1 argument, IP_ARG, cookie 0x1234567": IP slot from func_addr, W-form cookie, retval zeroed once, cbnz to
// ip_epilogue (no fexit).
func TestShapeModRetIPCookie(t *testing.T) {
	tr := captureTramp(capBase)
	tr.Model.Args = u64Args(1)
	tr.Flags = jit.FlagCallOrig | jit.FlagSkipFrame | jit.FlagIPArg
	tr.Func = 0xffffa1cb4f4b1000
	tr.ModRet = []jit.ProgRef{{Prog: jit.Prog{Kind: jit.ModRet, Cookie: 0x1234567}, Index: 1, Addr: capProg1, BPFFunc: capBase - 0x290}}
	tr.Fentry, tr.Fexit = nil, nil
	im := mustGen(t, Backend{}, tr)
	want := expect(t, asmFrames, "sub sp, sp, #64",
		"mov x10, #0xffffffffffff1000; movk x10, #0x4f4b, lsl #16; movk x10, #0xa1cb, lsl #32; str x10, [sp,#16]",
		"movz x10, #1; str x10, [sp,#24]; str x0, [sp,#32]; str x19, [sp,#48]; str x20, [sp,#56]",
		asmIM612, asmEnterT,
		"str xzr, [sp,#40]",
		"movz w10, #0x4567; movk w10, #0x123, lsl #16; str x10, [sp]",
		asmProg1, "add x0, x19, #0; mov x1, sp", asmEnterP,
		"add x20, x0, #0; cbz x0, .+16; add x0, sp, #32; bl start-0x290; str x0, [sp,#40]",
		asmExitSeq,
		"ldr x10, [sp,#40]; cbnz x10, .+28",
		"ldr x0, [sp,#32]; ldr x10, [sp,#72]; adr x30, .+8; ret x10; str x0, [sp,#40]; nop",
		asmIM612, asmExitT,
		"ldr x19, [sp,#48]; ldr x20, [sp,#56]; ldr x0, [sp,#40]", asmRetPar)
	diffCode(t, "fmod_ret", im.Code, want)
	checkSections(t, im)
	if w := words(im.Code)[22:24]; w[0] != 0x5288ACEA || w[1] != 0x72A0246A {
		t.Errorf("cookie words %08x, want 5288acea 72a0246a (movz w10; movk w10, lsl 16)", w)
	}
}

// TestShapeFentryOnly is a shape derived by hand from prepare_trampoline, "fentry only,
// 3 arguments": RESTORE_REGS reloads
// x0..x2, no retval, variant B return into the patched function; sizing 188 bytes,
// code 176.
func TestShapeFentryOnly(t *testing.T) {
	tr := captureTramp(capBase)
	tr.Model.Args = u64Args(3)
	tr.Flags = jit.FlagRestoreRegs
	tr.Fexit = nil
	im := mustGen(t, Backend{}, tr)
	want := expect(t, asmFrames, "sub sp, sp, #64",
		"movz x10, #3; str x10, [sp,#16]; str x0, [sp,#24]; str x1, [sp,#32]; str x2, [sp,#40]",
		"str x19, [sp,#48]; str x20, [sp,#56]",
		"str xzr, [sp]", asmProg1, "add x0, x19, #0; mov x1, sp", asmEnterP,
		"add x20, x0, #0; cbz x0, .+12; add x0, sp, #24; bl start-0x290", asmExitSeq,
		"ldr x0, [sp,#24]; ldr x1, [sp,#32]; ldr x2, [sp,#40]; ldr x19, [sp,#48]; ldr x20, [sp,#56]",
		"mov sp, x29; ldp x29, x30, [sp],#16; ldp x29, x9, [sp],#16; add x10, x30, #0; add x30, x9, #0; ret x10")
	diffCode(t, "fentry only", im.Code, want)
	checkSections(t, im)
	if n, _ := (Backend{}).Size(tr); n != 188 || len(im.Code) != 176 {
		t.Errorf("size %d, code %d; want 188 and 176", n, len(im.Code))
	}
}

// TestShape61ProgTarget is the captured case on 6.1 against a BPF-program target, as
// Debian's 6.1.176 builds it (testdata/kernel/6.1-arm64): like 6.12 (im by
// emit_a64_mov_i64, adr+ret to the original, mov x20 before cbz, the _recur helpers)
// except that every call is indirect, bpf_func included, and the image fills a page.
func TestShape61ProgTarget(t *testing.T) {
	tr := captureTramp(capBase)
	tr.Kernel = btfmodel.Kernel61
	im := mustGen(t, progTarget{}, tr)
	const (
		func1 = "mov x10, #0xfffffffffffffd70; movk x10, #0x8a3a, lsl #16; movk x10, #0x8000, lsl #32; blr x10"
		func2 = "mov x10, #0xffffffffffffff28; movk x10, #0x8a3a, lsl #16; movk x10, #0x8000, lsl #32; blr x10"
	)
	want := expect(t, asmFrames, "sub sp, sp, #64",
		"movz x10, #2; str x10, [sp,#16]; str x0, [sp,#24]; str x1, [sp,#32]; str x19, [sp,#48]; str x20, [sp,#56]",
		asmIM612, asmEnterT,
		"str xzr, [sp]", asmProg1, "add x0, x19, #0; mov x1, sp", asmEnterP,
		"add x20, x0, #0; cbz x0, .+24; add x0, sp, #24", func1, asmExitSeq,
		"ldr x0, [sp,#24]; ldr x1, [sp,#32]; ldr x10, [sp,#72]; adr x30, .+8; ret x10; str x0, [sp,#40]; nop",
		"str xzr, [sp]", asmProg2, "add x0, x19, #0; mov x1, sp", asmEnterP,
		"add x20, x0, #0; cbz x0, .+24; add x0, sp, #24", func2, asmExitSeq,
		asmIM612, asmExitT,
		"ldr x19, [sp,#48]; ldr x20, [sp,#56]; ldr x0, [sp,#40]", asmRetPar)
	diffCode(t, "6.1", im.Code, want)
	checkSections(t, im)
	for _, r := range im.Relocs {
		if r.Kind == jit.RelocBranch {
			t.Errorf("6.1 reloc %+v: calls are indirect", r)
		}
	}
	if n, _ := (progTarget{}).Size(tr); n != PageSize {
		t.Errorf("6.1 size %d, want a page", n)
	}
}

// TestBTI: bti jc first, then the same code one word later (bl offsets are
// pc-relative, so the base moves back by 4 to keep the same pcs).
func TestBTI(t *testing.T) {
	want, _ := readCapture(t, captureFile)
	tr := captureTramp(capBase)
	tr.Image -= 4
	tr.Features.IBT = true
	im := mustGen(t, Backend{}, tr)
	if w := binary.LittleEndian.Uint32(im.Code); w != 0xD50324DF {
		t.Errorf("first word %08x, want bti jc d50324df", w)
	}
	diffCode(t, "bti", im.Code[4:], want)
}

// TestCallRange: bl reaches [pc-128MiB, pc+128MiB) from the bl's final address;
// outside it the call becomes movn/movk/movk x10; blr x10 (3 words longer), and
// later calls are decided at their moved pcs.
func TestCallRange(t *testing.T) {
	const m128 = 1 << 27
	pc1 := uint64(capBase + 0x7c) // bl bpf_func#1 in the capture
	pc2 := uint64(capBase + 0xec) // bl bpf_func#2
	for _, c := range []struct {
		name          string
		func1, func2  uint64
		direct1, dir2 bool
	}{
		{"+128M-4", pc1 + m128 - 4, pc2 - 0x100, true, true},
		{"+128M", pc1 + m128, pc2 - 0x100, false, true},
		{"-128M", pc1 - m128, pc2 - 0x100, true, true},
		{"-128M-4", pc1 - m128 - 4, pc2 - 0x100, false, true},
		{"second at its limit", pc1 - 0x100, pc2 - m128, true, true},
		{"second pushed out", pc1 + m128, pc2 - m128, false, false},
		{"zero target", 0, pc2 - 0x100, false, true},
	} {
		tr := captureTramp(capBase)
		tr.Fentry[0].BPFFunc, tr.Fexit[0].BPFFunc = c.func1, c.func2
		im := mustGen(t, Backend{}, tr)
		w := words(im.Code)
		i := int(pc1-capBase) / 4
		check := func(which string, i int, pc, target uint64, direct bool) int {
			if direct {
				if w[i] != BL(int64(target-pc)) {
					t.Errorf("%s: %s %08x is not bl %#x", c.name, which, w[i], int64(target-pc))
				}
				return 0
			}
			seq := append(AppendAddrMov(nil, X10, target), BLR(X10))
			if fmt.Sprint(w[i:i+4]) != fmt.Sprint(seq) {
				t.Errorf("%s: %s %08x, want %08x", c.name, which, w[i:i+4], seq)
			}
			return 12
		}
		shift := check("call 1", i, pc1, c.func1, c.direct1)
		shift += check("call 2", int(pc2-capBase+uint64(shift))/4, pc2+uint64(shift), c.func2, c.dir2)
		if len(im.Code) != 0x148+shift {
			t.Errorf("%s: %#x bytes, want %#x", c.name, len(im.Code), 0x148+shift)
		}
	}
}

func progs(kind jit.Kind, n, first int) []jit.ProgRef {
	var p []jit.ProgRef
	for i := 0; i < n; i++ {
		p = append(p, jit.ProgRef{Prog: jit.Prog{Kind: kind}, Index: first + i,
			Addr: capProg1 + uint64(i)<<12, BPFFunc: capBase - 0x1000*uint64(i+1)})
	}
	return p
}

// TestRejects: the requests 6.12 and 6.1 arm64 refuse, with the kernel's errno.
func TestRejects(t *testing.T) {
	mod := func(k btfmodel.Kernel, args []btfmodel.Arg, f func(*jit.Tramp)) *jit.Tramp {
		tr := captureTramp(capBase)
		tr.Kernel, tr.Model.Args = k, args
		if f != nil {
			f(tr)
		}
		return tr
	}
	k61, k612 := btfmodel.Kernel61, btfmodel.Kernel612
	for _, c := range []struct {
		name string
		b    generator
		tr   *jit.Tramp
		want jit.Errno
	}{
		{"6.12 nine args", Backend{}, mod(k612, u64Args(9), nil), jit.ENOTSUPP},
		{"6.12 struct straddling x7", Backend{}, mod(k612, append(u64Args(7), structArg(16)), nil), jit.ENOTSUPP},
		{"6.12 two 16-byte structs + 5", Backend{}, mod(k612, append(u64Args(5), structArg(12), structArg(16)), nil), jit.ENOTSUPP},
		{"6.1 kernel function", Backend{}, mod(k61, u64Args(2), nil), jit.ENOTSUPP},
		{"6.1 struct arg", progTarget{}, mod(k61, []btfmodel.Arg{structArg(8)}, nil), jit.ENOTSUPP},
		{"6.1 nine args", progTarget{}, mod(k61, u64Args(9), nil), jit.ENOTSUPP},
		{"39 links", Backend{}, mod(k612, u64Args(2), func(tr *jit.Tramp) { tr.Fentry = progs(jit.Fentry, 38, 2) }), jit.E2BIG},
		// Sizing: 38 fmod_ret on 2 args is 1069 words = 4276 bytes > 4096 (the 6.12 corpus
		// refuses already the 37th fmod_ret link with E2BIG).
		{"6.12 38 fmod_ret over a page", Backend{}, mod(k612, u64Args(2), func(tr *jit.Tramp) {
			tr.Fentry, tr.Fexit, tr.ModRet = nil, nil, progs(jit.ModRet, 38, 1)
		}), jit.E2BIG},
		{"6.1 38 fmod_ret over a page", progTarget{}, mod(k61, u64Args(2), func(tr *jit.Tramp) {
			tr.Fentry, tr.Fexit, tr.ModRet = nil, nil, progs(jit.ModRet, 38, 1)
		}), jit.EFBIG},
	} {
		_, err := c.b.Generate(c.tr)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want -%s", c.name, err, c.want)
		}
	}
	tr := captureTramp(capBase)
	tr.Helpers = map[string]uint64{"__bpf_tramp_enter": 1, "__bpf_tramp_exit": 2}
	var mh *jit.MissingHelperError
	if _, err := (Backend{}).Generate(tr); !errors.As(err, &mh) || mh.Name != "__bpf_prog_enter_recur" {
		t.Errorf("missing helper: %v", err)
	}
	tr = captureTramp(capBase)
	tr.Arch = btfmodel.AMD64
	if _, err := (Backend{}).Generate(tr); err == nil {
		t.Errorf("amd64 trampoline accepted")
	}
}

// TestFits: 38 fentry programs on 2 args is 933 words by the sizing pass, under a page;
// 6 u64 + a 16-byte struct is exactly 8 registers.
func TestFits(t *testing.T) {
	tr := captureTramp(capBase)
	tr.Flags, tr.Fexit, tr.Fentry = jit.FlagRestoreRegs, nil, progs(jit.Fentry, 38, 1)
	if n, err := (Backend{}).Size(tr); err != nil || n != 4*933 {
		t.Errorf("38 fentry: size %d, %v; want %d", n, err, 4*933)
	}
	tr = captureTramp(capBase)
	tr.Model.Args = append(u64Args(6), structArg(16))
	im := mustGen(t, Backend{}, tr)
	w := words(im.Code)
	// fexit/fmod_ret frame for nregs 8: args 24..80, retval 88, x19/x20 96/104, stack 112.
	if w[4] != SUBI(true, SP, SP, 112) || w[5] != MOVZ(true, X10, 8, 0) || w[7] != STR(X0, SP, 24) ||
		w[14] != STR(X7, SP, 80) || w[15] != STR(X19, SP, 96) {
		t.Errorf("struct frame: %08x", w[:17])
	}
}

// TestHelperChoice: enter/exit names by kind, sleepable and kernel (jit.EnterExit).
func TestHelperChoice(t *testing.T) {
	for _, c := range []struct {
		k         btfmodel.Kernel
		kind      jit.Kind
		sleepable bool
		want      string
	}{
		{btfmodel.Kernel612, jit.Fentry, true, "__bpf_prog_enter_sleepable_recur"},
		{btfmodel.Kernel612, jit.LSM, false, "__bpf_prog_enter"},
		{btfmodel.Kernel612, jit.LSM, true, "__bpf_prog_enter_sleepable"},
		{btfmodel.Kernel61, jit.Fentry, true, "__bpf_prog_enter_sleepable_recur"},
	} {
		tr := captureTramp(capBase)
		tr.Kernel = c.k
		tr.Fentry[0].Kind, tr.Fentry[0].Sleepable = c.kind, c.sleepable
		im := mustGen(t, progTarget{}, tr)
		if got := im.Relocs[3].Symbol; got != c.want {
			t.Errorf("%s %s sleepable=%v: %s, want %s", c.k, c.kind, c.sleepable, got, c.want)
		}
	}
}

// TestModRetFixups: each fmod_ret's cbnz x10 lands just after the ip_after_call nop,
// on the first fexit instruction (invoke_bpf_mod_ret's branches); with 2 args that is 8
// words after the last one (ldr x0, ldr x1, ldr x10, adr, ret, str, nop).
func TestModRetFixups(t *testing.T) {
	tr := captureTramp(capBase)
	tr.ModRet = progs(jit.ModRet, 2, 3)
	im := mustGen(t, Backend{}, tr)
	checkSections(t, im)
	var fexitAt int
	var cbnz []int
	for _, s := range im.Sections {
		switch {
		case strings.HasPrefix(s.Name, "fmod_ret") && s.Name != jit.SecModRetInit:
			cbnz = append(cbnz, s.End-4)
		case s.Name == jit.SecFexit(2):
			fexitAt = s.Start
		}
	}
	w := words(im.Code)
	if len(cbnz) != 2 || w[cbnz[1]/4] != CBNZ(true, X10, 32) || fexitAt-cbnz[1] != 32 {
		t.Fatalf("last cbnz at %v: %08x, fexit at %#x", cbnz, w[cbnz[len(cbnz)-1]/4], fexitAt)
	}
	if w[cbnz[0]/4] != CBNZ(true, X10, int64(fexitAt-cbnz[0])) {
		t.Errorf("first cbnz %08x does not reach %#x", w[cbnz[0]/4], fexitAt)
	}
}

// generator is Backend, or progTarget for a BPF-program target.
type generator interface {
	Generate(t *jit.Tramp) (*jit.Image, error)
	Size(t *jit.Tramp) (int, error)
}

// progTarget generates for a BPF-program target (jit.Tramp.ProgTarget).
type progTarget struct{}

func (progTarget) Generate(t *jit.Tramp) (*jit.Image, error) {
	t.ProgTarget = true
	return Backend{}.Generate(t)
}

func (progTarget) Size(t *jit.Tramp) (int, error) {
	t.ProgTarget = true
	return Backend{}.Size(t)
}
