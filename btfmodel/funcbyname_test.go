package btfmodel

import (
	"strings"
	"testing"
)

// A misspelt function gets the nearest names the kernel's BTF really has.
func TestFuncByNameSuggests(t *testing.T) {
	spec := loadSpec(t, "6.12-amd64")
	_, err := FuncByName(spec, "tcp_v4_conect")
	if err == nil || !strings.Contains(err.Error(), "function tcp_v4_conect not found in BTF (did you mean tcp_v4_connect") {
		t.Errorf("got %v", err)
	}
	_, err = FuncByName(spec, "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz")
	if err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("a name far from every function: got %v", err)
	}
}

// A name with "___" inside is not a CO-RE flavour of another: cilium/ebpf's AnyTypesByName
// cuts "____sys_recvmsg" at its last "___" and matches every FUNC whose name cuts to "_"
// (6.12 riscv64's first is ____ip_mc_inc_group), and "scx_bpf_dsq_move_to_local" finds its
// ___v2 and ___v2_impl twins in 7.2. The kernel looks names up exactly (btf_find_by_name_kind).
func TestFuncByNameExact(t *testing.T) {
	for _, c := range []struct{ profile, name string }{
		{"6.12-riscv64", "____sys_recvmsg"},
		{"6.12-amd64", "____sys_recvmsg"},
		{"7.2-amd64", "scx_bpf_dsq_move_to_local"},
		{"7.2-amd64", "scx_bpf_dsq_move_to_local___v2"},
	} {
		spec := corpusSpec(t, c.profile)
		fn, err := FuncByName(spec, c.name)
		if err != nil {
			t.Errorf("%s %s: %v", c.profile, c.name, err)
			continue
		}
		if fn.Name != c.name {
			t.Errorf("%s: FuncByName(%q) = %s", c.profile, c.name, fn.Name)
		}
	}
	if fn, err := FuncByName(corpusSpec(t, "6.12-riscv64"), "____"); err == nil {
		t.Errorf("FuncByName(\"____\") = %s, want not found", fn.Name)
	}
}

