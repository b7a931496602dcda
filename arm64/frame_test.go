package arm64

import (
	"fmt"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// TestLayoutTable is a table worked out by hand from prepare_trampoline's offsets (6.12):
// nregs, IP_ARG, fexit/fmod_ret (retval slot) → arg slots, retval, x19/x20, stack_size,
// retaddr_off.
func TestLayoutTable(t *testing.T) {
	type row struct{ n, args, retval, x19, stack, retaddr int }
	tables := []struct {
		ip, ret bool
		rows    []row
	}{
		{false, false, []row{{1, 24, -1, 32, 48, 56}, {2, 24, -1, 40, 64, 72}, {3, 24, -1, 48, 64, 72}, {4, 24, -1, 56, 80, 88},
			{5, 24, -1, 64, 80, 88}, {6, 24, -1, 72, 96, 104}, {7, 24, -1, 80, 96, 104}, {8, 24, -1, 88, 112, 120}}},
		{false, true, []row{{1, 24, 32, 40, 64, 72}, {2, 24, 40, 48, 64, 72}, {3, 24, 48, 56, 80, 88}, {4, 24, 56, 64, 80, 88},
			{5, 24, 64, 72, 96, 104}, {6, 24, 72, 80, 96, 104}, {7, 24, 80, 88, 112, 120}, {8, 24, 88, 96, 112, 120}}},
		{true, false, []row{{1, 32, -1, 40, 64, 72}, {2, 32, -1, 48, 64, 72}, {3, 32, -1, 56, 80, 88}, {4, 32, -1, 64, 80, 88},
			{5, 32, -1, 72, 96, 104}, {6, 32, -1, 80, 96, 104}, {7, 32, -1, 88, 112, 120}, {8, 32, -1, 96, 112, 120}}},
		{true, true, []row{{1, 32, 40, 48, 64, 72}, {2, 32, 48, 56, 80, 88}, {3, 32, 56, 64, 80, 88}, {4, 32, 64, 72, 96, 104},
			{5, 32, 72, 80, 96, 104}, {6, 32, 80, 88, 112, 120}, {7, 32, 88, 96, 112, 120}, {8, 32, 96, 104, 128, 136}}},
	}
	p, _ := ProfileFor(btfmodel.Kernel612)
	n := 0
	for _, tb := range tables {
		flags := jit.FlagRestoreRegs
		if tb.ret {
			flags = jit.FlagCallOrig | jit.FlagSkipFrame
		}
		if tb.ip {
			flags |= jit.FlagIPArg
		}
		for _, r := range tb.rows {
			l, err := Layout(p, &btfmodel.FuncModel{Name: "f", Args: u64Args(r.n)}, flags, 0)
			if err != nil {
				t.Fatal(err)
			}
			retval := l.Retval
			if !l.SaveRet {
				retval = -1
			}
			nregsOff := 16
			if tb.ip {
				nregsOff = 24
			}
			got := row{l.NRegs, l.Args, retval, l.Regs, l.StackSize, l.RetAddr}
			if got != r || l.NRegsOff != nregsOff || l.RunCtx != 0 || (tb.ip && l.IP != 16) {
				t.Errorf("ip=%v ret=%v nregs=%d: got %+v (count at %d, ip at %d), want %+v", tb.ip, tb.ret, r.n, got, l.NRegsOff, l.IP, r)
			}
			n++
		}
	}
	if n != 32 {
		t.Fatalf("%d rows", n)
	}
}

// TestStructArgRegs: a struct of 9..16 bytes takes two registers (btf_func_model's
// arg_size, as prepare_trampoline counts registers).
func TestStructArgRegs(t *testing.T) {
	p, _ := ProfileFor(btfmodel.Kernel612)
	for _, c := range []struct {
		args []btfmodel.Arg
		want int
	}{
		{[]btfmodel.Arg{structArg(16)}, 2},
		{[]btfmodel.Arg{structArg(9), structArg(8)}, 3},
		{[]btfmodel.Arg{structArg(4), structArg(12)}, 3},
		{append(u64Args(6), structArg(16)), 8},
		{append(u64Args(7), structArg(8)), 8},
	} {
		n, err := ArgRegs(p, &btfmodel.FuncModel{Name: "f", Args: c.args})
		if err != nil || n != c.want {
			t.Errorf("%d args: got %d, %v; want %d", len(c.args), n, err, c.want)
		}
	}
}

// TestLayoutStackArgs72: the 7.2 frames with stack-passed arguments, offsets read from the
// captured images (7.2-arm64 corpus): the outgoing copy at sp+0 only when the original is
// called, the count is every slot, and only an argument's last slot with unused bytes is masked.
func TestLayoutStackArgs72(t *testing.T) {
	p, err := ProfileFor(btfmodel.Kernel72)
	if err != nil {
		t.Fatal(err)
	}
	u32 := btfmodel.Arg{Name: "w", TypeName: "u32", Size: 4}
	sk := append(u64Args(8), u32)                                                   // __bpf_sk_lookup: 9th is int sdif
	logAttr := append(u64Args(5), structArg(16), u64Args(1)[0], structArg(16), u32) // bpf_log_attr_init
	for _, c := range []struct {
		id    string
		args  []btfmodel.Arg
		flags jit.Flags
		want  string
	}{
		{"__bpf_sk_lookup-fexit", sk, jit.FlagCallOrig | jit.FlagSkipFrame,
			"regs 8 slots 9 mask [32] runctx 8 count 24 args 32 retval 104 x19 112 stack 128"},
		{"bpf_log_attr_init-fentry", logAttr, jit.FlagRestoreRegs,
			"regs 8 slots 11 mask [0 0 32] runctx 0 count 16 args 24 retval 112 x19 112 stack 128"},
	} {
		l, err := Layout(p, &btfmodel.FuncModel{Name: c.id, Args: c.args}, c.flags, 0)
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprintf("regs %d slots %d mask %v runctx %d count %d args %d retval %d x19 %d stack %d",
			l.NRegs, l.NArgs, l.StackMask, l.RunCtx, l.NRegsOff, l.Args, l.Retval, l.Regs, l.StackSize)
		if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.id, got, c.want)
		}
	}
}
