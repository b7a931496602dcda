package amd64_test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/amd64"
	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/jit/jittest"
	"github.com/trampjit/trampjit/kernel"
)

// frameCase is one image whose frame is checked: a golden case or a corpus capture.
type frameCase struct {
	name string
	tr   *jit.Tramp
	img  *jit.Image
}

// untouched are the slots an image may leave to others: the helpers fill saved_run_ctx
// through the run_ctx pointer, the pad only aligns, and without SKIP_FRAME the traced
// function itself returns through the parent return address (and with it, the image skips
// the return address the patched call pushed).
var untouched = map[string]bool{
	jit.SlotRunCtxSaved: true,
	amd64.SlotPad:       true,
	amd64.SlotParentRet: true,
}

// TestFrameSlotsOverImages checks Backend.Frame against GNU objdump over every golden case
// and every captured image of every amd64 corpus (the kernel's own bytes): each rbp-relative
// operand objdump prints lands inside one declared slot and is listed as that slot's writer
// (a mov to it) or reader; every writer and reader Frame lists is such an instruction or a
// push, pop, leave, ret or return-thunk jump; every slot is touched by some instruction
// unless it is one the image leaves to others; SPOff is Off plus the `sub rsp` immediate and
// the pushes after it as objdump reads them.
func TestFrameSlotsOverImages(t *testing.T) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("GNU objdump not installed")
	}
	cases := imageCases(t)
	perProfile := map[string][2]int{} // images, slots
	insns := objdumpAll(t, objdump, cases)
	accesses, slots := 0, 0
	for i, c := range cases {
		f, err := amd64.Backend{}.Frame(c.tr, c.img)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		accesses += checkFrame(t, c, f, insns[i])
		slots += len(f.Slots)
		if strings.HasPrefix(c.name, c.img.Kernel+"-amd64 ") { // a corpus image
			n := perProfile[c.img.Kernel]
			perProfile[c.img.Kernel] = [2]int{n[0] + 1, n[1] + len(f.Slots)}
		}
	}
	if len(cases) < 500 {
		t.Errorf("only %d images", len(cases))
	}
	var ks []string
	for k := range perProfile {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		t.Logf("%s corpus: %d images, %d slots", k, perProfile[k][0], perProfile[k][1])
	}
	t.Logf("%d images, %d slots, %d rbp-relative operands checked against objdump", len(cases), slots, accesses)
}

// imageCases are every golden case and every captured image of every amd64 corpus, the
// kernel's bytes with the model's annotations (the two are byte-identical, TestCaptures and
// kernel's corpus tests say).
func imageCases(t *testing.T) []frameCase {
	t.Helper()
	var cases []frameCase
	for _, c := range jittest.Cases(btfmodel.AMD64) {
		tr, img, err := jit.Generate(&c.Req)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		cases = append(cases, frameCase{"golden " + c.Name, tr, img})
	}
	cases = append(cases, flagVariants(t)...)
	dirs, _ := filepath.Glob(filepath.Join("..", "testdata", "kernel", "*-amd64"))
	for _, dir := range dirs {
		cc, err := kernel.ReadCorpus(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cc {
			if c.Image == "" || c.Request == nil {
				continue
			}
			tr, img, err := jit.Generate(c.Request)
			if err != nil {
				continue // a refusal; kernel's corpus tests judge it
			}
			code, err := hex.DecodeString(c.Image)
			if err != nil {
				t.Fatal(err)
			}
			img.Code = code // the kernel's bytes, which the model's must equal
			cases = append(cases, frameCase{filepath.Base(dir) + " " + c.ID, tr, img})
		}
	}
	return cases
}

// flagVariants are images with the flags no golden or corpus case has: TAIL_CALL_CTX
// (push rax, its reload), ORIG_STACK (the call through the return address), RESTORE_REGS,
// on every profile, with and without stack arguments.
func flagVariants(t *testing.T) []frameCase {
	t.Helper()
	var out []frameCase
	for _, k := range []btfmodel.Kernel{btfmodel.Kernel61, btfmodel.Kernel612, btfmodel.Kernel72} {
		for _, proto := range []string{"int f(int a, u64 b)", "int f(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f, u32 g)"} {
			for _, v := range []struct {
				name  string
				progs []jit.Prog
				flags jit.Flags
			}{
				{"tail_call_ctx", []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit}}, jit.FlagTailCallCtx},
				{"tail_call_ctx-fentry", []jit.Prog{{Kind: jit.Fentry}}, jit.FlagTailCallCtx},
				{"orig_stack", []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.ModRet}, {Kind: jit.Fexit}}, jit.FlagOrigStack | jit.FlagShareIPModify},
				{"restore_regs", []jit.Prog{{Kind: jit.Fentry, FuncIP: true}}, jit.FlagRestoreRegs},
			} {
				req := jit.Request{Arch: btfmodel.AMD64, Kernel: k, Proto: proto, Progs: v.progs}
				m, err := req.Model()
				if err != nil {
					t.Fatal(err)
				}
				tr, err := jit.Resolve(&req, m)
				if err != nil {
					if errors.Is(err, jit.ENOTSUPP) {
						continue // 6.1: seven arguments
					}
					t.Fatal(err)
				}
				tr.Flags |= v.flags
				img, err := amd64.Backend{}.Generate(tr)
				if errors.Is(err, jit.ENOTSUPP) {
					continue
				}
				if err != nil {
					t.Fatalf("%s %s %s: %v", k, proto, v.name, err)
				}
				out = append(out, frameCase{fmt.Sprintf("variant %s %s %s", k, v.name, proto), tr, img})
			}
		}
	}
	if len(out) < 16 {
		t.Fatalf("only %d flag variants", len(out))
	}
	return out
}

// odInsn is one instruction as objdump prints it.
type odInsn struct {
	off       int
	mnem, ops string
}

// objdumpAll disassembles every image with one objdump run over their concatenation (each
// image ends on an instruction boundary) and splits the result back by image.
func objdumpAll(t *testing.T, objdump string, cases []frameCase) [][]odInsn {
	var all []byte
	starts := make([]int, len(cases))
	for i, c := range cases {
		starts[i] = len(all)
		all = append(all, c.img.Code...)
	}
	path := filepath.Join(t.TempDir(), "images.bin")
	if err := os.WriteFile(path, all, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(objdump, "-D", "-b", "binary", "-m", "i386:x86-64", "-w", "--no-show-raw-insn", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	res := make([][]odInsn, len(cases))
	line := regexp.MustCompile(`^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$`)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		off, _ := strconv.ParseInt(m[1], 16, 64)
		i := sort.SearchInts(starts, int(off)+1) - 1
		mn, ops := m[2], m[3]
		for mn == "ds" || mn == "cs" || mn == "data16" || mn == "rex.W" || mn == "notrack" || mn == "bnd" {
			// A prefix printed as a word: the mnemonic follows.
			f := strings.Fields(ops)
			if len(f) == 0 {
				break
			}
			mn, ops = f[0], strings.Join(f[1:], " ")
		}
		res[i] = append(res[i], odInsn{int(off) - starts[i], mn, ops})
	}
	return res
}

var rbpOperand = regexp.MustCompile(`(-?0x[0-9a-f]+)?\((%r[bs]p)\)`)

// checkFrame checks one image's frame against objdump's view of it; it returns the number
// of rbp-relative operands checked.
func checkFrame(t *testing.T, c frameCase, f *jit.Frame, insns []odInsn) int {
	t.Helper()
	explicit := map[int]bool{} // instructions with an rbp-relative operand
	implicit := map[int]bool{} // push, pop, leave, ret, jmp
	n := 0
	sub, pushes, afterSub := -1, 0, false
	for _, in := range insns {
		switch {
		case strings.HasPrefix(in.mnem, "push"), strings.HasPrefix(in.mnem, "pop"), in.mnem == "leave", in.mnem == "leaveq",
			strings.HasPrefix(in.mnem, "ret"), strings.HasPrefix(in.mnem, "jmp"):
			implicit[in.off] = true
		}
		if sub < 0 && strings.HasPrefix(in.mnem, "sub") && strings.HasSuffix(in.ops, ",%rsp") {
			v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(in.ops, "$0x"), ",%rsp"), 16, 64)
			if err != nil {
				t.Errorf("%s: %#x: sub %s", c.name, in.off, in.ops)
			}
			sub, afterSub = int(v), true
			continue
		}
		if afterSub {
			if strings.HasPrefix(in.mnem, "push") {
				pushes++
			} else {
				afterSub = false
			}
		}
		m := rbpOperand.FindStringSubmatch(in.ops)
		if m == nil || strings.HasPrefix(in.mnem, "nop") {
			continue
		}
		if m[2] == "%rsp" {
			t.Errorf("%s: %#x: %s %s: an rsp-relative access, which the x86 JIT does not emit", c.name, in.off, in.mnem, in.ops)
			continue
		}
		n++
		explicit[in.off] = true
		d := int64(0)
		if m[1] != "" {
			neg := strings.HasPrefix(m[1], "-")
			d, _ = strconv.ParseInt(strings.TrimPrefix(m[1], "-")[2:], 16, 64)
			if neg {
				d = -d
			}
		}
		size := 8
		switch {
		case strings.HasPrefix(in.mnem, "lea"):
			size = 0
		case strings.HasSuffix(in.mnem, "l"), regexp.MustCompile(`%e[a-z]{2}\b|%r\d+d\b`).MatchString(in.ops):
			size = 4
		}
		s := f.SlotAt(int(d))
		if s == nil || int(d)+size > s.Off+s.Size {
			t.Errorf("%s: %#x: %s %s reaches rbp%+d, which no declared slot holds", c.name, in.off, in.mnem, in.ops, d)
			continue
		}
		write := strings.HasPrefix(in.mnem, "mov") && strings.HasSuffix(in.ops, m[0])
		list := s.Readers
		if write {
			list = s.Writers
		}
		if !contains(list, in.off) {
			t.Errorf("%s: %#x: %s %s is not among slot %q's writers/readers (write %v)", c.name, in.off, in.mnem, in.ops, s.Name, write)
		}
	}
	if sub < 0 {
		t.Errorf("%s: no sub $N, %%rsp", c.name)
	}
	for _, s := range f.Slots {
		if s.SPOff-s.Off != sub+8*pushes || f.SPBase != sub+8*pushes {
			t.Errorf("%s: slot %q: sp_off %d, off %d, sp_base %d; objdump: sub %d and %d pushes", c.name, s.Name, s.SPOff, s.Off, f.SPBase, sub, pushes)
		}
		if len(s.Writers)+len(s.Readers) == 0 && !(s.Note != "" && (untouched[s.Name] || s.Name == jit.SlotRetAddr && c.img.Flags&jit.FlagSkipFrame != 0)) {
			t.Errorf("%s: slot %q [rbp%+d] is touched by no instruction", c.name, s.Name, s.Off)
		}
		for _, at := range append(append([]int(nil), s.Writers...), s.Readers...) {
			if !explicit[at] && !implicit[at] {
				t.Errorf("%s: slot %q lists %#x, which objdump sees touching no frame slot", c.name, s.Name, at)
			}
		}
	}
	return n
}

func contains(l []int, v int) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}
