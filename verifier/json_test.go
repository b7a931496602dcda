package verifier

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// The doc.go example: accepted on every profile, with its loads explained.
const docExample = `{"programs": [{
  "name": "count_connect",
  "section": "fentry/tcp_v4_connect",
  "license": "GPL",
  "maps": [{"name": "counts", "type": "hash", "key_size": 4, "value_size": 8, "max_entries": 64}],
  "insns": [
    "r6 = *(u64 *)(r1 +0)",
    "r2 = *(u16 *)(r6 +16)",
    "if r2 != 0x2 goto out",
    "*(u32 *)(r10 -4) = 0",
    "r1 = map[counts]",
    "r2 = r10",
    "r2 += -4",
    "call bpf_map_lookup_elem",
    "if r0 == 0x0 goto out",
    "lock *(u64 *)(r0 +0) += r6",
    "out:",
    "r0 = 0",
    "exit"
  ]}]}`

func TestParseJSONDocExample(t *testing.T) {
	progs, err := ParseJSON([]byte(docExample))
	if err != nil {
		t.Fatal(err)
	}
	if len(progs) != 1 || progs[0].Name != "count_connect" || len(progs[0].Instructions) != 12 {
		t.Fatalf("parsed %+v", progs)
	}
	for _, key := range profiles {
		res := Check(progs[0], envFor(t, key))
		if !res.Accepted {
			t.Fatalf("%s: rejected: %s\n%s", key, res.Error, strings.Join(res.Log, "\n"))
		}
		want := []string{"r6 = ctx[0] (struct sock *) -> PTR_TO_BTF_ID sock", "r2 = *(u16 *)(r6 +16) -> sk->__sk_common.skc_family"}
		if len(res.Loads) != 2 || res.Loads[0].Text != want[0] || res.Loads[1].Text != want[1] {
			t.Errorf("%s: loads %v, want %v", key, res.Loads, want)
		}
	}
}

// Every syntax form parses to the intended raw instruction.
func TestParseInstructionForms(t *testing.T) {
	maps := []Map{{Name: "m", KeySize: 4, ValueSize: 8}}
	cases := []struct {
		text string
		want asm.Instruction
	}{
		{"r0 = 0", asm.Mov.Imm(asm.R0, 0)},
		{"w1 = 7", asm.Mov.Imm32(asm.R1, 7)},
		{"r1 = r2", asm.Mov.Reg(asm.R1, asm.R2)},
		{"w1 = w2", asm.Mov.Reg32(asm.R1, asm.R2)},
		{"r1 += -8", asm.Add.Imm(asm.R1, -8)},
		{"r1 -= r2", asm.Sub.Reg(asm.R1, asm.R2)},
		{"w3 &= 255", asm.And.Imm32(asm.R3, 255)},
		{"r1 s>>= 3", asm.ArSh.Imm(asm.R1, 3)},
		{"r1 <<= 32", asm.LSh.Imm(asm.R1, 32)},
		{"r2 = *(u64 *)(r1 +8)", asm.LoadMem(asm.R2, asm.R1, 8, asm.DWord)},
		{"r2 = *(u8 *)(r1 -1)", asm.LoadMem(asm.R2, asm.R1, -1, asm.Byte)},
		{"r2 = *(s32 *)(r1 +4)", asm.LoadMemSX(asm.R2, asm.R1, 4, asm.Word)},
		{"*(u32 *)(r10 -4) = r1", asm.StoreMem(asm.R10, -4, asm.R1, asm.Word)},
		{"*(u64 *)(r10 -8) = 0", asm.Instruction{OpCode: asm.StoreImmOp(asm.DWord), Dst: asm.R10, Offset: -8}},
		{"if r1 > 0x10 goto pc+3", asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.JGT).SetSource(asm.ImmSource), Dst: asm.R1, Offset: 3, Constant: 16}},
		{"if w1 s< w2 goto pc-1", asm.Instruction{OpCode: asm.OpCode(asm.Jump32Class).SetJumpOp(asm.JSLT).SetSource(asm.RegSource), Dst: asm.R1, Src: asm.R2, Offset: -1}},
		{"goto pc+0", asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Ja)}},
		{"call bpf_map_lookup_elem", asm.FnMapLookupElem.Call()},
		{"call ktime_get_ns", asm.FnKtimeGetNs.Call()},
		{"call bpf_get_func_arg#183", asm.FnGetFuncArg.Call()},
		{"exit", asm.Return()},
		{"7: (79) r2 = *(u64 *)(r1 +0)         ; R1=ctx() R2_w=scalar()", asm.LoadMem(asm.R2, asm.R1, 0, asm.DWord)},
		{"79 12 08 00 00 00 00 00", asm.LoadMem(asm.R2, asm.R1, 8, asm.DWord)},
		{"12:	79 12 08 00 00 00 00 00	r2 = *(u64 *)(r1 + 8)", asm.LoadMem(asm.R2, asm.R1, 8, asm.DWord)},
		{"8:	15 00 01 00 00 00 00 00	if r0 == 0 goto +1 <LBB0_2>", asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.JEq).SetSource(asm.ImmSource), Offset: 1}},
		{"*(u32 *)(r10 - 4) = r7", asm.StoreMem(asm.R10, -4, asm.R7, asm.Word)},
		{"lock *(u64 *)(r0 + 0) += r7", asm.StoreXAdd(asm.R0, asm.R7, asm.DWord)},
		{"r1 = map[m]", asm.LoadMapPtr(asm.R1, 0)},
		{"r1 = 0x1122334455667788 ll", asm.LoadImm(asm.R1, 0x1122334455667788, asm.DWord)},
	}
	for _, c := range cases {
		got, err := ParseInstructions([]string{c.text}, maps)
		if err != nil {
			t.Errorf("%q: %v", c.text, err)
			continue
		}
		if len(got) != 1 || !sameRaw(t, got[0], c.want) {
			t.Errorf("%q: got %v, want %v", c.text, got, c.want)
		}
	}
	for _, bad := range []string{"r11 = 0", "r1 = map[nope]", "if r1 > 1 goto nowhere", "frobnicate"} {
		if _, err := ParseInstructions([]string{bad, "exit"}, maps); err == nil {
			t.Errorf("%q: parsed, want an error", bad)
		}
	}
}

func sameRaw(t *testing.T, a, b asm.Instruction) bool {
	ra, err1 := decode(asm.Instructions{a})
	rb, err2 := decode(asm.Instructions{b})
	if err1 != nil || err2 != nil {
		t.Fatalf("decode: %v %v", err1, err2)
	}
	if len(ra) != len(rb) {
		return false
	}
	for i := range ra {
		ra[i].line, rb[i].line = "", ""
		if ra[i] != rb[i] {
			return false
		}
	}
	return true
}

// Labels count ld_imm64 as two instructions, like the kernel's pc+N.
func TestParseLabels(t *testing.T) {
	insns, err := ParseInstructions([]string{"if r1 == 0x0 goto skip", "r2 = 0x100000000 ll", "skip:", "r0 = 0", "exit"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if insns[0].Offset != 2 {
		t.Errorf("jump offset %d, want 2", insns[0].Offset)
	}
}

func TestParseJSONErrors(t *testing.T) {
	for _, bad := range []string{
		`{"programs": []}`,
		`{"programs": [{"name": "x", "section": "kprobe/foo", "insns": ["exit"]}]}`,
		`{"programs": [{"name": "x", "insns": ["exit"]}]}`,
		`{"programs": [{"name": "x", "section": "fentry/f", "insns": ["bogus"]}]}`,
		`{"programs": [{"name": "x", "section": "fentry/f", "unknown_field": 1, "insns": ["exit"]}]}`,
		`{"programs": [{"name": "x", "section": "fentry/f", "maps": [{"name": ".rodata", "type": "array", "key_size": 4, "value_size": 2, "max_entries": 1, "data": "AAAAAA=="}], "insns": ["exit"]}]}`,
		`{"programs": [{"name": "x", "section": "fentry/f", "maps": [{"name": ".rodata", "type": "array", "key_size": 4, "value_size": 4, "max_entries": 1, "data": "!!"}], "insns": ["exit"]}]}`,
	} {
		if _, err := ParseJSON([]byte(bad)); err == nil {
			t.Errorf("%s: parsed, want an error", bad)
		}
	}
}

// A bpf-to-bpf call written as the kernel log prints it ("call pc+N") or to a label encodes as
// the raw instruction the kernel reads: BPF_JMP|BPF_CALL, src_reg BPF_PSEUDO_CALL, imm the
// distance in raw instructions from the next one.
func TestParseSubprogCall(t *testing.T) {
	raw, err := ParseInstructions([]string{"85 10 00 00 04 00 00 00"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, form := range [][]string{
		{"call pc+4", "r0 = 0", "exit", "r2 = 0x100000000 ll", "r0 = 0", "exit"},
		{"call sub", "r0 = 0", "exit", "r2 = 0x100000000 ll", "sub:", "r0 = 0", "exit"},
	} {
		insns, err := ParseInstructions(form, nil)
		if err != nil {
			t.Fatalf("%q: %v", form[0], err)
		}
		if insns[0].OpCode != raw[0].OpCode || insns[0].Src != raw[0].Src || insns[0].Constant != raw[0].Constant || insns[0].Offset != 0 {
			t.Errorf("%q: got %v (src %d, imm %d), want %v (src %d, imm %d)", form[0], insns[0], insns[0].Src, insns[0].Constant, raw[0], raw[0].Src, raw[0].Constant)
		}
	}
	// No helper and no label of that name: a kfunc call by name (asmtext.go), which the
	// profile's BTF resolves or refuses when the program is checked.
	if insns, err := ParseInstructions([]string{"call nowhere", "exit"}, nil); err != nil || !insns[0].IsKfuncCall() || insns[0].Reference() != "nowhere" {
		t.Errorf("call to an unknown label: %v, %v, want a kfunc call to nowhere", insns, err)
	}
	if _, err := ParseInstructions([]string{"call pc+99999999999", "exit"}, nil); err == nil {
		t.Error("call pc+99999999999 parsed, want an error")
	}
}
