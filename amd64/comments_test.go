package amd64_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/amd64"
	"github.com/trampjit/trampjit/jit"
)

// TestCommentsOverImages reads every golden and corpus image with objdump and checks the
// listing's operand comments (Backend.Comments) where the calling convention says what an
// operand is: the instruction before each call of a program is lea of ctx[0] into rdi, the
// ones before the enter and exit helpers lea of run_ctx into rsi and rdx, the one after the
// enter helper keeps rax in rbx, im is loaded into rdi, the IP into rax; each is commented,
// and no comment sits elsewhere but on the ip_after_call NOP and an ORIG_STACK load or
// SKIP_FRAME's add.
func TestCommentsOverImages(t *testing.T) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("GNU objdump not installed")
	}
	cases := imageCases(t)
	insns := objdumpAll(t, objdump, cases)
	checked := 0
	for i, c := range cases {
		f, err := amd64.Backend{}.Frame(c.tr, c.img)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		com := amd64.Backend{}.Comments(c.tr, c.img)
		checked += checkComments(t, c, f, com, insns[i])
	}
	t.Logf("%d images, %d comments checked", len(cases), checked)
}

func checkComments(t *testing.T, c frameCase, f *jit.Frame, com map[int]string, insns []odInsn) int {
	t.Helper()
	img := c.img
	sym := map[int]string{}
	for k, in := range insns {
		end := len(img.Code)
		if k+1 < len(insns) {
			end = insns[k+1].off
		}
		for _, r := range img.Relocs {
			if r.Offset > in.off && r.Offset < end {
				sym[in.off] = r.Symbol
			}
		}
	}
	ctx0 := 0
	var runCtx int
	for _, s := range f.Slots {
		switch {
		case strings.HasPrefix(s.Name, "ctx[0]"):
			ctx0 = s.Off
		case s.Name == jit.SlotNrArgs || s.Name == amd64.SlotFuncMeta:
			if ctx0 == 0 {
				ctx0 = s.Off + 8 // no argument slot: ctx is just above ctx[-1]
			}
		case s.Name == jit.SlotRunCtxCook:
			runCtx = s.Off
		}
	}
	want := map[int]string{} // offset -> what the comment must say
	expect := func(in odInsn, asm, says string) {
		if got := in.mnem + " " + in.ops; got != asm {
			t.Errorf("%s: %#x: %s, want %s", c.name, in.off, got, asm)
		}
		want[in.off] = says
	}
	disp := func(d int) string {
		if d == 0 {
			return "0x0(%rbp)" // the JIT's disp8 form
		}
		if d < 0 {
			return "-0x" + strconv.FormatInt(int64(-d), 16) + "(%rbp)"
		}
		return "0x" + strconv.FormatInt(int64(d), 16) + "(%rbp)"
	}
	// prev is the instruction before k, past call-depth accounting (sarq ...%gs:).
	prev := func(k int) odInsn {
		for k--; k > 0 && strings.Contains(insns[k].ops, "%gs:"); k-- {
		}
		return insns[k]
	}
	for k, in := range insns {
		s := sym[in.off]
		switch {
		case strings.HasPrefix(s, "bpf_func#") && k > 0:
			expect(prev(k), "lea "+disp(ctx0)+",%rdi", "rdi = ctx")
		case strings.HasPrefix(s, "__bpf_prog_enter") && k > 0:
			expect(prev(k), "lea "+disp(runCtx)+",%rsi", "&run_ctx")
			if k+1 < len(insns) {
				expect(insns[k+1], "mov %rax,%rbx", "start time")
			}
		case strings.HasPrefix(s, "__bpf_prog_exit") && k > 0:
			expect(prev(k), "lea "+disp(runCtx)+",%rdx", "&run_ctx")
		case s == "im":
			if !strings.HasSuffix(in.ops, ",%rdi") {
				t.Errorf("%s: %#x: im loaded by %s %s", c.name, in.off, in.mnem, in.ops)
			}
			want[in.off] = "rdi = im"
		case s == "func" && sectionOf(img, in.off) == jit.SecIP:
			if !strings.HasSuffix(in.ops, ",%rax") {
				t.Errorf("%s: %#x: ip loaded by %s %s", c.name, in.off, in.mnem, in.ops)
			}
			want[in.off] = "ip = func"
		case in.mnem == "mov" && in.ops == "0x8(%rbp),%rbx":
			want[in.off] = "return address the patched call pushed"
		case strings.HasPrefix(in.mnem, "add") && in.ops == "$0x8,%rsp":
			want[in.off] = "SKIP_FRAME"
		case sectionOf(img, in.off) == jit.SecIPAfterCall:
			want[in.off] = "im->ip_after_call"
		}
	}
	for off, says := range want {
		if !strings.Contains(com[off], says) {
			t.Errorf("%s: %#x: comment %q, want one saying %q", c.name, off, com[off], says)
		}
	}
	for off, got := range com {
		if _, ok := want[off]; !ok {
			t.Errorf("%s: %#x: comment %q where none is expected", c.name, off, got)
		}
	}
	return len(want)
}
