package kernel

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

func findCase(t *testing.T, cases []CorpusCase, id string) *CorpusCase {
	t.Helper()
	for i := range cases {
		if cases[i].ID == id {
			return &cases[i]
		}
	}
	t.Fatalf("no case %s", id)
	return nil
}

// TestLabelSectionsSameBytes: where the model's image is the kernel's (every committed case
// is), each instruction takes the section the model's listing gives its offset.
func TestLabelSectionsSameBytes(t *testing.T) {
	for _, name := range []string{"6.12-amd64", "7.2-arm64"} {
		n := 0
		for _, c := range readCommitted(t, name) {
			if c.Image == "" {
				continue
			}
			l, err := LabelSections(&c, "")
			if err != nil {
				t.Fatal(err)
			}
			_, img, err := jit.Generate(c.Request)
			if err != nil {
				t.Fatalf("%s: %v", c.ID, err)
			}
			for _, in := range l.Insns {
				if want := sectionAtOffset(img, in.Offset); in.Section != want {
					t.Errorf("%s %s +%#x %s: section %q, the model's listing says %q", name, c.ID, in.Offset, in.Asm, in.Section, want)
				}
			}
			n++
		}
		if n < 100 {
			t.Errorf("%s: %d images labelled", name, n)
		}
	}
}

// TestLabelSectionsOtherKernel labels 7.2 kernel images with the 6.12 model. From the two
// gen listings of bpf_fentry_test1-fentry-fexit: 7.2's NOP5 before each program block has no
// counterpart in 6.12's image, so it takes the section before it (tramp_enter for the one at
// 0x28), while the one at 0x7a aligns with 6.12's ip_after_call NOP5 (ip_after_call).
func TestLabelSectionsOtherKernel(t *testing.T) {
	c := findCase(t, readCommitted(t, "7.2-amd64"), "bpf_fentry_test1-fentry-fexit")
	l, err := LabelSections(c, btfmodel.Kernel612)
	if err != nil {
		t.Fatal(err)
	}
	if l.Profile != btfmodel.Kernel612 || l.Note != "" {
		t.Errorf("profile %s, note %q", l.Profile, l.Note)
	}
	want := map[int]string{0x0: "prologue", 0x23: "tramp_enter", 0x28: "tramp_enter", 0x2d: "fentry 1", 0x71: "call original",
		0x76: "retval stash", 0x7a: "ip_after_call", 0x7f: "fexit 2", 0xbf: "tramp_exit", 0xd7: "epilogue"}
	for _, in := range l.Insns {
		if s, ok := want[in.Offset]; ok {
			if in.Section != s {
				t.Errorf("+%#x %s: %q, want %q", in.Offset, in.Asm, in.Section, s)
			}
			delete(want, in.Offset)
		}
	}
	if len(want) > 0 {
		t.Errorf("no instruction at %v", want)
	}
}

// TestLabelSectionsModelRefuses: the 6.12 model has no fsession programs (BPF_TRACE_FSESSION
// arrived in 7.0), so a 7.2 fsession image has no sections.
func TestLabelSectionsModelRefuses(t *testing.T) {
	c := findCase(t, readCommitted(t, "7.2-amd64"), "bpf_fentry_test1-fsession")
	l, err := LabelSections(c, btfmodel.Kernel612)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(l.Note, "6.12 model refuses") || len(l.Insns) == 0 {
		t.Fatalf("note %q, %d instructions", l.Note, len(l.Insns))
	}
	for _, in := range l.Insns {
		if in.Section != NoSection {
			t.Fatalf("+%#x: section %q, want %q", in.Offset, in.Section, NoSection)
		}
	}
}

// TestJoinMovRuns: 6.12-arm64's listing loads im with "mov x0, #0xfff0000000000000; movk x0,
// #0x374, lsl #16; movk x0, #0x1c00" at 0x28: one instruction of the value the request's
// addrs.im gives.
func TestJoinMovRuns(t *testing.T) {
	c := findCase(t, readCommitted(t, "6.12-arm64"), "bpf_fentry_test1-fentry-fexit")
	if uint64(c.Request.Addrs.IM) != 0xfff0000003741c00 {
		t.Fatalf("addrs.im %#x: not the listing's", uint64(c.Request.Addrs.IM))
	}
	l, err := LabelSections(c, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range l.Insns {
		if in.Offset == 0x28 {
			if in.Asm != "mov x0, =im  (3 words)" || in.Bytes != "00feffd2806ea0f2008083f2" || in.Section != "tramp_enter" {
				t.Errorf("%s in %s", in.String(), in.Section)
			}
			return
		}
	}
	t.Error("no instruction at 0x28")
}

func TestLCS(t *testing.T) {
	mk := func(s string) []Insn {
		out := make([]Insn, len(s))
		for i := range s {
			out[i].key = s[i : i+1]
		}
		return out
	}
	// The textbook pair (Cormen et al., "Longest common subsequence"): length 4.
	a, b := mk("ABCBDAB"), mk("BDCABA")
	pairs, ok := align(a, b)
	matched := 0
	ia, ib := -1, -1
	for _, p := range pairs {
		if p.a >= 0 && p.b >= 0 {
			if a[p.a].key != b[p.b].key {
				t.Errorf("pair %v joins %s and %s", p, a[p.a].key, b[p.b].key)
			}
			matched++
		}
		if (p.a >= 0 && p.a != ia+1) || (p.b >= 0 && p.b != ib+1) {
			t.Errorf("pair %v out of order", p)
		}
		if p.a >= 0 {
			ia = p.a
		}
		if p.b >= 0 {
			ib = p.b
		}
	}
	if !ok || matched != 4 || ia != len(a)-1 || ib != len(b)-1 {
		t.Errorf("ok %v, %d matched, last %d %d", ok, matched, ia, ib)
	}
	// Beyond maxAlign instructions the alignment gives up: pairs in order, ok false.
	long := func(tag string) []Insn {
		out := make([]Insn, maxAlign+10)
		for i := range out {
			out[i].key = fmt.Sprint(tag, i)
		}
		return out
	}
	if pairs, ok := align(long("a"), long("b")); ok || len(pairs) != maxAlign+10 {
		t.Errorf("%d instructions each: ok %v, %d pairs", maxAlign+10, ok, len(pairs))
	}
}

// TestSameKeyMatchesSameModuloAddresses: the keys the alignment compares agree with
// SameModuloAddresses. Each committed image is compared with the model's image of its
// request with every address moved by 0x1000 (the same code at other addresses).
func TestSameKeyMatchesSameModuloAddresses(t *testing.T) {
	loads := 0
	for _, name := range []string{"6.12-amd64", "7.2-amd64", "6.12-arm64", "7.2-arm64", "6.12-riscv64", "7.2-riscv64"} {
		n := 0
		for _, c := range readCommitted(t, name) {
			if c.Image == "" || c.Request.Addrs == nil {
				continue
			}
			req := *c.Request
			ad := *req.Addrs
			mv := func(a jit.Addr) jit.Addr {
				if a == 0 {
					return 0
				}
				return a + 0x1000
			}
			ad.Image, ad.Func, ad.IP, ad.IM = mv(ad.Image), mv(ad.Func), mv(ad.IP), mv(ad.IM)
			ad.Progs = nil
			for _, p := range req.Addrs.Progs {
				ad.Progs = append(ad.Progs, jit.ProgAddrs{Prog: mv(p.Prog), BPFFunc: mv(p.BPFFunc)})
			}
			ad.Helpers = map[string]jit.Addr{}
			for h, a := range req.Addrs.Helpers {
				ad.Helpers[h] = mv(a)
			}
			req.Addrs = &ad
			_, img, err := jit.Generate(&req)
			if err != nil {
				t.Fatalf("%s %s: %v", name, c.ID, err)
			}
			x, _ := hex.DecodeString(c.Image)
			arch := req.Arch
			ix, _ := decodeImage(arch, x, 0, nil)
			iy, _ := decodeImage(arch, img.Code, 0, nil)
			keys := len(ix) == len(iy)
			for k := 0; keys && k < len(ix); k++ {
				keys = ix[k].key == iy[k].key
			}
			serr := SameModuloAddresses(string(arch), img.Code, x)
			switch {
			case serr == nil && !keys && arch == "riscv64":
				// riscv64: an address load of another length or other forms (emit_imm skips
				// what is zero, c.addiw fits a small part), which SameModuloAddresses compares
				// as one unit, branches by the unit they reach; the alignment's per-instruction
				// keys see an instruction more or less, and branch offsets moved.
				loads++
			case serr == nil && !keys:
				t.Errorf("%s %s: SameModuloAddresses accepts, the keys differ", name, c.ID)
			case serr != nil && keys && (arch != "arm64" || len(x) == len(img.Code)):
				t.Errorf("%s %s: equal keys, SameModuloAddresses: %v", name, c.ID, serr)
			case serr != nil && keys:
				// arm64: an address load one word longer or shorter (a zero 16-bit word
				// moved), which sameLoads accepts.
				if !sameLoads(arch, x, img.Code) {
					t.Errorf("%s %s: a load of another length, not accepted by sameLoads", name, c.ID)
				}
				loads++
			case serr != nil:
				t.Errorf("%s %s: %v", name, c.ID, serr)
			}
			if serr == nil {
				n++
			}
		}
		if n < 100 {
			t.Errorf("%s: %d images the same modulo addresses", name, n)
		}
	}
	if loads == 0 {
		t.Error("no arm64 image's address loads changed length: the sameLoads case is not exercised")
	}
}
