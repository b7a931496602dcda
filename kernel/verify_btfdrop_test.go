package kernel

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/trampjit/trampjit/kernel/wire"
)

// A program whose BTF the kernel refuses is loaded again without BTF, func and line info, as
// libbpf does (bpf_object__sanitize_and_load_btf), and the result says so; a typed __ksym
// the kernel lacks is libbpf's refusal.
func TestGuestVerifyBTFDropped(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a qemu guest; skipped with -short")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("qemu-system-x86_64 is not installed")
	}
	p := retProgram(t, "bad_btf")
	p.AttachTo = "bpf_fentry_test1"
	p.BTF = []byte("this is not BTF, the kernel refuses it")
	p.FuncInfo = make([]byte, 8)
	var ks wire.Bytecode
	if err := ks.UnmarshalText([]byte("1831000000000000 0000000000000000 b700000000000000 9500000000000000")); err != nil {
		t.Fatal(err)
	}
	k := wire.VerifyProgram{Name: "no_ksym", Type: "tracing", AttachType: "raw_tp", AttachTo: "sched_switch", License: "GPL",
		Insns: ks, Ksyms: []wire.KsymRef{{Insn: 0, Var: "no_such_percpu_var", Typed: true}}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Verify(ctx, VerifyOptions{Kernel: "6.12", Arch: "amd64", Programs: []wire.VerifyProgram{p, k}, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0]; !r.Accepted || r.BTFDropped == "" {
		t.Errorf("bad BTF: %+v", r)
	}
	if r := res[1]; r.Accepted || r.Stage != "ksym" || r.Error != "extern (var ksym) 'no_such_percpu_var': not found in kernel BTF" {
		t.Errorf("missing ksym: %+v", r)
	}
}
