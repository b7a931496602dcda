package main

import (
	"bytes"
	"io"
	"os"
	"reflect"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/ulikunitz/xz"
)

// The tables discovery finds in Debian's 7.2 amd64 BTF are the ones the kernel registers
// there (bpf_struct_ops_<ops> with <ops> as data), not bpf_struct_ops_map, _value, _link,
// _desc or _arg_info; Except leaves tables out.
func TestOpsTables(t *testing.T) {
	b, err := os.ReadFile("../../testdata/kernel/7.2-amd64/vmlinux.btf.xz")
	if err != nil {
		t.Skip(err)
	}
	r, err := xz.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := btf.LoadSpecFromReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	all := []string{"Qdisc_ops", "bpf_dummy_ops", "io_uring_bpf_ops", "sched_ext_ops", "sched_ext_ops_cid", "tcp_congestion_ops"}
	if got := opsTables(spec, nil); !reflect.DeepEqual(got, all) {
		t.Errorf("tables %v, want %v", got, all)
	}
	if got := opsTables(spec, all[1:]); !reflect.DeepEqual(got, all[:1]) {
		t.Errorf("except all but Qdisc_ops: %v", got)
	}
}
