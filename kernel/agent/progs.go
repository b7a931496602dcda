package main

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/trampjit/trampjit/jit"
)

// attachTypes maps a request kind to the program type and attach type the kernel expects.
func attachTypes(k jit.Kind) (ebpf.ProgramType, ebpf.AttachType, error) {
	switch k {
	case jit.Fentry:
		return ebpf.Tracing, ebpf.AttachTraceFEntry, nil
	case jit.Fexit:
		return ebpf.Tracing, ebpf.AttachTraceFExit, nil
	case jit.ModRet:
		return ebpf.Tracing, ebpf.AttachModifyReturn, nil
	case jit.LSM:
		return ebpf.LSM, ebpf.AttachLSMMac, nil
	case jit.Fsession:
		return ebpf.Tracing, attachTraceFsession, nil
	}
	return 0, 0, fmt.Errorf("unknown program kind %q", k)
}

// loadProg loads a program of kind p against fn (in target, a loaded BPF program, if set;
// kspec is the kernel BTF, for fsession programs, which it loads itself). Without insns it
// is minimal: it returns 0
// and, when p.FuncIP is set, calls bpf_get_func_ip first (that call is what makes the
// kernel set IP_ARG).
func loadProg(kspec *btf.Spec, fn string, p jit.Prog, insns asm.Instructions, target *ebpf.Program) (*ebpf.Program, error) {
	if p.Kind == jit.Fsession {
		if target != nil || insns != nil {
			return nil, errors.New("fsession programs are captured on kernel functions, without recording")
		}
		return loadFsession(kspec, fn, p)
	}
	typ, at, err := attachTypes(p.Kind)
	if err != nil {
		return nil, err
	}
	if insns == nil {
		if p.FuncIP {
			insns = append(insns, asm.FnGetFuncIp.Call())
		}
		insns = append(insns, asm.Mov.Imm(asm.R0, 0), asm.Return())
	}
	name := "tj_" + string(p.Kind[:min(len(p.Kind), 5)])
	if typ == ebpf.Tracing && target == nil && ciliumLookupFails(kspec, fn) {
		return loadTracingRaw(kspec, fn, at, name, insns, p.Sleepable)
	}
	spec := &ebpf.ProgramSpec{
		Name:         name,
		Type:         typ,
		AttachType:   at,
		AttachTo:     fn,
		License:      "GPL",
		Instructions: insns,
	}
	if typ == ebpf.LSM {
		spec.AttachTo = strings.TrimPrefix(fn, "bpf_lsm_") // cilium/ebpf adds the prefix
	}
	spec.AttachTarget = target
	if p.Sleepable {
		spec.Flags |= unix.BPF_F_SLEEPABLE
	}
	prog, err := ebpf.NewProgramWithOptions(spec, ebpf.ProgramOptions{LogSizeStart: 1 << 16})
	if err != nil {
		return nil, err
	}
	return prog, nil
}

// linkCreateAttr is the BPF_LINK_CREATE part of union bpf_attr for tracing links
// (include/uapi/linux/bpf.h, link_create.tracing): target_btf_id at 16, cookie at 24.
type linkCreateAttr struct {
	ProgFD      uint32
	TargetFD    uint32
	AttachType  uint32
	Flags       uint32
	TargetBTFID uint32
	_           uint32
	Cookie      uint64
	_           [8]uint64 // zero tail: the kernel checks unused attr bytes are zero
}

// linkCreate attaches a tracing or LSM program with its cookie through BPF_LINK_CREATE
// directly (cilium/ebpf's tracing attach with a cookie failed with EINVAL on 6.12).
func linkCreate(prog *ebpf.Program, at ebpf.AttachType, cookie uint64) (int, error) {
	attr := linkCreateAttr{ProgFD: uint32(prog.FD()), AttachType: uint32(at), Cookie: cookie}
	fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_LINK_CREATE, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return -1, kernelErrno{errno}
	}
	return int(fd), nil
}

// kernelErrno names the kernel-internal errnos libc does not know (ENOTSUPP, 524).
type kernelErrno struct{ unix.Errno }

func (e kernelErrno) Error() string {
	if e.Errno == 524 {
		return "ENOTSUPP (errno 524)"
	}
	return e.Errno.Error()
}

func (e kernelErrno) Unwrap() error { return e.Errno }

// errnoOf names the errno inside err ("EINVAL"), or "".
func errnoOf(err error) string {
	var e unix.Errno
	if errors.As(err, &e) {
		if n := unix.ErrnoName(e); n != "" {
			return n
		}
		if e == 524 {
			return "ENOTSUPP" // kernel-internal, no libc name
		}
		return fmt.Sprintf("errno %d", int(e))
	}
	return ""
}

// verifierLog returns the verifier's log from a load error, if it has one.
func verifierLog(err error) string {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return strings.Join(ve.Log, "\n")
	}
	var le *loadError
	if errors.As(err, &le) {
		return strings.TrimSpace(le.log)
	}
	return ""
}
