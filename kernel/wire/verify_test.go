package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

// A map lookup: r1 = map[counts] (ld_imm64, src_reg 1), call 1, r0 = 0, exit.
const lookupHex = "18110000000000000000000000000000" + "8500000001000000" + "b700000000000000" + "9500000000000000"

func lookupProgram(t *testing.T) VerifyProgram {
	var b Bytecode
	if err := b.UnmarshalText([]byte(lookupHex)); err != nil {
		t.Fatal(err)
	}
	return VerifyProgram{Name: "lookup", Type: "tracing", AttachType: "fentry", AttachTo: "bpf_fentry_test1",
		License: "GPL", Insns: b,
		Maps:    []VerifyMap{{Name: "counts", Type: "hash", KeySize: 4, ValueSize: 8, MaxEntries: 64}},
		MapRefs: []MapRef{{Insn: 0, Map: "counts"}}}
}

func TestVerifyRequestRoundTrip(t *testing.T) {
	p := lookupProgram(t)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(Request{Verify: &VerifyRequest{LogLevel: 2, Programs: []VerifyProgram{p}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(j), `"insns":"`+lookupHex+`"`) {
		t.Errorf("bytecode is not hex in JSON: %s", j)
	}
	var back Request
	if err := json.Unmarshal(j, &back); err != nil {
		t.Fatal(err)
	}
	q := back.Verify.Programs[0]
	if back.Verify.LogLevel != 2 || string(q.Insns) != string(p.Insns) || q.MapRefs[0] != p.MapRefs[0] || q.Maps[0].Type != "hash" {
		t.Errorf("round trip: %+v", back.Verify)
	}
	// Hand-written bytecode may separate instructions with whitespace.
	var b Bytecode
	if err := json.Unmarshal([]byte(`"b700000000000000\n 95 00 00 00 00 00 00 00"`), &b); err != nil || b.Len() != 2 || b.Op(1) != 0x95 {
		t.Errorf("spaced hex: %x, %v", b, err)
	}
}

func TestVerifyProgramValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*VerifyProgram)
		want string
	}{
		{"type", func(p *VerifyProgram) { p.Type = "kprobe" }, "want tracing, lsm or struct_ops"},
		{"attach", func(p *VerifyProgram) { p.AttachType = "fentry.s" }, "want fentry, fexit"},
		{"target", func(p *VerifyProgram) { p.AttachTo = "" }, "no attach target"},
		{"length", func(p *VerifyProgram) { p.Insns = p.Insns[:12] }, "multiple of 8"},
		{"map type", func(p *VerifyProgram) { p.Maps[0].Type = "hashmap" }, "unknown type"},
		{"ref not ld_imm64", func(p *VerifyProgram) { p.MapRefs[0].Insn = 2 }, "not a ld_imm64"},
		{"ref past end", func(p *VerifyProgram) { p.MapRefs[0].Insn = 4 }, "not a ld_imm64"},
		{"ref unknown map", func(p *VerifyProgram) { p.MapRefs[0].Map = "other" }, "not among its maps"},
		{"ref src", func(p *VerifyProgram) { p.Insns[1] = 0x01 }, "src_reg 0"},
		{"kfunc", func(p *VerifyProgram) { p.Kfuncs = []KfuncRef{{Insn: 2, Func: "bpf_rcu_read_lock"}} }, "not a kfunc call"},
		{"line info", func(p *VerifyProgram) { p.LineInfo = make([]byte, 16) }, "without BTF"},
		{"struct_ops type alone", func(p *VerifyProgram) { p.Type = "struct_ops" }, "struct_ops goes with struct_ops"},
		{"struct_ops attach alone", func(p *VerifyProgram) { p.AttachType = "struct_ops" }, "struct_ops goes with struct_ops"},
		{"struct_ops no member", func(p *VerifyProgram) {
			p.Type, p.AttachType, p.AttachTo = "struct_ops", "struct_ops", "tcp_congestion_ops"
		}, "want OPS:MEMBER"},
		{"struct_ops empty member", func(p *VerifyProgram) {
			p.Type, p.AttachType, p.AttachTo = "struct_ops", "struct_ops", "tcp_congestion_ops:"
		}, "want OPS:MEMBER"},
	} {
		p := lookupProgram(t)
		p.Insns = append(Bytecode(nil), p.Insns...)
		c.edit(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

func TestReasonLine(t *testing.T) {
	log := SplitLog([]byte("func 'bpf_fentry_test2' doesn't have 3-th argument\n" +
		"invalid bpf_context access off=16 size=8\n" +
		"processed 1 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0\n\x00stale"))
	if len(log) != 3 {
		t.Fatalf("lines: %q", log)
	}
	if got := ReasonLine(log); got != "invalid bpf_context access off=16 size=8" {
		t.Errorf("reason %q", got)
	}
	if got := ReasonLine([]string{"stack depth 8", "verification time 12 usec", ""}); got != "" {
		t.Errorf("statistics only: %q", got)
	}
	if SplitLog([]byte{0, 'x'}) != nil {
		t.Error("an empty log has no lines")
	}
}

// A struct_ops program names its table and member; the agent finds both in the guest.
func TestVerifyProgramStructOps(t *testing.T) {
	p := lookupProgram(t)
	p.Type, p.AttachType, p.AttachTo, p.Maps, p.MapRefs = "struct_ops", "struct_ops", "tcp_congestion_ops:cong_avoid", nil, nil
	p.Insns = Bytecode{0xb7, 0, 0, 0, 0, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if ProgTypes["struct_ops"] != 27 { // BPF_PROG_TYPE_STRUCT_OPS, include/uapi/linux/bpf.h
		t.Errorf("struct_ops is program type %d", ProgTypes["struct_ops"])
	}
}
