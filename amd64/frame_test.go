package amd64

import (
	"errors"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

const (
	fexitFlags  = jit.FlagCallOrig | jit.FlagSkipFrame
	fentryFlags = jit.FlagRestoreRegs
)

// Frame offsets worked out by hand from __arch_prepare_bpf_trampoline's stack_size sums
// (arch/x86/net/bpf_jit_comp.c), for nr = 0.. scalar arguments.
type layoutRow struct{ ctx, nregs, ip, rbx, runCtx, stack int }

func TestLayout612(t *testing.T) {
	// 6.12, fexit/fmod_ret, no IP_ARG: ctx, nregs, rbx, run_ctx, stack.
	fexit := [][5]int{
		{0x08, 0x10, 0x18, 0x28, 0x28}, {0x10, 0x18, 0x20, 0x30, 0x30},
		{0x18, 0x20, 0x28, 0x38, 0x38}, {0x20, 0x28, 0x30, 0x40, 0x40},
		{0x28, 0x30, 0x38, 0x48, 0x48}, {0x30, 0x38, 0x40, 0x50, 0x50},
		{0x38, 0x40, 0x48, 0x58, 0x58}, {0x40, 0x48, 0x50, 0x60, 0x68},
		{0x48, 0x50, 0x58, 0x68, 0x78}, {0x50, 0x58, 0x60, 0x70, 0x88},
		{0x58, 0x60, 0x68, 0x78, 0x98}, {0x60, 0x68, 0x70, 0x80, 0xa8},
		{0x68, 0x70, 0x78, 0x88, 0xb8},
	}
	// 6.12, fexit + IP_ARG: ctx, nregs, ip, rbx, run_ctx, stack.
	fexitIP := [][6]int{
		{0x08, 0x10, 0x18, 0x20, 0x30, 0x30}, {0x10, 0x18, 0x20, 0x28, 0x38, 0x38},
		{0x18, 0x20, 0x28, 0x30, 0x40, 0x40}, {0x20, 0x28, 0x30, 0x38, 0x48, 0x48},
		{0x28, 0x30, 0x38, 0x40, 0x50, 0x50}, {0x30, 0x38, 0x40, 0x48, 0x58, 0x58},
		{0x38, 0x40, 0x48, 0x50, 0x60, 0x60}, {0x40, 0x48, 0x50, 0x58, 0x68, 0x78},
		{0x48, 0x50, 0x58, 0x60, 0x70, 0x88}, {0x50, 0x58, 0x60, 0x68, 0x78, 0x98},
		{0x58, 0x60, 0x68, 0x70, 0x80, 0xa8}, {0x60, 0x68, 0x70, 0x78, 0x88, 0xb8},
		{0x68, 0x70, 0x78, 0x80, 0x90, 0xc8},
	}
	for nr := 0; nr <= 12; nr++ {
		r := fexit[nr]
		checkLayout(t, btfmodel.Kernel612, nr, fexitFlags,
			layoutRow{ctx: r[0], nregs: r[1], ip: r[1], rbx: r[2], runCtx: r[3], stack: r[4]})
		ri := fexitIP[nr]
		checkLayout(t, btfmodel.Kernel612, nr, fexitFlags|jit.FlagIPArg,
			layoutRow{ri[0], ri[1], ri[2], ri[3], ri[4], ri[5]})
		// fentry-only: ctx = 8*nr, then +8 per slot; IP_ARG adds 8 from ip on.
		ctx := 8 * nr
		checkLayout(t, btfmodel.Kernel612, nr, fentryFlags,
			layoutRow{ctx, ctx + 8, ctx + 8, ctx + 0x10, ctx + 0x20, ctx + 0x20})
		checkLayout(t, btfmodel.Kernel612, nr, fentryFlags|jit.FlagIPArg,
			layoutRow{ctx, ctx + 8, ctx + 0x10, ctx + 0x18, ctx + 0x28, ctx + 0x28})
	}
}

func TestLayout61(t *testing.T) {
	// Columns: fexit (ctx, nregs, run_ctx=stack), fexit+IP (ctx, nregs, ip, run_ctx=stack),
	// fentry-only (ctx, nregs, run_ctx=stack); rbx is pushed at stack+8.
	rows := [][10]int{
		{0x08, 0x10, 0x20, 0x08, 0x10, 0x18, 0x28, 0x00, 0x08, 0x18},
		{0x10, 0x18, 0x28, 0x10, 0x18, 0x20, 0x30, 0x08, 0x10, 0x20},
		{0x18, 0x20, 0x30, 0x18, 0x20, 0x28, 0x38, 0x10, 0x18, 0x28},
		{0x20, 0x28, 0x38, 0x20, 0x28, 0x30, 0x40, 0x18, 0x20, 0x30},
		{0x28, 0x30, 0x40, 0x28, 0x30, 0x38, 0x48, 0x20, 0x28, 0x38},
		{0x30, 0x38, 0x48, 0x30, 0x38, 0x40, 0x50, 0x28, 0x30, 0x40},
		{0x38, 0x40, 0x50, 0x38, 0x40, 0x48, 0x58, 0x30, 0x38, 0x48},
	}
	for nr, r := range rows {
		checkLayout(t, btfmodel.Kernel61, nr, fexitFlags,
			layoutRow{r[0], r[1], r[1], r[2] + 8, r[2], r[2]})
		checkLayout(t, btfmodel.Kernel61, nr, fexitFlags|jit.FlagIPArg,
			layoutRow{r[3], r[4], r[5], r[6] + 8, r[6], r[6]})
		checkLayout(t, btfmodel.Kernel61, nr, fentryFlags,
			layoutRow{r[7], r[8], r[8], r[9] + 8, r[9], r[9]})
	}
	for _, nr := range []int{7, 12} {
		if _, err := Layout(eights(nr), fexitFlags, btfmodel.Kernel61); !errors.Is(err, jit.ENOTSUPP) {
			t.Errorf("6.1 with %d args: err %v, want ENOTSUPP", nr, err)
		}
	}
}

func checkLayout(t *testing.T, k btfmodel.Kernel, nr int, flags jit.Flags, w layoutRow) {
	t.Helper()
	l, err := Layout(eights(nr), flags, k)
	if err != nil {
		t.Fatal(err)
	}
	got := layoutRow{l.RegsOff, l.NregsOff, l.IPOff, l.RBXOff, l.RunCtxOff, l.StackSize}
	if got != w {
		t.Errorf("%s nr=%d flags=%v: got %#x, want %#x", k, nr, flags, got, w)
	}
}

// TestLayoutStructs checks save_args' placement walk where a struct goes to the stack out of
// order:
// f(ptr, int, int, struct16 a, struct16 b, int c, int d) on 6.12 with fexit.
func TestLayoutStructs(t *testing.T) {
	l, err := Layout(scalars(8, 4, 4, 16, 16, 4, 4), fexitFlags, btfmodel.Kernel612)
	if err != nil {
		t.Fatal(err)
	}
	want := [7]ArgLoc{{1, 0, 0}, {1, 1, 0}, {1, 2, 0}, {2, 3, 0}, {2, -1, 0}, {1, 5, 0}, {1, -1, 2}}
	if [7]ArgLoc(l.Args[:7]) != want {
		t.Errorf("placement %v, want %v", l.Args[:7], want)
	}
	if l.NrRegs != 9 || l.UsedRegs != 6 || l.StackSlots != 3 || l.RegsOff != 0x50 || l.StackSize != 0x88 {
		t.Errorf("got nr_regs %d used %d stack slots %d regs_off %#x stack %#x, want 9 6 3 0x50 0x88",
			l.NrRegs, l.UsedRegs, l.StackSlots, l.RegsOff, l.StackSize)
	}
	// Too many slots: 6.12 takes 12 (MAX_BPF_FUNC_ARGS), 6.1 six.
	for _, tc := range []struct {
		k     btfmodel.Kernel
		sizes []int
		ok    bool
	}{
		{btfmodel.Kernel612, []int{16, 16, 16, 16, 16, 16}, true},
		{btfmodel.Kernel612, []int{16, 16, 16, 16, 16, 16, 1}, false},
		{btfmodel.Kernel61, []int{16, 16, 16}, true},
		{btfmodel.Kernel61, []int{16, 16, 16, 4}, false},
		{btfmodel.Kernel61, []int{16, 8, 8, 8, 8}, true},
		{btfmodel.Kernel61, []int{16, 8, 8, 8, 8, 8}, false},
	} {
		_, err := Layout(scalars(tc.sizes...), fexitFlags, tc.k)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, jit.ENOTSUPP)) {
			t.Errorf("%s %v: err %v, want ok=%v or ENOTSUPP", tc.k, tc.sizes, err, tc.ok)
		}
	}
}

// Jmp mode (7.2 x86_64, flags CALL_ORIG without SKIP_FRAME): the caller's stack arguments
// start at rbp+0x10 and the 16-byte pad flips. The frame sizes are the captured `sub rsp`:
// bpf_modify_return_test2-fexit (7 slots) 6.12 0x68, 7.2 0x70; __bpf_sk_lookup-fexit (9
// slots) 0x88, 0x90; __bpf_sk_lookup-fentry (no original call) 0x68 on both.
func TestLayoutJmpMode(t *testing.T) {
	for _, c := range []struct {
		k           btfmodel.Kernel
		nr          int
		flags       jit.Flags
		stack, args int
	}{
		{btfmodel.Kernel612, 7, fexitFlags, 0x68, 0x18},
		{btfmodel.Kernel72, 7, jit.FlagCallOrig, 0x70, 0x10},
		{btfmodel.Kernel612, 9, fexitFlags, 0x88, 0x18},
		{btfmodel.Kernel72, 9, jit.FlagCallOrig, 0x90, 0x10},
		{btfmodel.Kernel72, 9, fentryFlags, 0x68, 0x18},
		// A 7.2 trampoline that still skips a frame (SHARE_IPMODIFY keeps the call form)
		// lays out as 6.12's.
		{btfmodel.Kernel72, 9, fexitFlags, 0x88, 0x18},
	} {
		l, err := Layout(eights(c.nr), c.flags, c.k)
		if err != nil {
			t.Fatal(err)
		}
		if l.StackSize != c.stack || l.StackArgsOff != c.args {
			t.Errorf("%s nr=%d flags=%v: stack %#x, stack args at rbp+%#x; want %#x, %#x", c.k, c.nr, c.flags, l.StackSize, l.StackArgsOff, c.stack, c.args)
		}
	}
}
