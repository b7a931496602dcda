package riscv64

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/jit"
)

// listingText decodes code at pc with the Disassembler, one text per instruction.
func listingText(t testing.TB, code []byte, pc uint64) []string {
	t.Helper()
	var out []string
	for off := 0; off < len(code); {
		inst, err := Disassembler{}.Decode(code[off:], pc+uint64(off))
		if err != nil || inst.Len <= 0 {
			t.Fatalf("% x at %#x: %v", code[off:], pc+uint64(off), err)
		}
		out = append(out, inst.Text)
		off += inst.Len
	}
	return out
}

// relativeText turns a listing's absolute branch target into objdumpLine's .+N and
// drops the auipc comment, to compare with objdump.
func relativeText(text string, pc uint64) string {
	text, _, _ = strings.Cut(text, " #")
	op, args, _ := strings.Cut(text, " ")
	if !branchOps[op] && op != "c.jal" {
		return text
	}
	parts := strings.Split(args, ",")
	if to, err := strconv.ParseUint(strings.TrimPrefix(parts[len(parts)-1], "0x"), 16, 64); err == nil {
		parts[len(parts)-1] = fmt.Sprintf(".%+d", int64(to-pc))
	}
	return op + " " + strings.Join(parts, ",")
}

// TestListingVsObjdump: the listing of every form, with RVC and without, reads as
// objdump -M no-aliases prints the same bytes (the exact form, c.* names included).
func TestListingVsObjdump(t *testing.T) {
	cases := formCases()
	for _, rvc := range []bool{true, false} {
		got := kernelForms(t, cases, rvc)
		var src [][]string
		for _, b := range got {
			src = append(src, insnLines(b))
		}
		want := assemble(t, src, true)
		n := 0
		for i, c := range cases {
			var rel []string
			pc := uint64(caseBase)
			for off, j := 0, 0; off < len(got[i]); j++ {
				inst, _ := Disassembler{}.Decode(got[i][off:], pc+uint64(off))
				rel = append(rel, relativeText(inst.Text, pc+uint64(off)))
				off += inst.Len
				n++
			}
			if g, w := strings.Join(rel, "; "), strings.Join(want[i].noAlias, "; "); g != w {
				t.Errorf("%s (rvc=%v): listing %q, objdump %q", c.form, rvc, g, w)
			}
		}
		t.Logf("rvc=%v: %d instructions read as objdump -M no-aliases prints them", rvc, n)
	}
}

// TestListingCallTargets: an auipc+jalr pair carries the address it reaches, the one
// emit_jump_and_link was given, so listings can name it.
func TestListingCallTargets(t *testing.T) {
	for _, off := range []int64{0x100000, -0x100002, 0x81e2a10, -0x7f2bd5b0, 0x7ffff7fe, -0x80000800, 0x800, 0xfff} {
		a := &asm{base: caseBase, rvc: true}
		// Not fixed (gen_jump_or_nops): auipc+jalr even for the short offsets.
		if err := a.jumpAndLink(RA, off, false); err != nil {
			t.Fatal(err)
		}
		text := listingText(t, a.b, caseBase)
		want := fmt.Sprintf("# %#x", caseBase+uint64(off))
		if len(text) != 2 || !strings.HasSuffix(text[0], want) || !strings.HasPrefix(text[1], "jalr ra,") {
			t.Errorf("call pc%+#x: listing %q, want auipc ... %s; jalr ra,...", off, text, want)
		}
	}
	a := &asm{base: caseBase, rvc: true}
	if err := a.call(caseBase+0x40, true); err != nil {
		t.Fatal(err)
	}
	if got := listingText(t, a.b, caseBase); len(got) != 1 || got[0] != fmt.Sprintf("jal ra,%#x", uint64(caseBase+0x40)) {
		t.Errorf("jal: %q", got)
	}
}

// TestListingSymbols: through jit.BuildListing, call targets and branch targets are
// named.
func TestListingSymbols(t *testing.T) {
	const enter, prog = 0xffffffff801f0600, 0xffffffff7800f000
	a := &asm{base: caseBase, rvc: true}
	for _, err := range []error{a.call(enter, true), a.call(prog, true)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	a.beq(A0, Zero, 8)
	a.nop()
	a.jalr(Zero, T0, 0)
	img := &jit.Image{Base: caseBase, Code: a.b}
	lines, err := jit.BuildListing(img, Disassembler{}, map[uint64]string{enter: "__bpf_prog_enter_recur", prog: "bpf_func#1"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		got = append(got, l.Asm)
	}
	want := []string{
		"auipc t1,0x81e2 # __bpf_prog_enter_recur", "jalr ra,1536(t1)",
		"jal ra,bpf_func#1",
		"beq a0,zero,image+0x14", "addi zero,zero,0", "c.jr t0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("listing:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestListingNeverUnknown: the fill (zero halfwords) and undecodable words are shown
// as such, never as "?" or an error.
func TestListingNeverUnknown(t *testing.T) {
	for _, c := range []struct {
		code []byte
		want string
	}{
		{[]byte{0, 0}, "c.unimp"},
		{[]byte{0, 0, 0, 0}, "c.unimp"},
		{[]byte{0xff, 0xff, 0xff, 0xff}, ".4byte 0xffffffff"},
		{[]byte{0x7f, 0x00, 0x00, 0x00}, ".4byte 0x7f"},
		{[]byte{0x05, 0x00}, "c.addi zero,1"},
		{[]byte{0x7d, 0x10}, "c.addi zero,-1"},
	} {
		inst, err := Disassembler{}.Decode(c.code, caseBase)
		if err != nil || inst.Text != c.want {
			t.Errorf("% x: %q, %v; want %q", c.code, inst.Text, err, c.want)
		}
	}
	if _, err := (Disassembler{}).Decode([]byte{0x13}, caseBase); err == nil {
		t.Error("a truncated instruction decoded")
	}
	for _, rvc := range []bool{true, false} {
		for i, b := range kernelForms(t, formCases(), rvc) {
			for _, l := range listingText(t, b, caseBase) {
				if strings.Contains(l, "?") || strings.HasPrefix(l, ".") {
					t.Errorf("case %d (rvc=%v): %q", i, rvc, l)
				}
			}
		}
	}
}

var allRVC = flag.Bool("listing.all-rvc", false, "TestListingAllRVC: compare the listing of every 16-bit encoding with objdump (slow: about a minute)")

// TestListingAllRVC (with -listing.all-rvc): every 16-bit encoding reads as objdump -M
// no-aliases prints it, except the HINTs and the reserved encoding riscv64asm rejects,
// which the listing prints as data and no helper emits.
func TestListingAllRVC(t *testing.T) {
	if !*allRVC {
		t.Skip("run with -listing.all-rvc")
	}
	var src [][]string
	var codes []uint16
	for v := 1; v < 1<<16; v++ {
		if v&3 != 3 {
			codes = append(codes, uint16(v))
			src = append(src, []string{fmt.Sprintf(".insn 2, %#04x", v)})
		}
	}
	want := assemble(t, src, true)
	data := map[string]int{}
	for i, v := range codes {
		inst, err := Disassembler{}.Decode([]byte{byte(v), byte(v >> 8)}, caseBase)
		if err != nil || inst.Len != 2 {
			t.Fatalf("%04x: %v, %d bytes", v, err, inst.Len)
		}
		g, w := relativeText(inst.Text, caseBase), strings.Join(want[i].noAlias, "; ")
		if g == w {
			continue
		}
		if strings.HasPrefix(g, ".2byte") {
			op, args, _ := strings.Cut(w, " ")
			// HINTs (rd zero, c.addi rd,0, the 64-bit-shift forms) and c.addi16sp
			// sp,0 (reserved).
			if strings.HasPrefix(args, "zero") || strings.HasSuffix(op, "64") || w == "c.addi16sp sp,0" ||
				op == "c.addi" && strings.HasSuffix(args, ",0") {
				data[op]++
				continue
			}
		}
		t.Errorf("%04x: listing %q, objdump %q", v, g, w)
	}
	t.Logf("%d encodings; printed as data where objdump shows a HINT or reserved form: %v", len(codes), data)
}
