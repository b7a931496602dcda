package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/jit"
)

// twinSpec is a BTF with a function and its CO-RE flavour twins in 7.2's order:
// scx_bpf_dsq_move_to_local, then ___v2 and ___v2_impl. All three have the essential name
// scx_bpf_dsq_move_to_local; cilium/ebpf v0.22's AnyTypesByName drops the non-matching
// names from that list but skips the one after each it drops, so ___v2_impl stays and
// TypeByName finds two FUNCs.
func twinSpec(t *testing.T) *btf.Spec {
	t.Helper()
	s32 := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	proto := &btf.FuncProto{Return: s32, Params: []btf.FuncParam{{Name: "dsq_id", Type: s32}}}
	v1 := &btf.Func{Name: "scx_bpf_dsq_move_to_local", Type: proto, Linkage: btf.GlobalFunc}
	v2 := &btf.Func{Name: "scx_bpf_dsq_move_to_local___v2", Type: proto, Linkage: btf.GlobalFunc}
	v2impl := &btf.Func{Name: "scx_bpf_dsq_move_to_local___v2_impl", Type: proto, Linkage: btf.GlobalFunc}
	b, err := btf.NewBuilder([]btf.Type{s32, proto, v1, v2, v2impl}, nil)
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

func TestFuncByNameExact(t *testing.T) {
	spec := twinSpec(t)
	var f *btf.Func
	if err := spec.TypeByName("scx_bpf_dsq_move_to_local", &f); !errors.Is(err, btf.ErrMultipleMatches) {
		t.Fatalf("cilium/ebpf's TypeByName: %v; the twin no longer makes it ambiguous", err)
	}
	for _, name := range []string{"scx_bpf_dsq_move_to_local", "scx_bpf_dsq_move_to_local___v2", "scx_bpf_dsq_move_to_local___v2_impl"} {
		f, err := funcByName(spec, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f.Name != name {
			t.Errorf("%s: found %s", name, f.Name)
		}
	}
	// ___v2_impl meets the same skip (___v2 stays); ___v2 does not.
	for name, fails := range map[string]bool{"scx_bpf_dsq_move_to_local": true, "scx_bpf_dsq_move_to_local___v2_impl": true, "scx_bpf_dsq_move_to_local___v2": false} {
		var f *btf.Func
		if got := ciliumLookupFails(spec, name); got != fails || got != errors.Is(spec.TypeByName(name, &f), btf.ErrMultipleMatches) {
			t.Errorf("%s: ciliumLookupFails %v, want %v", name, got, fails)
		}
	}
	if ciliumLookupFails(nil, "x") {
		t.Error("no kernel BTF: nothing for cilium/ebpf to fail on")
	}
	_, err := funcByName(spec, "bpf_session_cookie")
	if !errors.Is(err, btf.ErrNotFound) || err.Error() != "not found" {
		t.Errorf("a missing kfunc: %v; want cilium/ebpf's \"not found\"", err)
	}
	// The fsession loader finds its target before the kfuncs: no "multiple matching types".
	_, err = loadFsession(spec, "scx_bpf_dsq_move_to_local", jit.Prog{Kind: jit.Fsession})
	if err == nil || strings.Contains(err.Error(), "multiple") || !strings.Contains(err.Error(), "kfunc bpf_session_is_return: not found") {
		t.Errorf("loadFsession: %v; want the target found and the missing kfunc named", err)
	}
}
