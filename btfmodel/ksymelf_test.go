package btfmodel

import (
	"bytes"
	"os"
	"testing"

	"github.com/cilium/ebpf"
)

// cilium/ebpf refuses typed .ksyms variables; TypedKsyms retypes them void and names them.
func TestTypedKsyms(t *testing.T) {
	data, err := os.ReadFile("../testdata/verifier/tpbtf.bpf.o")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(data)); err == nil {
		t.Fatal("cilium/ebpf now reads typed ksyms: TypedKsyms may be unnecessary")
	}
	out, typed, err := TypedKsyms(data)
	if err != nil {
		t.Fatal(err)
	}
	if !typed["runqueues"] || !typed["no_such_percpu_var"] || len(typed) != 2 {
		t.Errorf("typed %v, want runqueues and no_such_percpu_var (kfuncs are not variables)", typed)
	}
	if _, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(out)); err != nil {
		t.Errorf("patched object: %v", err)
	}
	if bytes.Equal(out, data) {
		t.Error("the object was changed in place or not at all")
	}
	_, _, _ = TypedKsyms(out[:len(out)/3]) // a truncated object: an error or nothing, no panic
}
