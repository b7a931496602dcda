package riscv64

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/jit/jittest"
)

// gnuInsn is one instruction as GNU objdump decodes it (-M no-aliases).
type gnuInsn struct {
	off  int
	op   string
	args []string
}

// gnuDecode decodes code at base with riscv64-linux-gnu-objdump, the independent decoder.
func gnuDecode(t *testing.T, code []byte, base uint64) []gnuInsn {
	t.Helper()
	tool, err := exec.LookPath("riscv64-linux-gnu-objdump")
	if err != nil {
		t.Skip("riscv64-linux-gnu-objdump not installed (binutils-riscv64-linux-gnu)")
	}
	bin := filepath.Join(t.TempDir(), "image.bin")
	if err := os.WriteFile(bin, code, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "-D", "-b", "binary", "-m", "riscv:rv64", "-M", "no-aliases",
		fmt.Sprintf("--adjust-vma=%#x", base), bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var insns []gnuInsn
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) < 3 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		a, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(f[0], ":")), 16, 64)
		if err != nil {
			continue
		}
		in := gnuInsn{off: int(a - base), op: f[2]}
		if len(f) > 3 {
			in.args = strings.Split(strings.Fields(f[3])[0], ",")
		}
		insns = append(insns, in)
	}
	return insns
}

func gnuNum(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		u, err2 := strconv.ParseUint(s, 0, 64)
		if err2 != nil {
			t.Fatalf("number %q: %v", s, err)
		}
		v = int64(u)
	}
	return v
}

// gnuImm runs the emit_imm sequence GNU objdump decoded from at, returning the value it
// leaves in its register and the offset after it.
func gnuImm(t *testing.T, ins []gnuInsn, i int) (uint64, int) {
	rd := ins[i].args[0]
	var v int64
	for ; i < len(ins) && len(ins[i].args) > 0 && ins[i].args[0] == rd; i++ {
		a := ins[i].args
		switch ins[i].op {
		case "lui", "c.lui":
			v = int64(int32(uint32(gnuNum(t, a[1])) << 12))
		case "addiw", "c.addiw":
			v = int64(int32(v + gnuNum(t, a[len(a)-1])))
		case "addi", "c.addi":
			if ins[i].op == "addi" && a[1] == "zero" {
				v = gnuNum(t, a[2])
			} else {
				v += gnuNum(t, a[len(a)-1])
			}
		case "c.li":
			v = gnuNum(t, a[1])
		case "slli", "c.slli":
			v <<= gnuNum(t, a[len(a)-1])
		default:
			return uint64(v), i
		}
	}
	return uint64(v), i
}

// symAddr is the address a relocation's symbol stands for.
func symAddr(tr *jit.Tramp, sym string) (uint64, bool) {
	switch sym {
	case "im":
		return tr.IM, true
	case "func":
		return tr.Func, true
	}
	if a, ok := tr.Helpers[sym]; ok {
		return a, true
	}
	for _, list := range [][]jit.ProgRef{tr.Fentry, tr.ModRet, tr.Fexit} {
		for _, p := range list {
			switch sym {
			case progSym(p.Index, 0):
				return p.Addr, true
			case progSym(p.Index, 1):
				return p.BPFFunc, true
			}
		}
	}
	return 0, false
}

// TestObjdumpOracle decodes every curated image with GNU objdump and checks what the bytes
// do against what the request asks for: every instruction is one binutils knows, every
// address load (emit_imm) computes its symbol's address, every call reaches its target
// (the traced function past its 8-byte patch site), each beq lands on the exit call's
// prog load, and each fmod_ret bne lands past the call-original block.
func TestObjdumpOracle(t *testing.T) {
	cases := append(jittest.Cases(btfmodel.RISCV64), Cases72()...)
	if len(cases) < 30 {
		t.Fatalf("only %d curated cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			m, err := c.Req.Model()
			if err != nil {
				t.Fatal(err)
			}
			tr, err := jit.Resolve(&c.Req, m)
			if err != nil {
				t.Fatal(err)
			}
			img, err := Backend{}.Generate(tr)
			if err != nil {
				t.Fatal(err)
			}
			ins := gnuDecode(t, img.Code, img.Base)
			at := map[int]int{}
			for i, in := range ins {
				at[in.off] = i
				if strings.HasPrefix(in.op, ".") || in.op == "unknown" {
					t.Fatalf("+%#x: objdump cannot decode: %s %v", in.off, in.op, in.args)
				}
			}
			if last := ins[len(ins)-1]; last.op != "c.jr" {
				t.Errorf("last instruction %s %v, want c.jr", last.op, last.args)
			}
			relocAt := map[int]string{}
			for _, r := range img.Relocs {
				relocAt[r.Offset] = r.Symbol
				i, ok := at[r.Offset]
				if !ok {
					t.Fatalf("reloc %s at +%#x is not an instruction boundary", r.Symbol, r.Offset)
				}
				want, ok := symAddr(tr, r.Symbol)
				if !ok {
					t.Fatalf("reloc symbol %q unknown", r.Symbol)
				}
				in := ins[i]
				switch r.Kind {
				case jit.RelocImm64:
					if got, _ := gnuImm(t, ins, i); got != want {
						t.Errorf("+%#x: %s loads %#x, want %#x", r.Offset, r.Symbol, got, want)
					}
				case jit.RelocBranch:
					if r.Symbol == "func" {
						want += 8 // orig_call: past the patch site
					}
					var got uint64
					switch {
					case in.op == "jal" && in.args[0] == "ra":
						got = uint64(gnuNum(t, in.args[1]))
					case in.op == "auipc" && in.args[0] == "t1" && i+1 < len(ins) && ins[i+1].op == "jalr":
						j := ins[i+1].args // ra, lo(t1)
						lo := gnuNum(t, strings.TrimSuffix(j[1], "(t1)"))
						got = img.Base + uint64(r.Offset) + uint64(gnuNum(t, in.args[1])<<12) + uint64(lo)
						if j[0] != "ra" || !strings.HasSuffix(j[1], "(t1)") {
							t.Errorf("+%#x: jalr %v, want ra,lo(t1)", r.Offset+4, j)
						}
					default:
						t.Fatalf("+%#x: call to %s is %s %v", r.Offset, r.Symbol, in.op, in.args)
					}
					if got != want {
						t.Errorf("+%#x: call to %s reaches %#x, want %#x", r.Offset, r.Symbol, got, want)
					}
				}
			}
			secEnd := map[int]bool{}
			for _, s := range img.Sections {
				secEnd[s.End] = true
			}
			for _, in := range ins {
				if in.op != "beq" && in.op != "bne" {
					continue
				}
				to := int(uint64(gnuNum(t, in.args[2])) - img.Base)
				if _, ok := at[to]; !ok {
					t.Errorf("+%#x: %s lands inside an instruction (+%#x)", in.off, in.op, to)
				}
				switch {
				case in.op == "beq" && (in.args[0] != "a0" || !strings.HasPrefix(relocAt[to], "prog#")):
					t.Errorf("+%#x: beq %v lands on %q, want the exit call's prog load", in.off, in.args, relocAt[to])
				case in.op == "bne" && (in.args[0] != "t1" || !secEnd[to] || to <= sectionEnd(img, jit.SecCallOrig)):
					t.Errorf("+%#x: bne %v lands at +%#x, want past the call-original block", in.off, in.args, to)
				}
			}
		})
	}
}

func sectionEnd(img *jit.Image, name string) int {
	for _, s := range img.Sections {
		if s.Name == name {
			return s.End
		}
	}
	return -1
}

// TestSizingPass: the allocation (arch_bpf_trampoline_size) is never smaller than the code,
// is even, and exceeds it exactly by what the sizing pass pessimises: both im loads as
// RV_MAX_COUNT_IMM (26 bytes with RVC) and every call that became a 4-byte jal.
func TestSizingPass(t *testing.T) {
	for _, c := range append(jittest.Cases(btfmodel.RISCV64), Cases72()...) {
		m, err := c.Req.Model()
		if err != nil {
			t.Fatal(err)
		}
		tr, err := jit.Resolve(&c.Req, m)
		if err != nil {
			t.Fatal(err)
		}
		img, err := Backend{}.Generate(tr)
		if err != nil {
			t.Fatal(err)
		}
		size, err := Backend{}.Size(tr)
		if err != nil {
			t.Fatal(err)
		}
		var im, jals int
		for _, in := range gnuDecode(t, img.Code, img.Base) {
			if in.op == "jal" {
				jals++
			}
		}
		if tr.Flags&jit.FlagCallOrig != 0 {
			var a asm
			a.rvc = true
			a.imm(A0, int64(tr.IM))
			im = 2 * (26 - a.off())
		}
		if size%2 != 0 || size-len(img.Code) != im+4*jals {
			t.Errorf("%s: size %d, code %d: want code + %d (im loads) + 4×%d (jal)", c.Name, size, len(img.Code), im, jals)
		}
	}
}

// TestRefusals: the flags the riscv64 JIT refuses, and fsession before 7.x.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		k     btfmodel.Kernel
		progs []jit.Prog
		flags jit.Flags
		errno jit.Errno
		says  string
	}{
		{btfmodel.Kernel72, []jit.Prog{{Kind: jit.Fexit}}, jit.FlagCallOrig | jit.FlagSkipFrame | jit.FlagOrigStack, jit.ENOTSUPP, "ORIG_STACK"},
		{btfmodel.Kernel612, []jit.Prog{{Kind: jit.Fexit}}, jit.FlagCallOrig | jit.FlagShareIPModify, jit.ENOTSUPP, "SHARE_IPMODIFY"},
		{btfmodel.Kernel612, []jit.Prog{{Kind: jit.Fsession}}, 0, jit.ENOTSUPP, "fsession"},
	} {
		req := jit.Request{Arch: btfmodel.RISCV64, Kernel: tc.k, Proto: "int f(int a, u64 b)", Progs: tc.progs}
		if tc.flags != 0 {
			f := jit.Addr(tc.flags)
			req.Flags = &f
		}
		m, err := req.Model()
		if err != nil {
			t.Fatal(err)
		}
		tr, err := jit.Resolve(&req, m)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Backend{}.Generate(tr)
		if !errors.Is(err, tc.errno) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s %v flags %s: %v, want %s naming %s", tc.k, tc.progs, tc.flags, err, tc.errno.Name(), tc.says)
		}
	}
}

// TestStructOpsReturn: a struct_ops trampoline (BPF_TRAMP_F_INDIRECT) has one frame, saved
// ra, no __bpf_tramp_enter, and derives a0 from a5 (BPF R0) by the member's return type
// (sign_extend, 6.12.53+): as GNU objdump decodes the epilogue.
func TestStructOpsReturn(t *testing.T) {
	for _, tc := range []struct {
		proto string
		zbb   bool
		want  []string // the instructions between ld a5 and ld s1
	}{
		{"u32 f(struct sock *sk)", false, []string{"addiw a0,a5,0"}},
		{"long f(struct sock *sk)", false, []string{"c.mv a0,a5"}},
		{"u16 f(struct sock *sk)", false, []string{"c.mv a0,a5"}},
		{"s8 f(struct sock *sk)", false, []string{"slli a0,a5,0x38", "c.srai a0,0x38"}},
		{"s16 f(struct sock *sk)", true, []string{".4byte " + gnuWord(t, "sext.h a0,a5")}},
	} {
		flags := jit.Addr(jit.FlagIndirect | jit.FlagRetFentryRet)
		req := jit.Request{Arch: btfmodel.RISCV64, Kernel: btfmodel.Kernel72, Proto: tc.proto, Progs: []jit.Prog{{Kind: jit.Fentry}},
			Flags: &flags, Features: jit.Features{Zbb: tc.zbb}}
		m, err := req.Model()
		if err != nil {
			t.Fatal(err)
		}
		tr, err := jit.Resolve(&req, m)
		if err != nil {
			t.Fatal(err)
		}
		img, err := Backend{}.Generate(tr)
		if err != nil {
			t.Fatal(err)
		}
		ins := gnuDecode(t, img.Code, img.Base)
		text := func(in gnuInsn) string { return in.op + " " + strings.Join(in.args, ",") }
		if first, last := text(ins[0]), text(ins[len(ins)-1]); !strings.HasPrefix(first, "c.addi16sp sp,-") || last != "c.jr ra" {
			t.Errorf("%s: starts %q, ends %q", tc.proto, first, last)
		}
		var got []string
		in := false
		for _, x := range ins {
			switch s := text(x); {
			case strings.HasPrefix(s, "ld a5,"):
				in = true
			case strings.HasPrefix(s, "ld s1,"):
				in = false
			case in:
				got = append(got, s)
			}
		}
		if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
			t.Errorf("%s (zbb %v): a0 from a5 by %q, want %q", tc.proto, tc.zbb, got, tc.want)
		}
		for _, r := range img.Relocs {
			if r.Symbol == jit.HelperTrampEnter || r.Symbol == "func" {
				t.Errorf("%s: calls %s", tc.proto, r.Symbol)
			}
		}
	}
}

// gnuWord assembles one 32-bit instruction with GNU as (Zbb on), as objdump prints a word it
// does not decode without the ELF's ISA attributes.
func gnuWord(t *testing.T, insn string) string {
	t.Helper()
	as, err := exec.LookPath("riscv64-linux-gnu-as")
	if err != nil {
		t.Skip("riscv64-linux-gnu-as not installed (binutils-riscv64-linux-gnu)")
	}
	dir := t.TempDir()
	src, obj, bin := filepath.Join(dir, "w.s"), filepath.Join(dir, "w.o"), filepath.Join(dir, "w.bin")
	if err := os.WriteFile(src, []byte(insn+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(as, "-march=rv64gc_zbb", "-o", obj, src).CombinedOutput(); err != nil {
		t.Fatalf("as %q: %v %s", insn, err, out)
	}
	if out, err := exec.Command("riscv64-linux-gnu-objcopy", "-O", "binary", "-j", ".text", obj, bin).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v %s", err, out)
	}
	b, err := os.ReadFile(bin)
	if err != nil || len(b) != 4 {
		t.Fatalf("%q assembled to % x (%v)", insn, b, err)
	}
	return fmt.Sprintf("%#x", uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16|uint32(b[3])<<24)
}
