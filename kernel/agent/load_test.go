package main

import (
	"testing"
	"unsafe"
)

// The offsets of union bpf_attr's BPF_PROG_LOAD members, as the 6.12 vmlinux BTF
// (testdata/kernel/6.12-amd64) has them.
func TestProgLoadAttrLayout(t *testing.T) {
	var a progLoadAttr
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"insns", unsafe.Offsetof(a.Insns), 8},
		{"log_buf", unsafe.Offsetof(a.LogBuf), 32},
		{"prog_name", unsafe.Offsetof(a.ProgName), 48},
		{"expected_attach_type", unsafe.Offsetof(a.ExpectedAttachType), 68},
		{"func_info", unsafe.Offsetof(a.FuncInfo), 80},
		{"line_info", unsafe.Offsetof(a.LineInfo), 96},
		{"attach_btf_id", unsafe.Offsetof(a.AttachBTFID), 108},
		{"fd_array", unsafe.Offsetof(a.FdArray), 120},
		{"log_true_size", unsafe.Offsetof(a.LogTrueSize), 140},
		{"size", unsafe.Sizeof(a), 144},
	} {
		if c.got != c.want {
			t.Errorf("%s at %d, want %d", c.name, c.got, c.want)
		}
	}
}

func TestObjName(t *testing.T) {
	n := objName("fentry/tcp-v4.connect_long_name")
	if got := string(n[:15]); got != "fentry_tcp_v4.c" || n[15] != 0 {
		t.Errorf("objName: %q", n)
	}
}
