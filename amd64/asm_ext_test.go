package amd64

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// encCase is one encoder call and the AT&T text GNU as must encode to the same bytes.
type encCase struct {
	name string
	emit func(a *asm)
	att  string
}

// Operand tables: the disp8/disp32 and imm32/imm64 boundaries plus the values trampolines use.
var (
	extDisps = []int32{0, 8, -8, 0x18, -0x38, 127, -128, 128, -129, -0x88, 0x7fffffff, -0x80000000}
	extRegs  = []Reg{RAX, RCX, RDX, RBX, RSI, RDI, R8, R9}
	extImm32 = []uint32{0, 1, 2, 0x7f, 0x7fffffff, 0x80000000, 0xffffffff}
	extImm64 = []uint64{0, 1, 12, 0x7fffffff, 0x80000000, 0xffffffff, 1 << 32,
		0x1234567890, 1<<63 - 1, 1 << 63,
		u64(-1), u64(-2), u64(-0x80000000), u64(-0x80000001),
		0xffffffff81000000, 0xffffffffc0047880, 0xff11000012345678, 0xffffc90000a3d000}
	extRels = []int64{0, 5, -5, 0x1234, -0x1000, 0x7fffffff, -0x80000000}
)

func u64(v int64) uint64 { return uint64(v) }

// reg32 names the low 32 bits of r in AT&T syntax.
func reg32(r Reg) string {
	if r.ext() {
		return fmt.Sprintf("%%r%dd", int(r))
	}
	return "%e" + r.String()[1:]
}

func extCases() []encCase {
	var cs []encCase
	add := func(name string, emit func(a *asm), att string) {
		cs = append(cs, encCase{name, emit, att})
	}
	for _, r := range extRegs {
		for _, d := range extDisps {
			add(fmt.Sprintf("store %v %d", r, d), func(a *asm) { a.store(d, r) },
				fmt.Sprintf("mov %%%v,%d(%%rbp)", r, d))
			add(fmt.Sprintf("load %v %d", r, d), func(a *asm) { a.load(r, d) },
				fmt.Sprintf("mov %d(%%rbp),%%%v", d, r))
			add(fmt.Sprintf("lea %v %d", r, d), func(a *asm) { a.lea(r, d) },
				fmt.Sprintf("lea %d(%%rbp),%%%v", d, r))
			add(fmt.Sprintf("loadDisp32 %v %d", r, d), func(a *asm) { a.loadDisp32(r, d) },
				fmt.Sprintf("{disp32} mov %d(%%rbp),%%%v", d, r))
		}
		for _, s := range extRegs {
			add(fmt.Sprintf("movReg %v %v", r, s), func(a *asm) { a.movReg(r, s) },
				fmt.Sprintf("mov %%%v,%%%v", s, r))
		}
		// emit_mov_imm32 (arch/x86/net/bpf_jit_comp.c): sign-extending 7-byte form, xor for
		// zero, else mov r32.
		for _, v := range extImm32 {
			for _, sx := range []bool{false, true} {
				att := fmt.Sprintf("mov $%#x,%s", v, reg32(r))
				switch {
				case sx && int32(v) < 0:
					att = fmt.Sprintf("mov $%d,%%%v", int32(v), r)
				case v == 0:
					att = fmt.Sprintf("xor %s,%s", reg32(r), reg32(r))
				}
				add(fmt.Sprintf("movImm32 %v %#x sx=%v", r, v, sx),
					func(a *asm) { a.movImm32(sx, r, v) }, att)
			}
		}
		// emit_mov_imm64: < 2^32 as above (no sign extension), sign-extendable 7-byte on
		// 6.12 only, else movabs.
		for _, v := range extImm64 {
			for _, sx := range []bool{false, true} {
				var att string
				switch {
				case v == 0:
					att = fmt.Sprintf("xor %s,%s", reg32(r), reg32(r))
				case v>>32 == 0:
					att = fmt.Sprintf("mov $%#x,%s", v, reg32(r))
				case sx && int64(v) < 0 && int64(v) >= -1<<31:
					att = fmt.Sprintf("mov $%d,%%%v", int64(v), r)
				default:
					att = fmt.Sprintf("movabs $%#x,%%%v", v, r)
				}
				add(fmt.Sprintf("movImm64 %v %#x sx=%v", r, v, sx),
					func(a *asm) { a.movImm64(sx, r, v) }, att)
			}
		}
	}
	for _, d := range extDisps {
		add(fmt.Sprintf("storeZero32 %d", d), func(a *asm) { a.storeZero32(d) },
			fmt.Sprintf("movl $0,%d(%%rbp)", d))
	}
	for _, n := range []int32{0, 8, 0x38, 0x7f, 0x80, 0xb8, 0x1000} {
		add(fmt.Sprintf("subRSP %#x", n), func(a *asm) { a.subRSP(n) }, fmt.Sprintf("sub $%#x,%%rsp", n))
	}
	fixed := []struct {
		name string
		emit func(a *asm)
		att  string
	}{
		{"push rbp", func(a *asm) { a.push(RBP) }, "push %rbp"},
		{"push rax", func(a *asm) { a.push(RAX) }, "push %rax"},
		{"push rbx", func(a *asm) { a.push(RBX) }, "push %rbx"},
		{"pop rbx", func(a *asm) { a.pop(RBX) }, "pop %rbx"},
		{"mov rbp,rsp", (*asm).movRBPRSP, "mov %rsp,%rbp"},
		{"add rsp,8", (*asm).addRSP8, "add $8,%rsp"},
		{"test", (*asm).testRAX, "test %rax,%rax"},
		{"cmp", (*asm).cmpRetZero, "cmpq $0,-8(%rbp)"},
		{"leave", (*asm).leave, "leave"},
		{"ret", (*asm).ret, "ret"},
		{"int3", (*asm).int3, "int3"},
		{"endbr64", (*asm).endbr, "endbr64"},
		{"call *rbx", func(a *asm) { a.callReg(RBX) }, "call *%rbx"},
		{"call *rax", func(a *asm) { a.callReg(RAX) }, "call *%rax"},
	}
	for _, f := range fixed {
		add(f.name, f.emit, f.att)
	}
	// Branches: the text's `.` is the instruction's own address, like pc here.
	const pc uint64 = 0xffffffffc0047880
	for _, r := range extRels {
		for _, op := range []struct {
			b    byte
			name string
		}{{opCall, "call"}, {opJmp, "{disp32} jmp"}} {
			add(fmt.Sprintf("%s rel %d", op.name, r), func(a *asm) {
				if err := a.rel32(op.b, pc, pc+5+uint64(r)); err != nil {
					panic(err)
				}
			}, fmt.Sprintf("%s .%+d", op.name, r+5))
		}
		add(fmt.Sprintf("jne rel %d", r), func(a *asm) {
			a.nops(6, 8)
			a.patchJNE(0, int(r)+6)
		}, fmt.Sprintf("{disp32} jne .%+d", r+6))
	}
	for _, r := range []int{0, 9, 13, 127, -128, -2} {
		add(fmt.Sprintf("je rel %d", r), func(a *asm) {
			a.nops(2, 8)
			if err := a.patchJE(0, r+2); err != nil {
				panic(err)
			}
		}, fmt.Sprintf("je .%+d", r+2))
	}
	// The x86_nops table (arch/x86/kernel/alternative.c), and emit_nops splitting
	// largest-first under ASM_NOP_MAX.
	nopATT := [12]string{"", "nop", "xchg %ax,%ax", "nopl (%rax)", "{disp8} nopl 0(%rax)",
		"{disp8} nopl 0(%rax,%rax,1)", "{disp8} nopw 0(%rax,%rax,1)", "{disp32} nopl 0(%rax)",
		"{disp32} nopl 0(%rax,%rax,1)", "{disp32} nopl %cs:0(%rax,%rax,1)",
		".byte 0x66; {disp32} nopl %cs:0(%rax,%rax,1)",
		".byte 0x66,0x66; {disp32} nopl %cs:0(%rax,%rax,1)"}
	for _, max := range []int{8, 11} {
		for n := 1; n <= 24; n++ {
			var parts []string
			for left := n; left > 0; left -= min(left, max) {
				parts = append(parts, nopATT[min(left, max)])
			}
			add(fmt.Sprintf("nops %d max %d", n, max), func(a *asm) { a.nops(n, max) },
				strings.Join(parts, "; "))
		}
	}
	for _, v := range []uint64{pc + 9, pc + 0x1234, 0x1f4c0, pc - 0x7ffffff0} {
		add(fmt.Sprintf("callDepth %#x", v), func(a *asm) { a.callDepth(pc, v) },
			fmt.Sprintf("sarq $5,%%gs:%d(%%rip)", int32(v-(pc+9))))
	}
	return cs
}

// TestEncoderVsGNUAs assembles every case with GNU as, one section per case, and compares.
func TestEncoderVsGNUAs(t *testing.T) {
	asPath, err := exec.LookPath("as")
	if err != nil {
		t.Skip("GNU as not found (install binutils); encoder not checked against it")
	}
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("objdump not found (install binutils); encoder not checked against GNU as")
	}
	cs := extCases()
	var src strings.Builder
	for i, c := range cs {
		fmt.Fprintf(&src, ".section .text.c%d,\"ax\"\n%s\n", i, c.att)
	}
	dir := t.TempDir()
	s, o := filepath.Join(dir, "cases.s"), filepath.Join(dir, "cases.o")
	if err := os.WriteFile(s, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(asPath, "--64", "-o", o, s).CombinedOutput(); err != nil {
		t.Fatalf("as: %v\n%s", err, out)
	}
	out, err := exec.Command(objdump, "-s", o).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	want := parseObjdumpSections(t, string(out))
	ok := 0
	for i, c := range cs {
		var a asm
		c.emit(&a)
		w := want[fmt.Sprintf(".text.c%d", i)]
		if !bytes.Equal(a.b, w) {
			t.Errorf("%s: got % x, as %q gives % x", c.name, a.b, c.att, w)
			continue
		}
		ok++
	}
	t.Logf("%d/%d encoder cases match GNU as", ok, len(cs))
}

// parseObjdumpSections reads `objdump -s` output into section name -> contents.
func parseObjdumpSections(t *testing.T, out string) map[string][]byte {
	m := map[string][]byte{}
	var cur string
	for _, line := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(line, "Contents of section "); ok {
			cur = strings.TrimSuffix(name, ":")
			continue
		}
		if cur == "" || !strings.HasPrefix(line, " ") {
			continue
		}
		// " ADDR xxxxxxxx xxxxxxxx xxxxxxxx xxxxxxxx  ascii": the hex area is 35 columns.
		rest := strings.TrimLeft(line, " ")
		sp := strings.IndexByte(rest, ' ')
		area := rest[sp+1:]
		if len(area) > 35 {
			area = area[:35]
		}
		b, err := hex.DecodeString(strings.ReplaceAll(area, " ", ""))
		if err != nil {
			t.Fatalf("objdump line %q: %v", line, err)
		}
		m[cur] = append(m[cur], b...)
	}
	return m
}
