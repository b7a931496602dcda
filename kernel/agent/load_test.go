package main

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
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

// A map whose creation with key/value BTF fails is created again without BTF, as libbpf does;
// one created without BTF, or accepted with it, is created once.
func TestMapCreateRetryWithoutBTF(t *testing.T) {
	defer func(f func(*mapCreateAttr) (int, error)) { mapCreate = f }(mapCreate)
	var calls []mapCreateAttr
	mapCreate = func(a *mapCreateAttr) (int, error) {
		calls = append(calls, *a)
		if a.BTFFD != 0 || a.BTFKeyTypeID != 0 || a.BTFValueTypeID != 0 {
			return -1, kernelErrno{unix.Errno(524)} // ENOTSUPP, as for BPF_MAP_TYPE_CGROUP_ARRAY
		}
		return 7, nil
	}
	fd, err := mapCreateRetry(mapCreateAttr{MapType: 8, KeySize: 4, ValueSize: 4, MaxEntries: 1, BTFFD: 3, BTFKeyTypeID: 1, BTFValueTypeID: 2})
	if err != nil || fd != 7 {
		t.Fatalf("with BTF refused: fd %d, err %v; want the retry's fd 7", fd, err)
	}
	if len(calls) != 2 || calls[1].BTFFD != 0 || calls[1].BTFKeyTypeID != 0 || calls[1].BTFValueTypeID != 0 || calls[1].MapType != 8 || calls[1].KeySize != 4 {
		t.Fatalf("calls %+v: want a second one without BTF, the rest unchanged", calls)
	}

	calls = nil
	mapCreate = func(a *mapCreateAttr) (int, error) {
		calls = append(calls, *a)
		return -1, kernelErrno{unix.EINVAL}
	}
	if _, err := mapCreateRetry(mapCreateAttr{MapType: 1}); err == nil || len(calls) != 1 {
		t.Fatalf("without BTF: err %v after %d calls; want the error after one", err, len(calls))
	}
	calls = nil
	if _, err := mapCreateRetry(mapCreateAttr{MapType: 1, BTFFD: 3, BTFValueTypeID: 2}); !isErrno(err, unix.EINVAL) || len(calls) != 2 {
		t.Fatalf("both refused: err %v after %d calls; want the second EINVAL after two", err, len(calls))
	}
}
