package main

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/trampjit/trampjit/kernel/wire"
)

// progLoadAttr is the BPF_PROG_LOAD part of union bpf_attr (include/uapi/linux/bpf.h) up to
// log_true_size (6.4+; older kernels only require it to be zero). The agent fills it itself
// so that the kernel sees exactly the request's bytecode: no library rewrites it first.
type progLoadAttr struct {
	ProgType           uint32
	InsnCnt            uint32
	Insns              uint64
	License            uint64
	LogLevel           uint32
	LogSize            uint32
	LogBuf             uint64
	KernVersion        uint32
	ProgFlags          uint32
	ProgName           [16]byte
	ProgIfindex        uint32
	ExpectedAttachType uint32
	ProgBTFFD          uint32
	FuncInfoRecSize    uint32
	FuncInfo           uint64
	FuncInfoCnt        uint32
	LineInfoRecSize    uint32
	LineInfo           uint64
	LineInfoCnt        uint32
	AttachBTFID        uint32
	AttachBTFObjFD     uint32
	CoreReloCnt        uint32
	FdArray            uint64
	CoreRelos          uint64
	CoreReloRecSize    uint32
	LogTrueSize        uint32 // out: the log size the verifier wanted (6.4+)
}

const bpfFSleepable = 1 << 4 // BPF_F_SLEEPABLE

// Log buffer bounds: the buffer starts at minLogSize and grows on ENOSPC up to the
// request's limit, by default defaultLogLimit (a 1 GiB guest, and the log must still cross
// the serial console).
const (
	minLogSize      = 256 << 10
	defaultLogLimit = 16 << 20
)

// progLoad calls BPF_PROG_LOAD, retrying while the verifier is interrupted (EAGAIN: it
// yields to pending signals, and the Go runtime sends SIGURG to preempt).
func progLoad(attr *progLoadAttr, keep ...any) (int, error) {
	for tries := 0; ; tries++ {
		fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_LOAD, uintptr(unsafe.Pointer(attr)), unsafe.Sizeof(*attr))
		runtime.KeepAlive(keep)
		if errno == unix.EAGAIN && tries < 20 {
			continue
		}
		if errno != 0 {
			return -1, kernelErrno{errno}
		}
		return int(fd), nil
	}
}

// loaded is the outcome of loadWithLog.
type loaded struct {
	fd        int
	log       []byte
	truncated bool // the log outgrew the limit
	headOnly  bool // ... and the kernel kept its start (before 6.4), so the reason is cut off
}

// loadWithLog loads attr at the given log level into the reusable buffer *buf, growing it
// on ENOSPC (to what log_true_size asks for on 6.4+, else twice as much) up to limit bytes.
// A log that outgrows the limit is returned as far as the kernel wrote it (6.4+ keeps its
// end, older kernels its start), truncated, and the verdict then comes from a second load
// without a log (a full log alone makes the kernel fail the load with ENOSPC).
func loadWithLog(attr *progLoadAttr, level uint32, limit int, buf *[]byte, keep ...any) (loaded, error) {
	if level == 0 {
		fd, err := progLoad(attr, keep...)
		return loaded{fd: fd}, err
	}
	if start := min(minLogSize, limit); len(*buf) < start || len(*buf) > limit {
		*buf = make([]byte, start)
	}
	for {
		b := *buf
		b[0] = 0 // a load refused before the verifier runs leaves the buffer untouched
		attr.LogLevel, attr.LogSize, attr.LogBuf = level, uint32(len(b)), uint64(uintptr(unsafe.Pointer(&b[0])))
		attr.LogTrueSize = 0
		fd, err := progLoad(attr, append(keep, b)...)
		if err == nil || !isErrno(err, unix.ENOSPC) {
			return loaded{fd: fd, log: b}, err
		}
		if len(b) >= limit {
			break
		}
		n := 2 * len(b)
		if want := int(attr.LogTrueSize); want > len(b) {
			n = want + 1
		}
		*buf = make([]byte, min(n, limit))
	}
	l := loaded{log: append([]byte(nil), (*buf)...), truncated: true, headOnly: attr.LogTrueSize == 0}
	attr.LogLevel, attr.LogSize, attr.LogBuf, attr.LogTrueSize = 0, 0, 0, 0
	var err error
	l.fd, err = progLoad(attr, keep...)
	return l, err
}

func isErrno(err error, e unix.Errno) bool {
	k, ok := err.(kernelErrno)
	return ok && k.Errno == e
}

// objName copies a BPF object name as the kernel accepts it (alphanumerics, '_' and '.',
// at most 15 characters): other characters become '_'.
func objName(s string) [16]byte {
	var n [16]byte
	for i := 0; i < len(s) && i < 15; i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			c = '_'
		}
		n[i] = c
	}
	return n
}

// mapCreateAttr is union bpf_attr for BPF_MAP_CREATE, up to btf_vmlinux_value_type_id.
type mapCreateAttr struct {
	MapType               uint32
	KeySize               uint32
	ValueSize             uint32
	MaxEntries            uint32
	MapFlags              uint32
	InnerMapFD            uint32
	NumaNode              uint32
	MapName               [16]byte
	MapIfindex            uint32
	BTFFD                 uint32
	BTFKeyTypeID          uint32
	BTFValueTypeID        uint32
	BTFVmlinuxValueTypeID uint32
}

// mapElemAttr is union bpf_attr for BPF_MAP_UPDATE_ELEM (and, with the map FD alone,
// BPF_MAP_FREEZE).
type mapElemAttr struct {
	MapFD uint32
	_     uint32
	Key   uint64
	Value uint64
	Flags uint64
}

// mapCreate is the BPF_MAP_CREATE syscall (a variable so that a test can stand in for the kernel).
var mapCreate = func(attr *mapCreateAttr) (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_MAP_CREATE, uintptr(unsafe.Pointer(attr)), unsafe.Sizeof(*attr))
	if errno != 0 {
		return -1, fmt.Errorf("BPF_MAP_CREATE: %w", kernelErrno{errno})
	}
	return int(r), nil
}

// mapCreateRetry creates the map; if that fails with key or value BTF it tries once more without
// any, as libbpf's bpf_object__create_map does ("Retrying without BTF."): some map types refuse
// key/value BTF (BPF_MAP_TYPE_CGROUP_ARRAY has no map_check_btf, so map_check_btf in
// kernel/bpf/syscall.c answers ENOTSUPP), and libbpf-tools' programs load only because libbpf
// creates such maps again without it.
func mapCreateRetry(attr mapCreateAttr) (int, error) {
	fd, err := mapCreate(&attr)
	if err != nil && (attr.BTFKeyTypeID != 0 || attr.BTFValueTypeID != 0) {
		attr.BTFFD, attr.BTFKeyTypeID, attr.BTFValueTypeID = 0, 0, 0
		fd, err = mapCreate(&attr)
	}
	return fd, err
}

// createMap creates a map from its spec, writes its data (key 0) and freezes it if asked.
// Raw syscalls, so that nothing is done to a map that its wire.VerifyMap does not say (cilium/ebpf
// freezes maps named .rodata as it creates them, for one).
func createMap(ms wire.VerifyMap) (int, error) {
	attr := mapCreateAttr{MapType: wire.MapTypes[ms.Type], KeySize: ms.KeySize, ValueSize: ms.ValueSize,
		MaxEntries: ms.MaxEntries, MapFlags: ms.Flags, MapName: objName(ms.Name)}
	if ms.Type == "perf_event_array" && attr.MaxEntries == 0 {
		attr.MaxEntries = uint32(runtime.NumCPU()) // as libbpf and cilium/ebpf fill it in
	}
	if len(ms.BTF) > 0 {
		// libbpf's bpf_map_create with btf_fd: local storage maps (bpf_local_storage_map_alloc_check
		// wants key and value BTF) and values with a bpf_spin_lock need it.
		h, err := btf.NewHandleFromRawBTF(ms.BTF)
		if err != nil {
			return -1, fmt.Errorf("load the map's BTF: %w", err)
		}
		defer h.Close() // the map holds its own reference
		attr.BTFFD, attr.BTFKeyTypeID, attr.BTFValueTypeID = uint32(h.FD()), ms.BTFKeyTypeID, ms.BTFValueTypeID
	}
	fd, err := mapCreateRetry(attr)
	if err != nil {
		return -1, err
	}
	if ms.Data != nil {
		key := uint32(0)
		e := mapElemAttr{MapFD: uint32(fd), Key: uint64(uintptr(unsafe.Pointer(&key))), Value: uint64(uintptr(unsafe.Pointer(&ms.Data[0])))}
		_, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_MAP_UPDATE_ELEM, uintptr(unsafe.Pointer(&e)), unsafe.Sizeof(e))
		runtime.KeepAlive(&key)
		runtime.KeepAlive(ms.Data)
		if errno != 0 {
			unix.Close(fd)
			return -1, fmt.Errorf("write its data (BPF_MAP_UPDATE_ELEM): %w", kernelErrno{errno})
		}
	}
	if ms.Freeze {
		e := mapElemAttr{MapFD: uint32(fd)}
		if _, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_MAP_FREEZE, uintptr(unsafe.Pointer(&e)), unsafe.Sizeof(e)); errno != 0 {
			unix.Close(fd)
			return -1, fmt.Errorf("BPF_MAP_FREEZE: %w", kernelErrno{errno})
		}
	}
	return fd, nil
}
