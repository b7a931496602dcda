package amd64

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// capture is a kernel image as testdata/captures lists it (objdump-style, AT&T).
type capture struct {
	code  []byte
	calls []uint64 // call targets, in order
	imm64 []uint64 // movabs immediates, in order
	base  uint64   // recovered from the je target
	insts []capInst
}

type capInst struct {
	off  int
	text string
}

func loadCapture(t *testing.T, path string) capture {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var c capture
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		fs := strings.Fields(line)
		off, err := strconv.ParseUint(strings.TrimSuffix(fs[0], ":"), 16, 32)
		if err != nil || int(off) != len(c.code) {
			t.Fatalf("%s: bad offset in %q", path, line)
		}
		b, err := hex.DecodeString(fs[1])
		if err != nil {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
		c.insts = append(c.insts, capInst{len(c.code), strings.Join(fs[2:], " ")})
		c.code = append(c.code, b...)
		op, arg := fs[2], ""
		if len(fs) > 3 {
			arg = fs[3]
		}
		switch {
		case strings.HasPrefix(op, "call"):
			c.calls = append(c.calls, parseNum(t, arg))
		case op == "je":
			c.base = parseNum(t, arg) - (off + 2 + uint64(int64(int8(b[1]))))
		case op == "mov" && len(b) == 10 && strings.HasPrefix(arg, "$"):
			c.imm64 = append(c.imm64, parseNum(t, strings.TrimPrefix(strings.Split(arg, ",")[0], "$")))
		}
	}
	return c
}

func parseNum(t *testing.T, s string) uint64 {
	if v, err := strconv.ParseUint(s, 0, 64); err == nil {
		return v
	}
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		t.Fatalf("number %q: %v", s, err)
	}
	return uint64(v)
}

// fentryTest2 is int bpf_fentry_test2(int a, u64 b).
func fentryTest2() *btfmodel.FuncModel {
	return &btfmodel.FuncModel{Name: "bpf_fentry_test2", RetSize: 4, RetTypeName: "int",
		Args: []btfmodel.Arg{{Name: "a", TypeName: "int", Size: 4}, {Name: "b", TypeName: "u64", Size: 8}}}
}

// TestCaptures rebuilds the captured fentry+fexit images of bpf_fentry_test2 from the
// addresses they embed and compares every byte.
func TestCaptures(t *testing.T) {
	for _, tc := range []struct {
		file        string
		kernel      btfmodel.Kernel
		enter, exit string
		funcEndbr   uint64 // poisoned ENDBR before the patched call (orig_call skips it)
	}{
		{"6.1-amd64-bpf_fentry_test2-fentry-fexit.txt", btfmodel.Kernel61,
			"__bpf_prog_enter_recur", "__bpf_prog_exit_recur", 0},
		{"6.12-amd64-bpf_fentry_test2-fentry-fexit.txt", btfmodel.Kernel612,
			"__bpf_prog_enter_recur", "__bpf_prog_exit_recur", 4},
	} {
		t.Run(string(tc.kernel), func(t *testing.T) {
			c := loadCapture(t, "testdata/captures/"+tc.file)
			if len(c.calls) != 9 || len(c.imm64) != 6 || c.base == 0 {
				t.Fatalf("capture has %d calls, %d movabs, base %#x", len(c.calls), len(c.imm64), c.base)
			}
			// calls: tramp_enter, enter, bpf_func, exit, orig, enter, bpf_func, exit, tramp_exit;
			// movabs: im, fentry prog x2, fexit prog x2, im.
			ip := c.calls[4] - 5
			tr := &jit.Tramp{
				Arch: btfmodel.AMD64, Kernel: tc.kernel, Model: fentryTest2(),
				Flags:  jit.FlagCallOrig | jit.FlagSkipFrame,
				Fentry: []jit.ProgRef{{Prog: jit.Prog{Kind: jit.Fentry}, Index: 1, Addr: c.imm64[1], BPFFunc: c.calls[2]}},
				Fexit:  []jit.ProgRef{{Prog: jit.Prog{Kind: jit.Fexit}, Index: 2, Addr: c.imm64[3], BPFFunc: c.calls[6]}},
				Image:  c.base, Func: ip - tc.funcEndbr, IP: ip, IM: c.imm64[0],
				Helpers: map[string]uint64{
					jit.HelperTrampEnter: c.calls[0], tc.enter: c.calls[1], tc.exit: c.calls[3],
					jit.HelperTrampExit: c.calls[8],
				},
			}
			img, err := Backend{}.Generate(tr)
			if err != nil {
				t.Fatal(err)
			}
			if string(img.Code) != string(c.code) {
				t.Fatalf("image differs from capture at %#x\n got % x\nwant % x",
					firstDiff(img.Code, c.code), img.Code, c.code)
			}
			checkImage(t, tr, img)
			t.Logf("%d bytes identical to the capture", len(c.code))
			// The listing decoder prints what the capture's listing printed.
			for _, in := range c.insts {
				got, err := Disassembler{}.Decode(img.Code[in.off:], img.Base+uint64(in.off))
				if err != nil || got.Text != in.text {
					t.Errorf("%#x: decoded %q (%v), capture says %q", in.off, got.Text, err, in.text)
				}
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// symbols maps every relocation symbol of tr to its address.
func symbols(tr *jit.Tramp) map[string]uint64 {
	m := map[string]uint64{"im": tr.IM, "func": tr.Func, SymCallDepth: 0}
	for k, v := range tr.Helpers {
		m[k] = v
	}
	for _, l := range [][]jit.ProgRef{tr.Fentry, tr.ModRet, tr.Fexit} {
		for _, r := range l {
			m[progSym("prog#", r.Index)] = r.Addr
			m[progSym("bpf_func#", r.Index)] = r.BPFFunc
		}
	}
	return m
}

// checkImage checks that sections tile the code and every relocation holds its symbol.
func checkImage(t *testing.T, tr *jit.Tramp, img *jit.Image) {
	t.Helper()
	at := 0
	for _, s := range img.Sections {
		if s.Start != at || s.End <= s.Start {
			t.Errorf("section %q [%d,%d) does not follow %d", s.Name, s.Start, s.End, at)
		}
		at = s.End
	}
	if at != len(img.Code) {
		t.Errorf("sections end at %d, code at %d", at, len(img.Code))
	}
	// Every section starts on an instruction boundary.
	starts := map[int]bool{}
	for off := 0; off < len(img.Code); {
		starts[off] = true
		in, err := Disassembler{}.Decode(img.Code[off:], img.Base+uint64(off))
		if err != nil || strings.HasPrefix(in.Text, ".byte") {
			t.Fatalf("cannot decode at %#x: % x", off, img.Code[off:min(off+8, len(img.Code))])
		}
		off += in.Len
	}
	for _, s := range img.Sections {
		if !starts[s.Start] {
			t.Errorf("section %q starts inside an instruction at %#x", s.Name, s.Start)
		}
	}
	syms := symbols(tr)
	for _, r := range img.Relocs {
		want, ok := syms[r.Symbol]
		if !ok {
			t.Errorf("reloc at %#x names unknown %q", r.Offset, r.Symbol)
			continue
		}
		c := img.Code[r.Offset:]
		var got []uint64
		switch r.Kind {
		case jit.RelocImm64:
			got = []uint64{binary.LittleEndian.Uint64(c)}
		case jit.RelocImm32:
			v := binary.LittleEndian.Uint32(c)
			got = []uint64{uint64(v), uint64(int64(int32(v)))}
		case jit.RelocRel32:
			next := uint64(4)
			if r.Symbol == SymCallDepth {
				next = 5 // the template's imm8 follows its displacement
			}
			got = []uint64{img.Base + uint64(r.Offset) + next + uint64(int64(int32(binary.LittleEndian.Uint32(c))))}
			if r.Symbol == "func" { // the original call lands past the (ENDBR and) patched call
				got = []uint64{got[0], got[0] - 5, got[0] - 9}
			}
		}
		found := false
		for _, g := range got {
			found = found || g == want
		}
		if !found {
			t.Errorf("reloc %s %q at %#x: bytes give %#x, want %#x", r.Kind, r.Symbol, r.Offset, got, want)
		}
	}
}

// Synthetic addresses for the hand-derived cases.
const (
	tImage = 0xffffffffc0047880 // 64-byte aligned, like a 6.12 pack chunk
	tFunc  = 0xffffffff81234560
	tIM    = 0xff11000012340000
)

var tHelpers = func() map[string]uint64 {
	m := map[string]uint64{}
	for i, n := range []string{jit.HelperTrampEnter, jit.HelperTrampExit, "__bpf_prog_enter",
		"__bpf_prog_exit", "__bpf_prog_enter_recur", "__bpf_prog_exit_recur",
		"__bpf_prog_enter_sleepable", "__bpf_prog_exit_sleepable",
		"__bpf_prog_enter_sleepable_recur", "__bpf_prog_exit_sleepable_recur",
		SymReturnThunk, SymCallDepth} {
		m[n] = 0xffffffff81100000 + uint64(i)*0x40
	}
	return m
}()

// tramp builds a trampoline over m with the given programs (attach order = list order),
// deriving flags like bpf_trampoline_update (kernel/bpf/trampoline.c).
func tramp(k btfmodel.Kernel, m *btfmodel.FuncModel, progs ...jit.Prog) *jit.Tramp {
	tr := &jit.Tramp{Arch: btfmodel.AMD64, Kernel: k, Model: m, Image: tImage, Func: tFunc,
		IP: tFunc + 4, IM: tIM, Helpers: tHelpers}
	if k == btfmodel.Kernel61 {
		tr.IP = tFunc
	}
	for i, p := range progs {
		r := jit.ProgRef{Prog: p, Index: i + 1, Addr: 0xffffc90000100000 + uint64(i)*0x1000,
			BPFFunc: 0xffffffffc0001000 + uint64(i)*0x100}
		switch p.Kind {
		case jit.Fentry:
			tr.Fentry = append([]jit.ProgRef{r}, tr.Fentry...)
		case jit.Fexit:
			tr.Fexit = append([]jit.ProgRef{r}, tr.Fexit...)
		default:
			tr.ModRet = append([]jit.ProgRef{r}, tr.ModRet...)
		}
		if p.FuncIP {
			tr.Flags |= jit.FlagIPArg
		}
	}
	if len(tr.Fexit)+len(tr.ModRet) > 0 {
		tr.Flags |= jit.FlagCallOrig | jit.FlagSkipFrame
	} else {
		tr.Flags |= jit.FlagRestoreRegs
	}
	return tr
}

// scalars returns a model with one argument per size (sizes > 8 are structs by value).
func scalars(sizes ...int) *btfmodel.FuncModel {
	m := &btfmodel.FuncModel{Name: "f", RetSize: 8, RetTypeName: "long"}
	for _, s := range sizes {
		a := btfmodel.Arg{TypeName: "long", Size: s}
		if s > 8 {
			a.TypeName, a.Flags = "struct s", btfmodel.StructArg
		}
		m.Args = append(m.Args, a)
	}
	return m
}

func eights(n int) *btfmodel.FuncModel {
	s := make([]int, n)
	for i := range s {
		s[i] = 8
	}
	return scalars(s...)
}

func generate(t *testing.T, tr *jit.Tramp) *jit.Image {
	t.Helper()
	img, err := Backend{}.Generate(tr)
	if err != nil {
		t.Fatal(err)
	}
	checkImage(t, tr, img)
	return img
}

// matchMask compares code with a hex pattern in which ".." matches any byte.
func matchMask(t *testing.T, code []byte, pattern string) {
	t.Helper()
	p := strings.Join(strings.Fields(pattern), "")
	if len(p) != 2*len(code) {
		t.Fatalf("code is %d bytes, pattern %d\n got % x", len(code), len(p)/2, code)
	}
	for i := range code {
		w := p[2*i : 2*i+2]
		if w == ".." {
			continue
		}
		if v, _ := strconv.ParseUint(w, 16, 8); byte(v) != code[i] {
			t.Fatalf("byte %#x is %02x, want %s\n got % x", i, code[i], w, code)
		}
	}
}

// section returns the bytes of the named section.
// section returns the bytes of every section named name, in order (a step may be split, as
// "call original" is around "retval stash").
func section(t *testing.T, img *jit.Image, name string) []byte {
	t.Helper()
	var b []byte
	found := false
	for _, s := range img.Sections {
		if s.Name == name {
			b, found = append(b, img.Code[s.Start:s.End]...), true
		}
	}
	if !found {
		t.Fatalf("no section %q in %v", name, img.Sections)
	}
	return b
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic(err)
	}
	return b
}
