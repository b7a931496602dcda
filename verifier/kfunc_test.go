package verifier_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/verifier"
)

// TestKfuncByBTFID: an instruction list names a kfunc by its vmlinux BTF id (the imm the
// kernel sees), not by symbol. The same program as rcu.bpf.c's rcu_missing_unlock and
// kfunc.bpf.c's kf_task_acquire_current must get the kernel's answer to those.
func TestKfuncByBTFID(t *testing.T) {
	for _, profile := range []string{"6.12-amd64", "7.2-arm64"} {
		env := profileEnv(t, profile)
		data, err := os.ReadFile(filepath.Join(truthDir, "expected-"+profile+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var exp expectedFile
		if err := json.Unmarshal(data, &exp); err != nil {
			t.Fatal(err)
		}
		want := map[string]expectedProgram{}
		for _, e := range exp.Programs {
			want[e.File+":"+e.Name] = e
		}
		id := func(name string) int64 {
			var fn *btf.Func
			if err := env.BTF.TypeByName(name, &fn); err != nil {
				t.Fatalf("%s: %v", profile, err)
			}
			i, err := env.BTF.TypeID(fn)
			if err != nil {
				t.Fatal(err)
			}
			return int64(i)
		}
		kcall := func(name string) asm.Instruction {
			return asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call), Src: asm.PseudoKfuncCall, Constant: id(name)}
		}
		skipIfNull := asm.JEq.Imm(asm.R0, 0, "")
		skipIfNull.Offset = 2 // over the release
		cases := []struct {
			truth string
			insns asm.Instructions
		}{
			{"rcu.bpf.o:rcu_missing_unlock", asm.Instructions{kcall("bpf_rcu_read_lock"), asm.Mov.Imm(asm.R0, 0), asm.Return()}},
			{"kfunc.bpf.o:kf_task_acquire_current", asm.Instructions{
				asm.FnGetCurrentTaskBtf.Call(), asm.Mov.Reg(asm.R1, asm.R0), kcall("bpf_task_acquire"),
				skipIfNull, asm.Mov.Reg(asm.R1, asm.R0), kcall("bpf_task_release"),
				asm.Mov.Imm(asm.R0, 0), asm.Return()}},
		}
		for _, tc := range cases {
			e, ok := want[tc.truth]
			if !ok {
				t.Fatalf("%s: no kernel result for %s", profile, tc.truth)
			}
			got := verifier.Check(verifier.Program{Name: "by_id", Section: e.Section, License: "GPL", Instructions: tc.insns}, env)
			if d := truthDiff(e, got); d != "" {
				t.Errorf("%s: %s by BTF id: %s", profile, tc.truth, d)
			}
		}
	}
}
