package amd64_test

import (
	"encoding/binary"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/amd64"
	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// stepOrder is the order in which __arch_prepare_bpf_trampoline emits its steps; per-program
// sections take their list's place ("fentry", "fmod_ret", "fexit", "struct_ops").
var stepOrder = []string{amd64.SecCFI, jit.SecPrologue, jit.SecNrArgs, jit.SecIP, jit.SecArgSpill,
	jit.SecTrampEnter, jit.SecSession, "fentry", "struct_ops", jit.SecModRetInit, "fmod_ret",
	jit.SecCallOrig, jit.SecRetval, jit.SecIPAfterCall, amd64.SecAlign, jit.SecIsReturn, "fexit",
	jit.SecTrampExit}

// TestSectionsAreKernelSteps reads every golden and corpus image (the kernel's bytes) with
// GNU objdump and checks that each instruction sits in the section of the step that emits it
// in arch/x86/net/bpf_jit_comp.c: sections in the JIT's order; the return value stash is the
// one mov %rax,-0x8(%rbp) after the original call, followed on 6.1 and 6.12 by the 5-byte
// NOP im->ip_after_call points at, in ip_after_call; the fmod_ret zeroing (xor, mov) in
// fmod_ret setup; emit_align's NOPs in align, ending where every fmod_ret jne lands, 16-aligned;
// each program block calls its own bpf_func; the enter and exit of the image and the
// original's call in their sections.
func TestSectionsAreKernelSteps(t *testing.T) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("GNU objdump not installed")
	}
	cases := imageCases(t)
	insns := objdumpAll(t, objdump, cases)
	checked := 0
	for i, c := range cases {
		checked += checkSteps(t, c, insns[i])
	}
	t.Logf("%d images, %d instructions placed", len(cases), checked)
}

func sectionOf(img *jit.Image, off int) string {
	for _, s := range img.Sections {
		if off >= s.Start && off < s.End {
			return s.Name
		}
	}
	return ""
}

// stepRank is a section's place in stepOrder, or -1 for the epilogue (which RESTORE_REGS
// also opens before tramp_exit).
func stepRank(name string) int {
	if name == jit.SecEpilogue {
		return -1
	}
	if i := strings.LastIndexByte(name, ' '); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	for r, s := range stepOrder {
		if s == name {
			return r
		}
	}
	return -2
}

func checkSteps(t *testing.T, c frameCase, insns []odInsn) int {
	t.Helper()
	img := c.img
	bad := func(format string, args ...any) {
		t.Errorf("%s: "+format, append([]any{c.name}, args...)...)
	}
	// Sections in the JIT's order.
	last := -1
	for _, s := range img.Sections {
		switch r := stepRank(s.Name); {
		case r == -2:
			bad("section %q is no step of the x86 JIT", s.Name)
		case r >= 0 && r < last:
			bad("section %q after a later step", s.Name)
		case r >= 0:
			last = r
		}
	}
	if n := len(img.Sections); n == 0 || img.Sections[n-1].Name != jit.SecEpilogue {
		bad("does not end in the epilogue")
	}
	by := map[string][]odInsn{}
	relocAt := map[int]string{} // instruction offset -> symbol of a reloc inside it
	for k, in := range insns {
		by[sectionOf(img, in.off)] = append(by[sectionOf(img, in.off)], in)
		end := len(img.Code)
		if k+1 < len(insns) {
			end = insns[k+1].off
		}
		for _, r := range img.Relocs {
			if r.Offset > in.off && r.Offset < end {
				relocAt[in.off] = r.Symbol
			}
		}
	}
	k := btfmodel.Kernel(img.Kernel)
	callOrig := img.Flags&jit.FlagCallOrig != 0
	text := func(l []odInsn) string {
		var s []string
		for _, in := range l {
			s = append(s, in.mnem+" "+in.ops)
		}
		return strings.Join(s, "; ")
	}
	if got := text(by[jit.SecRetval]); callOrig != (got != "") || callOrig && got != "mov %rax,-0x8(%rbp)" {
		bad("retval stash %q", got)
	}
	wantNop := callOrig && !k.Has(btfmodel.CapX86ProgNop)
	if got := by[jit.SecIPAfterCall]; wantNop != (len(got) > 0) || wantNop && (len(got) != 1 || !strings.HasPrefix(got[0].mnem, "nop") ||
		endOf(img, jit.SecIPAfterCall)-got[0].off != 5 || got[0].off != endOf(img, jit.SecRetval)) {
		bad("ip_after_call %q", text(got))
	}
	modRet := false
	for _, s := range img.Sections {
		modRet = modRet || strings.HasPrefix(s.Name, "fmod_ret ")
	}
	if got := text(by[jit.SecModRetInit]); modRet != (got != "") || modRet && got != "xor %eax,%eax; mov %rax,-0x8(%rbp)" {
		bad("fmod_ret setup %q", got)
	}
	// do_fexit: where the fmod_ret programs' jne land, 16-aligned.
	doFexit := -1
	for name, l := range by {
		for _, in := range l {
			if in.mnem != "jne" || !strings.HasPrefix(name, "fmod_ret ") {
				continue
			}
			// jne rel32 (0f 85): objdump's target is into the concatenation, so from the bytes.
			code := img.Code[in.off:]
			if len(code) < 6 || code[0] != 0x0f || code[1] != 0x85 {
				bad("jne at %#x is not jne rel32", in.off)
				continue
			}
			to := in.off + 6 + int(int32(binary.LittleEndian.Uint32(code[2:])))
			if doFexit >= 0 && to != doFexit {
				bad("fmod_ret jne to %#x and %#x", to, doFexit)
			}
			doFexit = to
		}
	}
	for _, in := range by[amd64.SecAlign] {
		if !strings.HasPrefix(in.mnem, "nop") && !strings.HasPrefix(in.mnem, "xchg") {
			bad("align holds %s %s", in.mnem, in.ops)
		}
	}
	if e := endOf(img, amd64.SecAlign); e >= 0 && e != doFexit {
		bad("align ends at %#x, the fmod_ret programs jump to %#x", e, doFexit)
	}
	if doFexit >= 0 {
		at := uint64(doFexit)
		if k == btfmodel.Kernel61 {
			at += img.Base // 6.1 aligns the image address (it writes the image in place)
		}
		if at%16 != 0 {
			bad("do_fexit at %#x is not 16-aligned", doFexit)
		}
	}
	// Each program block calls its own bpf_func; the image's enter and exit calls and the
	// original's call are in their steps.
	for _, s := range img.Sections {
		i := strings.LastIndexByte(s.Name, ' ')
		n, err := strconv.Atoi(s.Name[i+1:])
		if i < 0 || err != nil || stepRank(s.Name) < 0 {
			continue
		}
		calls := 0
		for _, in := range by[s.Name] {
			if relocAt[in.off] == "bpf_func#"+strconv.Itoa(n) && strings.HasPrefix(in.mnem, "call") {
				calls++
			}
		}
		if calls != 1 {
			bad("%s calls bpf_func#%d %d times", s.Name, n, calls)
		}
	}
	for sym, sec := range map[string]string{"__bpf_tramp_enter": jit.SecTrampEnter, "__bpf_tramp_exit": jit.SecTrampExit} {
		for off, s := range relocAt {
			if s == sym && sectionOf(img, off) != sec {
				bad("call %s at %#x in %q", sym, off, sectionOf(img, off))
			}
		}
	}
	if callOrig {
		l := by[jit.SecCallOrig]
		if len(l) == 0 || !strings.HasPrefix(l[len(l)-1].mnem, "call") {
			bad("call original %q does not end in the call", text(l))
		}
	}
	return len(insns)
}

// endOf is the end of the first section named name, or -1.
func endOf(img *jit.Image, name string) int {
	for _, s := range img.Sections {
		if s.Name == name {
			return s.End
		}
	}
	return -1
}
