package arm64_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/jit"
)

// soTables are the ops tables of the corpus kernels' BTF (a table a kernel lacks is skipped).
var soTables = []string{"tcp_congestion_ops", "bpf_dummy_ops", "sched_ext_ops", "sched_ext_ops_cid", "Qdisc_ops", "io_uring_bpf_ops", "hid_bpf_ops"}

// TestStructOpsEveryMember builds every member the kernel lets BPF implement, of every table in
// each profile's BTF, and checks each image against GNU as's encoding of the kernel's sequence
// and under the emulator's oracle: the program sees the arguments, the caller gets its return
// value as the member's width, nothing else is called, registers and stack are intact.
func TestStructOpsEveryMember(t *testing.T) {
	for _, k := range btfmodel.Kernels {
		spec, err := btfmodel.LoadFile(filepath.Join("..", "testdata", "kernel", string(k)+"-arm64", "vmlinux.btf.xz"), nil)
		if err != nil {
			t.Fatal(err)
		}
		built, refused := 0, 0
		for _, ops := range soTables {
			members, err := btfmodel.StructOpsMembers(spec, ops)
			if err != nil {
				continue // not in this kernel
			}
			for _, mem := range members {
				req := soRequest(k, ops, mem)
				if _, err := req.Model(); err != nil {
					refused++ // a data member, or one the kernel refuses (get_info)
					continue
				}
				tr, img, err := jit.Generate(req)
				if err != nil {
					t.Errorf("%s %s.%s: %v", k, ops, mem, err)
					continue
				}
				if tr.Model.NrArgs() > 8 || tr.Model.HasStructArg() {
					t.Errorf("%s %s.%s: %s needs the stack-argument sequence; extend soExpect", k, ops, mem, tr.Model.Prototype())
					continue
				}
				want := asmWords(t, soExpect(k, tr, tr.Model.NrArgs(), tr.Model.RetSize > 0), tr.Image)
				if got := words(img.Code); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s %s.%s: differs from GNU as's encoding of the kernel's sequence", k, ops, mem)
				}
				rep, err := emu.Run(req, emu.Options{Clobber: true})
				if err != nil {
					t.Errorf("%s %s.%s: emulator: %v", k, ops, mem, err)
					continue
				}
				for _, f := range rep.Failed() {
					t.Errorf("%s %s.%s: %s: %s", k, ops, mem, f.Name, f.Detail)
				}
				built++
			}
		}
		t.Logf("%s: %d members built, checked with GNU as and the oracle; %d not implementable", k, built, refused)
		if built < 12 {
			t.Errorf("%s: only %d members", k, built)
		}
	}
}

// TestStructOpsLandingOracle runs the images with a landing sequence under the emulator: the
// caller enters at the ops table's pointer (past a kCFI word), through bti jc.
func TestStructOpsLandingOracle(t *testing.T) {
	for _, f := range []jit.Features{{IBT: true}, {CFI: jit.CFIKCFI, CFIHash: 0x3b9aca07}, {IBT: true, CFI: jit.CFIKCFI, CFIHash: 0x3b9aca07}} {
		req := soRequest(btfmodel.Kernel72, "tcp_congestion_ops", "ssthresh")
		req.Features = f
		rep, err := emu.Run(req, emu.Options{Clobber: true})
		if err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		for _, c := range rep.Failed() {
			t.Errorf("%+v: %s: %s", f, c.Name, c.Detail)
		}
		if len(rep.Checks) < 10 {
			t.Errorf("%+v: only %d checks", f, len(rep.Checks))
		}
	}
}
