package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// `trampjit model --arch riscv64` is distillation and attach rules only: it needs no riscv64
// generator. The verdicts are the riscv64 JIT's (arch/riscv/net/bpf_jit_comp64.c).
func TestModelRiscv64(t *testing.T) {
	// Seven 16-byte structs: 14 slots, six past a7. __arch_prepare_bpf_trampoline refuses only
	// nr_args > MAX_BPF_FUNC_ARGS, where x86_64 6.12 refuses more than 12 slots.
	proto := "struct pair { u64 a; u64 b; }; int f(struct pair p0, struct pair p1, struct pair p2, struct pair p3, struct pair p4, struct pair p5, struct pair p6)"
	for arch, fentryOK := range map[string]bool{"riscv64": true, "amd64": false} {
		code, out, errOut := trampjit("model", "--proto", proto, "--kernel", "6.12", "--arch", arch, "--format", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", arch, code, errOut)
		}
		var m modelJSON
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatal(err)
		}
		if m.Arch != arch || m.NrArgs != 7 || m.NrRegs != 14 || len(m.Attach) == 0 || m.Attach[0].OK != fentryOK {
			t.Errorf("%s: %+v", arch, m)
		}
	}
	// 6.1 has no riscv64 trampoline: the weak arch_prepare_bpf_trampoline, at link time.
	code, out, _ := trampjit("model", "--proto", "int f(int a)", "--kernel", "6.1", "--arch", "riscv64", "--color", "never")
	if code != 0 || !strings.Contains(out, "fentry    refused  at attach, ENOTSUPP") {
		t.Errorf("6.1 riscv64 (exit %d):\n%s", code, out)
	}
	// 7.2: fsession is listed and attaches (bpf_jit_supports_fsession).
	code, out, _ = trampjit("model", "--proto", "int f(int a)", "--kernel", "7.2", "--arch", "riscv64", "--color", "never")
	if code != 0 || !strings.Contains(out, "fsession  ok") {
		t.Errorf("7.2 riscv64 (exit %d):\n%s", code, out)
	}
}
