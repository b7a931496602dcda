package riscv64

import (
	"regexp"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/jit/jittest"
)

// stepOrder is the order of __arch_prepare_bpf_trampoline's steps; program blocks ("fentry
// N", "fmod_ret N", "fexit N", "struct_ops N") take the place of their list.
var stepOrder = []string{SecCFI, jit.SecPrologue, jit.SecIP, jit.SecNrArgs, jit.SecArgSpill, jit.SecSession, jit.SecTrampEnter,
	"fentry", "struct_ops", jit.SecModRetInit, "fmod_ret", jit.SecCallOrig, jit.SecRetval, jit.SecIPAfterCall, jit.SecIsReturn,
	"fexit", jit.SecTrampExit, jit.SecEpilogue}

var progSec = regexp.MustCompile(`^(fentry|fmod_ret|fexit|struct_ops) (\d+)$`)

// TestSections reads each golden listing the way a reviewer holds it against the kernel's
// source: the sections come in the order of the steps, each program's call of its bpf_func
// is in that program's block, the enter and exit calls of the image in tramp_enter and
// tramp_exit, s1's save in the prologue and its reload in the epilogue, the NOPs after the
// return value's stash in ip_after_call, and the zeroing before the fmod_ret programs in
// its own section.
func TestSections(t *testing.T) {
	cases := append(append(jittest.Cases(btfmodel.RISCV64), Cases72()...), StructOpsCases()...)
	for _, c := range cases {
		tr, img := generateCase(t, &c.Req)
		lines, err := jit.Listing(tr, img, Disassembler{})
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		// 7.x: no ip_after_call NOPs; the NOP after the stash opens the next program block
		ipAfterCall := !mustProfile(t, tr.Kernel).ProgSkipNop
		step, prev := 0, ""
		for i, ln := range lines {
			sec, asm := ln.Section, ln.Asm
			kind := sec
			if m := progSec.FindStringSubmatch(sec); m != nil {
				kind = m[1]
				if strings.Contains(asm, "bpf_func#") && !strings.HasSuffix(asm, "bpf_func#"+m[2]) {
					t.Errorf("%s +%#x: %q in %q", c.Name, ln.Offset, asm, sec)
				}
			} else if strings.Contains(asm, "bpf_func#") {
				t.Errorf("%s +%#x: %q outside a program block (%q)", c.Name, ln.Offset, asm, sec)
			}
			if sec != prev {
				k := step
				for k < len(stepOrder) && stepOrder[k] != kind {
					k++
				}
				if k == len(stepOrder) && !(kind == "fexit" && strings.HasPrefix(prev, "fexit ")) {
					t.Errorf("%s +%#x: section %q after %q, out of the kernel's order", c.Name, ln.Offset, sec, prev)
				}
				step, prev = min(k, len(stepOrder)-1), sec
			}
			want := ""
			switch {
			case strings.Contains(asm, "# __bpf_tramp_enter"):
				want = jit.SecTrampEnter
			case strings.Contains(asm, "# __bpf_tramp_exit"):
				want = jit.SecTrampExit
			case strings.HasPrefix(asm, "sd s1,"):
				want = jit.SecPrologue
			case strings.HasPrefix(asm, "ld s1,"):
				want = jit.SecEpilogue
			case asm == "addi zero,zero,0" && ipAfterCall && i > 0 && (lines[i-1].Section == jit.SecRetval || lines[i-1].Section == jit.SecIPAfterCall):
				want = jit.SecIPAfterCall
			case strings.Contains(asm, "# func+0x8"):
				want = jit.SecCallOrig
			}
			if want != "" && sec != want {
				t.Errorf("%s +%#x: %q in %q, want %q", c.Name, ln.Offset, asm, sec, want)
			}
		}
		for _, s := range img.Sections {
			if s.Name == jit.SecModRetInit && (len(tr.ModRet) == 0 || s.End-s.Start != 4) {
				t.Errorf("%s: %s is %d bytes with %d fmod_ret programs, want one sd zero", c.Name, s.Name, s.End-s.Start, len(tr.ModRet))
			}
		}
	}
}
