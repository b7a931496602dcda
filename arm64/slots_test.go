package arm64_test

import (
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/arm64"
	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/jit/jittest"
	"github.com/trampjit/trampjit/kernel"
)

// untouchedOK are the slots no instruction of the image may touch, because something else does
// (their Note says who): the helpers fill saved_run_ctx through &run_ctx, and padding is padding.
var untouchedOK = map[string]bool{jit.SlotRunCtxSaved: true, arm64.SlotPadding: true}

// checkFrame asserts Frame's invariants on one image: every frame access lands in a declared
// slot (Frame fails otherwise), slots do not overlap, every slot is touched unless untouchedOK,
// and the argument slots carry the C parameters' names. It returns the slot and access counts.
func checkFrame(t *testing.T, tr *jit.Tramp, img *jit.Image) (slots, accesses int) {
	t.Helper()
	f, err := arm64.Backend{}.Frame(tr, img)
	if err != nil {
		t.Fatal(err)
	}
	if f.Base != "x29" || f.SPBase != f.Size || f.Size%16 != 0 {
		t.Errorf("base %s, sp_base %d, size %d", f.Base, f.SPBase, f.Size)
	}
	prev := -1 << 30
	for _, s := range f.Slots {
		if s.Off < prev {
			t.Errorf("%s at x29%+d overlaps the slot below it", s.Name, s.Off)
		}
		prev = s.Off + s.Size
		if s.SPOff != s.Off+f.SPBase {
			t.Errorf("%s: sp+%d is not x29%+d", s.Name, s.SPOff, s.Off)
		}
		if len(s.Writers)+len(s.Readers) == 0 && (!untouchedOK[s.Name] || s.Note == "") {
			t.Errorf("%s (x29%+d) is declared but no instruction touches it", s.Name, s.Off)
		}
		accesses += len(s.Writers) + len(s.Readers)
	}
	for i, a := range tr.Model.Args {
		if a.Name != "" && a.Flags&btfmodel.StructArg == 0 && i == 0 {
			want := "ctx[0] " + a.Name
			found := false
			for _, s := range f.Slots {
				found = found || s.Name == want
			}
			if !found {
				t.Errorf("no slot %q", want)
			}
		}
	}
	return len(f.Slots), accesses
}

// TestFrameGolden: the frame of every curated case (testdata/golden/arm64), every 7.2 golden and
// every struct_ops golden, checked on the image and against GNU objdump's reading of it.
func TestFrameGolden(t *testing.T) {
	run := func(t *testing.T, req *jit.Request) {
		tr, img, err := jit.Generate(req)
		if err != nil {
			t.Fatal(err)
		}
		checkFrame(t, tr, img)
		checkFrameObjdump(t, tr, img)
	}
	for _, c := range jittest.Cases(btfmodel.ARM64) {
		req := c.Req
		t.Run(c.Name, func(t *testing.T) { run(t, &req) })
	}
	for _, g := range golden72 {
		req := jit.Request{Arch: btfmodel.ARM64, Kernel: btfmodel.Kernel72, Proto: g.proto, Progs: g.progs}
		t.Run("7.2-"+g.name, func(t *testing.T) { run(t, &req) })
	}
	for _, g := range goldenSO {
		req := soRequest(g.k, g.ops, g.mem)
		req.Features.IBT = g.ibt
		if g.kcfi {
			req.Features.CFI, req.Features.CFIHash = jit.CFIKCFI, 0x3b9aca07
		}
		t.Run(fmt.Sprintf("%s-%s.%s", g.k, g.ops, g.mem), func(t *testing.T) { run(t, req) })
	}
}

// TestFrameCorpus: every captured arm64 image of every profile, decoded as the kernel built it.
func TestFrameCorpus(t *testing.T) {
	for _, k := range btfmodel.Kernels {
		dir := filepath.Join("..", "testdata", "kernel", string(k)+"-arm64")
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		cases, err := kernel.ReadCorpus(dir)
		if err != nil {
			t.Fatal(err)
		}
		n, slots, accs := 0, 0, 0
		for i := range cases {
			c := &cases[i]
			if c.Image == "" || c.Request == nil {
				continue
			}
			want, err := hex.DecodeString(c.Image)
			if err != nil {
				t.Fatalf("%s: %v", c.ID, err)
			}
			tr, img, err := jit.Generate(c.Request)
			if err != nil {
				t.Errorf("%s: %v", c.ID, err)
				continue
			}
			if string(img.Code) != string(want) {
				t.Errorf("%s: the model's image is not the kernel's", c.ID)
				continue
			}
			kimg := *img
			kimg.Code = want
			t.Run(c.ID, func(t *testing.T) {
				s, a := checkFrame(t, tr, &kimg)
				slots += s
				accs += a
			})
			n++
		}
		if n == 0 {
			t.Errorf("%s: no images", dir)
		}
		t.Logf("%s: %d images, %d slots, %d frame accesses, each in its slot", k, n, slots, accs)
	}
}

// objdump operands: a base register and an optional immediate, "!" for pre-index, and a
// post-index immediate after the bracket.
var memOperand = regexp.MustCompile(`\[(sp|x29)(?:, #(-?(?:0x[0-9a-f]+|\d+)))?\](!)?(?:, #(-?(?:0x[0-9a-f]+|\d+)))?`)

// checkFrameObjdump reads the image's frame accesses from GNU objdump's disassembly, following
// sp and x29 through the prologue and the epilogue itself, and checks each one is a writer or
// reader of the slot it lands in, and that Frame names no other instruction.
func checkFrameObjdump(t *testing.T, tr *jit.Tramp, img *jit.Image) {
	t.Helper()
	tool, err := exec.LookPath("aarch64-linux-gnu-objdump")
	if err != nil {
		t.Skip("aarch64-linux-gnu-objdump not installed (binutils-aarch64-linux-gnu)")
	}
	bin := filepath.Join(t.TempDir(), "image.bin")
	if err := os.WriteFile(bin, img.Code, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "-D", "-b", "binary", "-maarch64", bin).Output()
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	f, err := arm64.Backend{}.Frame(tr, img)
	if err != nil {
		t.Fatal(err)
	}
	touched := map[int]bool{}
	has := func(s *jit.Slot, at int, store bool) bool {
		list := s.Readers
		if store {
			list = s.Writers
		}
		for _, o := range list {
			if o == at {
				return true
			}
		}
		return false
	}
	sp := 32
	if tr.StructOps != nil {
		sp = 16
	}
	fp, fpKnown := 0, false
	atoi := func(s string) int { v, _ := strconv.ParseInt(s, 0, 64); return int(v) }
	check := func(at, off, size int, store bool, what string) {
		touched[at] = true
		s := f.SlotAt(off)
		switch {
		case s == nil:
			t.Errorf("%#x %s: x29%+d is in no slot", at, what, off)
		case !has(s, at, store):
			t.Errorf("%#x %s: x29%+d is %s, which does not list it (writers %v, readers %v)", at, what, off, s.Name, s.Writers, s.Readers)
		case off+size > s.Off+s.Size:
			t.Errorf("%#x %s: %d bytes at x29%+d run past %s", at, what, size, off, s.Name)
		}
	}
	for _, l := range strings.Split(string(out), "\n") {
		fs := strings.Split(l, "\t")
		if len(fs) < 3 || !strings.HasSuffix(fs[0], ":") {
			continue
		}
		var at int
		if _, err := fmt.Sscanf(strings.TrimSpace(fs[0]), "%x:", &at); err != nil || sectionData(img, at) {
			continue
		}
		op := strings.Fields(fs[2])[0]
		args := ""
		if len(fs) > 3 {
			args = strings.Split(fs[3], "//")[0]
		}
		args = strings.TrimSpace(args)
		regs := strings.Split(args, ", ")
		base := func(r string) (int, bool) {
			switch {
			case r == "sp":
				return sp, true
			case r == "x29" && fpKnown:
				return fp, true
			}
			return 0, false
		}
		switch {
		case op == "mov" && len(regs) == 2 && (regs[0] == "sp" || regs[0] == "x29"):
			if v, ok := base(regs[1]); ok {
				if regs[0] == "sp" {
					sp = v
				} else {
					fp, fpKnown = v, true
				}
			} else if regs[0] == "x29" {
				fpKnown = false
			}
		case op == "mov" && len(regs) == 2 && regs[1] == "sp": // the address of sp+0
			if v, ok := base("sp"); ok && !addrSpecial(f, at) {
				check(at, v, 8, false, l)
			}
			touched[at] = true
		case (op == "add" || op == "sub") && len(regs) == 3 && strings.HasPrefix(regs[2], "#"):
			v, ok := base(regs[1])
			if !ok {
				break
			}
			imm := atoi(strings.TrimPrefix(regs[2], "#"))
			if op == "sub" {
				imm = -imm
			}
			switch regs[0] {
			case "sp":
				sp = v + imm
			case "x29":
				fp, fpKnown = v+imm, true
			default:
				if !addrSpecial(f, at) {
					check(at, v+imm, 8, false, l)
				}
				touched[at] = true
			}
		case strings.HasPrefix(op, "ld") || strings.HasPrefix(op, "st"):
			m := memOperand.FindStringSubmatch(args)
			if m == nil {
				if strings.Contains(args, "x29") && strings.HasPrefix(op, "ld") {
					fpKnown = false
				}
				break
			}
			b, ok := base(m[1])
			if !ok {
				t.Errorf("%#x %s: x29 is not the frame's here", at, l)
				break
			}
			addr, wb := b+atoi(m[2]), b+atoi(m[2])
			if m[4] != "" { // post-index
				addr, wb = b, b+atoi(m[4])
			}
			store := strings.HasPrefix(op, "st")
			n := 1
			if op == "stp" || op == "ldp" {
				n = 2
			}
			for k := 0; k < n; k++ {
				check(at, addr+8*k, 8, store, l)
			}
			if m[3] != "" || m[4] != "" {
				if m[1] == "sp" {
					sp = wb
				} else {
					fp = wb
				}
			}
			if !store && (strings.HasPrefix(args, "x29,") || strings.Contains(args, " x29,")) {
				fpKnown = false
			}
		}
	}
	var extra []string
	for _, s := range f.Slots {
		for _, o := range append(append([]int{}, s.Writers...), s.Readers...) {
			if !touched[o] {
				extra = append(extra, fmt.Sprintf("%#x (%s)", o, s.Name))
			}
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("Frame names instructions objdump shows touching no frame slot: %v", extra)
	}
}

// addrSpecial reports whether the address computation at is one Frame attributes by what it
// passes rather than by where it points: &run_ctx (both of its slots) or, with neither argument
// nor retval, ctx (nr_args, the only slot the program may read through it).
func addrSpecial(f *jit.Frame, at int) bool {
	for _, s := range f.Slots {
		if s.Name != jit.SlotRunCtxSaved && s.Name != jit.SlotNrArgs && s.Name != arm64.SlotFuncMeta {
			continue
		}
		for _, o := range s.Readers {
			if o == at {
				return true
			}
		}
	}
	return false
}

func sectionData(img *jit.Image, off int) bool {
	for _, s := range img.Sections {
		if s.Data && off >= s.Start && off < s.End {
			return true
		}
	}
	return false
}
