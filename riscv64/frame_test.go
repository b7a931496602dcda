package riscv64

import (
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

func u64Args(n int) []btfmodel.Arg {
	a := make([]btfmodel.Arg, n)
	for i := range a {
		a[i] = btfmodel.Arg{Size: 8}
	}
	return a
}

// TestLayoutTable is a table worked out by hand from __arch_prepare_bpf_trampoline's
// stack_size arithmetic (16 for frame 2's record, 16 more with save_ret, the slots, 8 for the
// count, 8 for IP_ARG, 16 for run_ctx, 8 for s1, the outgoing stack arguments, round_up 16):
// slots → S, args_off, nregs_off, run_ctx_off, sreg_off for fentry only (RESTORE_REGS) and
// for CALL_ORIG, without IP_ARG.
func TestLayoutTable(t *testing.T) {
	type row struct{ n, stack, args, nregs, runCtx, sreg int }
	fentry := []row{{0, 48, 16, 24, 40, 48}, {1, 64, 24, 32, 48, 56}, {2, 64, 32, 40, 56, 64}, {3, 80, 40, 48, 64, 72},
		{4, 80, 48, 56, 72, 80}, {5, 96, 56, 64, 80, 88}, {6, 96, 64, 72, 88, 96}, {7, 112, 72, 80, 96, 104},
		{8, 112, 80, 88, 104, 112}, {9, 128, 88, 96, 112, 120}, {10, 128, 96, 104, 120, 128}, {11, 144, 104, 112, 128, 136},
		{12, 144, 112, 120, 136, 144}}
	// CALL_ORIG: the retval slots push everything down 16; past 8 slots the outgoing stack
	// arguments add 8 each before the rounding.
	callOrig := []row{{0, 64, 32, 40, 56, 64}, {1, 80, 40, 48, 64, 72}, {2, 80, 48, 56, 72, 80}, {3, 96, 56, 64, 80, 88},
		{4, 96, 64, 72, 88, 96}, {5, 112, 72, 80, 96, 104}, {6, 112, 80, 88, 104, 112}, {7, 128, 88, 96, 112, 120},
		{8, 128, 96, 104, 120, 128}, {9, 144, 104, 112, 128, 136}, {10, 160, 112, 120, 136, 144}, {11, 176, 120, 128, 144, 152},
		{12, 192, 128, 136, 152, 160}}
	p, err := ProfileFor(btfmodel.Kernel612)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range []struct {
		flags jit.Flags
		rows  []row
	}{{jit.FlagRestoreRegs, fentry}, {jit.FlagCallOrig | jit.FlagSkipFrame, callOrig}} {
		for _, r := range tb.rows {
			l, err := Layout(p, &btfmodel.FuncModel{Name: "f", Args: u64Args(r.n)}, tb.flags, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := row{l.NArgs, l.StackSize, l.ArgsOff, l.NRegsOff, l.RunCtxOff, l.SRegOff}
			if got != r {
				t.Errorf("flags %s, %d slots: got %+v, want %+v", tb.flags, r.n, got, r)
			}
			if l.SaveRet != (tb.flags&jit.FlagCallOrig != 0) || l.StkArgOff != l.StackSize || l.NRegs != min(r.n, 8) {
				t.Errorf("flags %s, %d slots: %+v", tb.flags, r.n, l)
			}
		}
	}
}

// TestLayoutIPAndCookies: IP_ARG adds its slot below the count, cookie slots go between it
// and run_ctx, and a cookie's index counts back from the ctx pointer (ctx[-index]).
func TestLayoutIPAndCookies(t *testing.T) {
	p, err := ProfileFor(btfmodel.Kernel72)
	if err != nil {
		t.Fatal(err)
	}
	m := &btfmodel.FuncModel{Name: "f", Args: []btfmodel.Arg{{Size: 4}, {Size: 8}}}
	l, err := Layout(p, m, jit.FlagCallOrig|jit.FlagSkipFrame|jit.FlagIPArg, 3)
	if err != nil {
		t.Fatal(err)
	}
	// 16 + 16 retval, 2 slots → args 48, count 56, ip 64, 3 cookies → 88, run_ctx 104,
	// s1 112 → S 112.
	want := StackLayout{NArgs: 2, NRegs: 2, HasIP: true, SaveRet: true, Cookies: 3, RetvalOff: 32, ArgsOff: 48, NRegsOff: 56,
		IPOff: 64, CookieOff: 88, RunCtxOff: 104, SRegOff: 112, StackSize: 112, StkArgOff: 112}
	if l != want {
		t.Fatalf("got %+v\nwant %+v", l, want)
	}
	if idx := (l.CookieSlotOff(0) - l.ArgsOff) / 8; idx != 5 {
		t.Errorf("cookie 0 is ctx[-%d], want ctx[-5] (two slots below the count and the ip)", idx)
	}
}

// TestStructSlots: a 9..16-byte struct takes two slots (round_up(arg_size, 8) / 8), and more
// than MAX_BPF_FUNC_ARGS arguments is -ENOTSUPP whatever their size.
func TestStructSlots(t *testing.T) {
	p, err := ProfileFor(btfmodel.Kernel612)
	if err != nil {
		t.Fatal(err)
	}
	m := &btfmodel.FuncModel{Name: "f", Args: []btfmodel.Arg{{Size: 12, Flags: btfmodel.StructArg}, {Size: 4}, {Size: 16, Flags: btfmodel.StructArg}}}
	if n, err := ArgSlots(p, m); err != nil || n != 5 {
		t.Errorf("slots %d, %v; want 5", n, err)
	}
	_, err = ArgSlots(p, &btfmodel.FuncModel{Name: "f13", Args: u64Args(13)})
	if err == nil || !strings.Contains(err.Error(), "MAX_BPF_FUNC_ARGS") || err.(interface{ Unwrap() error }).Unwrap() != jit.ENOTSUPP {
		t.Errorf("13 arguments: %v, want -ENOTSUPP", err)
	}
}

// TestDiagram: the diagram names every slot once, at the offsets the code addresses.
func TestDiagram(t *testing.T) {
	l := layoutFor(10, 1, jit.FlagCallOrig|jit.FlagSkipFrame|jit.FlagIPArg)
	d := l.Diagram()
	for _, want := range []string{
		"[s0  +24]  caller's stack argument, slot 9",
		"[s0  -32]  a0 after the original: the return value, ctx[10]",
		"[s0 -112]  argument slot 0, ctx[0]",
		"[s0 -120]  argument slot count (func_meta), ctx[-1]",
		"[s0 -128]  func_addr (IP_ARG), ctx[-2]",
		"[s0 -136]  session cookie 0, ctx[-3]",
		"[s0 -152]  bpf_tramp_run_ctx.bpf_cookie",
		"[s0 -160]  saved s1",
		"[s0 -176]  outgoing stack argument 0 for the original",
		"sp = s0-176",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("diagram lacks %q:\n%s", want, d)
		}
	}
}
