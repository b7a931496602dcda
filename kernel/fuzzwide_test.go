package kernel

import (
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// TestFuzzWideReturn: kernel fuzz on 7.2 riscv64 (fuzz-1-1062) put fexit and fsession on
// get_signed_val (lib/ubsan.c), which returns an __int128; 7.2 refused the fexit at load
// with EOPNOTSUPP, "Attach to function get_signed_val with a >8 byte return value is not
// supported for this attach type". The model, distilling returns of up to 16 bytes,
// accepted. Captured alone, fexit is refused the same and fentry loads; fmod_ret alone
// (wide-fmod-ret) is refused the same, not as "is not modifiable".
func TestFuzzWideReturn(t *testing.T) {
	cases := readFuzzCases(t, "7.2-riscv64-wide-return", "7.2-riscv64")
	if len(cases) != 2 {
		t.Fatalf("%d cases, want 2", len(cases))
	}
	for _, c := range cases {
		if c.Stage != "load" || c.Errno != "ENOTSUP" {
			t.Fatalf("%s: %s at %s: not the captured case", c.ID, c.Errno, c.Stage)
		}
		if d := Diff(&c); d.Verdict != Match {
			t.Errorf("%s (%s): %s: %s", c.ID, c.Request.Func, d.Verdict, d.Note)
		}
	}
	c := cases[0]
	spec, err := btfmodel.LoadFile(filepath.Join("..", "testdata", "kernel", "7.2-riscv64", "vmlinux.btf.xz"), nil)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := btfmodel.FuncByName(spec, "get_signed_val")
	if err != nil {
		t.Fatal(err)
	}
	m, err := btfmodel.Distill(fn, btfmodel.Kernel72)
	if err != nil {
		t.Fatal(err)
	}
	want := map[jit.Kind]bool{jit.Fentry: true, jit.Fexit: false, jit.Fsession: false, jit.ModRet: false}
	for k, ok := range want {
		v := btfmodel.CheckAttach(fn.Name, m, nil, k, btfmodel.AttachEnv{Kernel: btfmodel.Kernel72, Arch: btfmodel.RISCV64})
		if v.OK != ok || (!ok && v.Errno != "EOPNOTSUPP") {
			t.Errorf("7.2 %s on get_signed_val: %+v", k, v)
		}
		// 6.12 has no such check: its refusal would be something else, never this one.
		v = btfmodel.CheckAttach(fn.Name, m, nil, k, btfmodel.AttachEnv{Kernel: btfmodel.Kernel612, Arch: btfmodel.RISCV64})
		if k != jit.ModRet && k != jit.Fsession && !v.OK {
			t.Errorf("6.12 %s on an __int128 return: %+v", k, v)
		}
	}

	// The generator draws as before the rule: seed 1's case 1062 is still the captured one.
	p := fuzzPool(t, "7.2", "riscv64")
	gen := p.Generate(1, 1063)[1062]
	if gen.Func != c.Request.Func || !reflect.DeepEqual(gen.Progs, c.Request.Progs) {
		t.Errorf("fuzz-1-1062 is now %s %+v: the rule changed what the generator draws", gen.Func, gen.Progs)
	}
}

// TestWideReturnFuncs: the functions past btf_distill_func_proto whose return is wider than
// 8 bytes are those returning a 16-byte integer (a struct return is refused by distill):
// get_signed_val in the 7.2 arm64 and riscv64 BTF, none in the x86_64 one; no catalogue
// case targets one.
func TestWideReturnFuncs(t *testing.T) {
	for _, prof := range []string{"7.2-amd64", "7.2-arm64", "7.2-riscv64"} {
		spec, err := btfmodel.LoadFile(filepath.Join("..", "testdata", "kernel", prof, "vmlinux.btf.xz"), nil)
		if err != nil {
			t.Fatal(err)
		}
		var wide []string
		for typ, err := range spec.All() {
			if err != nil {
				t.Fatal(err)
			}
			f, ok := typ.(*btf.Func)
			if !ok {
				continue
			}
			if i, ok := btf.UnderlyingType(f.Type.(*btf.FuncProto).Return).(*btf.Int); ok && i.Size > 8 && !slices.Contains(wide, f.Name) {
				wide = append(wide, f.Name)
			}
		}
		slices.Sort(wide)
		var want []string
		if prof != "7.2-amd64" {
			want = []string{"get_signed_val"}
		}
		if !slices.Equal(wide, want) {
			t.Errorf("%s: functions returning a wide integer: %v, want %v", prof, wide, want)
		}
		arch := prof[len("7.2-"):]
		for _, c := range Catalog("7.2", arch) {
			if slices.Contains(wide, c.Func) {
				t.Errorf("%s: catalogue case %s targets %s", prof, c.ID, c.Func)
			}
		}
	}
}

// TestFuzzFlavourName: kernel fuzz on 6.12 riscv64 (fuzz-1-1295) put an fexit program on
// ____sys_recvmsg. cilium/ebpf cuts a name at its last "___" to find CO-RE flavours, so the
// loader found "multiple matching types" and the model took another function of the same cut
// name (____ip_mc_inc_group: a 4-argument frame, 16 bytes short). The agent now loads such
// programs itself and the model looks names up exactly; captured again, the kernel's image
// is the model's byte for byte.
func TestFuzzFlavourName(t *testing.T) {
	cases := readFuzzCases(t, "6.12-riscv64-flavour-name", "6.12-riscv64")
	if len(cases) != 1 || cases[0].Request.Func != "____sys_recvmsg" || len(cases[0].Image) == 0 {
		t.Fatalf("want the one captured image on ____sys_recvmsg, got %d cases", len(cases))
	}
	if d := Diff(&cases[0]); d.Verdict != Match {
		t.Errorf("%s: %s: %s", cases[0].ID, d.Verdict, d.Note)
	}
}
