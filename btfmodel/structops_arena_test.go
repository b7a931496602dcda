package btfmodel

import (
	"bytes"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// arenaSpec is a BTF with sched_ext_ops_cid's set_cmask member and its CFI stub, the stub's
// second parameter named cmask (7.2) or cmask__arena (7.3.4's BTF: Debian's
// linux-image-7.3.4+deb13-cloud-amd64).
func arenaSpec(t *testing.T, cmask string) *btf.Spec {
	t.Helper()
	task := &btf.Struct{Name: "task_struct", Size: 8, Members: []btf.Member{{Name: "pid", Type: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}}}}
	mask := &btf.Struct{Name: "scx_cmask", Size: 8, Members: []btf.Member{{Name: "bits", Type: &btf.Int{Name: "long unsigned int", Size: 8}}}}
	params := func(second string) []btf.FuncParam {
		return []btf.FuncParam{{Name: "p", Type: &btf.Pointer{Target: task}}, {Name: second, Type: &btf.Pointer{Target: &btf.Const{Type: mask}}}}
	}
	ops := &btf.Struct{Name: "sched_ext_ops_cid", Size: 16, Members: []btf.Member{
		{Name: "set_cmask", Type: &btf.Pointer{Target: &btf.FuncProto{Return: &btf.Void{}, Params: params("")}}},
		{Name: "flags", Type: &btf.Int{Name: "long long unsigned int", Size: 8}, Offset: 64},
	}}
	value := &btf.Struct{Name: "bpf_struct_ops_sched_ext_ops_cid", Size: 16, Members: []btf.Member{{Name: "data", Type: ops}}}
	stub := &btf.Func{Name: "sched_ext_ops_cid__set_cmask", Linkage: btf.StaticFunc, Type: &btf.FuncProto{Return: &btf.Void{}, Params: params(cmask)}}
	b, err := btf.NewBuilder([]btf.Type{ops, value, stub}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := btf.LoadSpecFromReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// The 7.3.4 kernel refuses a program for set_cmask at load, in its verifier log: "arena
// argument of set_cmask requires a program with an associated arena" (EINVAL). What marks
// the argument is the stub's parameter name, so the same table with 7.2's stub loads.
func TestStructOpsArenaArgument(t *testing.T) {
	for _, tc := range []struct {
		param string
		ok    bool
	}{{"cmask", true}, {"cmask__arena", false}, {"cmask__arena__nullable", false}, {"cmask__nullable", true}} {
		m, err := StructOpsModel(arenaSpec(t, tc.param), "sched_ext_ops_cid", "set_cmask", Kernel72, AMD64)
		if err != nil {
			t.Fatal(err)
		}
		v := m.Verdict
		switch {
		case v.OK != tc.ok:
			t.Errorf("stub parameter %s: verdict %+v, want ok=%v", tc.param, v, tc.ok)
		case !tc.ok && (v.Stage != StageLoad || v.Errno != "EINVAL" || !v.KernelMsg ||
			v.Msg != "arena argument of set_cmask requires a program with an associated arena"):
			t.Errorf("stub parameter %s: %+v", tc.param, v)
		}
	}
}
