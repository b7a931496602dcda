package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/jit"
)

// attachTraceFsession is BPF_TRACE_FSESSION (include/uapi/linux/bpf.h, 7.0), which
// cilium/ebpf does not know: fsession programs are loaded with BPF_PROG_LOAD directly.
const attachTraceFsession = ebpf.AttachType(58)

// The session kfuncs (kernel/trace/bpf_trace.c, 7.x) take the program's ctx; the verifier
// inlines both. Calling bpf_session_cookie is what gives a program a cookie slot.
const (
	kfuncSessionCookie   = "bpf_session_cookie"
	kfuncSessionIsReturn = "bpf_session_is_return"
)

// fsessionInsns is an fsession program: it asks bpf_session_is_return (so that the program
// really is a session program reading ctx[-1]), calls bpf_session_cookie when the request
// says so, calls bpf_get_func_ip for FuncIP, and returns 0.
func fsessionInsns(spec *btf.Spec, p jit.Prog) (asm.Instructions, error) {
	kfunc := func(name string) (asm.Instruction, error) {
		if spec == nil {
			return asm.Instruction{}, fmt.Errorf("kfunc %s: no kernel BTF", name)
		}
		f, err := funcByName(spec, name)
		if err != nil {
			return asm.Instruction{}, fmt.Errorf("kfunc %s: %w", name, err)
		}
		id, err := spec.TypeID(f)
		if err != nil {
			return asm.Instruction{}, err
		}
		return asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call), Src: asm.PseudoKfuncCall, Constant: int64(id)}, nil
	}
	in := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}
	isRet, err := kfunc(kfuncSessionIsReturn)
	if err != nil {
		return nil, err
	}
	in = append(in, isRet)
	if p.SessionCookie {
		ck, err := kfunc(kfuncSessionCookie)
		if err != nil {
			return nil, err
		}
		in = append(in, asm.Mov.Reg(asm.R1, asm.R6), ck)
	}
	if p.FuncIP {
		in = append(in, asm.Mov.Reg(asm.R1, asm.R6), asm.FnGetFuncIp.Call())
	}
	return append(in, asm.Mov.Imm(asm.R0, 0), asm.Return()), nil
}

// loadError is a refused raw load: the errno and the verifier's log.
type loadError struct {
	errno error // a kernelErrno
	log   string
}

func (e *loadError) Error() string {
	lines := strings.Split(strings.TrimSpace(e.log), "\n")
	msg := e.errno.Error()
	if len(lines) > 0 && lines[0] != "" {
		// The verifier's reason is its first line for attach refusals; the rest is statistics.
		msg += ": " + lines[0]
	}
	return "load program: " + msg
}

func (e *loadError) Unwrap() error { return e.errno }

// loadFsession loads an fsession program against kernel function fn with BPF_PROG_LOAD.
func loadFsession(spec *btf.Spec, fn string, p jit.Prog) (*ebpf.Program, error) {
	if spec == nil {
		return nil, errors.New("fsession: no kernel BTF to find the target in")
	}
	if _, err := funcByName(spec, fn); err != nil {
		return nil, fmt.Errorf("fsession target %s: %w", fn, err)
	}
	insns, err := fsessionInsns(spec, p)
	if err != nil {
		return nil, err
	}
	return loadTracingRaw(spec, fn, attachTraceFsession, "tj_fsess", insns, p.Sleepable)
}

// loadTracingRaw loads a tracing program of attach type at against kernel function fn (the
// FUNC of exactly that name) with BPF_PROG_LOAD, without cilium/ebpf's target lookup.
func loadTracingRaw(spec *btf.Spec, fn string, at ebpf.AttachType, name string, insns asm.Instructions, sleepable bool) (*ebpf.Program, error) {
	target, err := funcByName(spec, fn)
	if err != nil {
		return nil, fmt.Errorf("%s target %s: %w", attachName(at), fn, err)
	}
	btfID, err := spec.TypeID(target)
	if err != nil {
		return nil, err
	}
	var code bytes.Buffer
	if err := insns.Marshal(&code, binary.LittleEndian); err != nil {
		return nil, err
	}
	license := []byte("GPL\x00")
	logBuf := make([]byte, 1<<16)
	attr := progLoadAttr{
		ProgType: uint32(ebpf.Tracing), InsnCnt: uint32(code.Len() / asm.InstructionSize),
		Insns: uint64(uintptr(unsafe.Pointer(&code.Bytes()[0]))), License: uint64(uintptr(unsafe.Pointer(&license[0]))),
		LogLevel: 1, LogSize: uint32(len(logBuf)), LogBuf: uint64(uintptr(unsafe.Pointer(&logBuf[0]))),
		ExpectedAttachType: uint32(at), AttachBTFID: uint32(btfID),
	}
	copy(attr.ProgName[:], name)
	if sleepable {
		attr.ProgFlags |= bpfFSleepable
	}
	fd, err := progLoad(&attr, code.Bytes(), license, logBuf)
	if err != nil {
		return nil, &loadError{errno: err, log: string(bytes.TrimRight(logBuf, "\x00"))}
	}
	return ebpf.NewProgramFromFD(fd)
}

// attachName is how an error names the program kind: "fsession target F: ...".
func attachName(at ebpf.AttachType) string {
	switch at {
	case attachTraceFsession:
		return "fsession"
	case ebpf.AttachTraceFEntry:
		return "fentry"
	case ebpf.AttachTraceFExit:
		return "fexit"
	case ebpf.AttachModifyReturn:
		return "fmod_ret"
	}
	return fmt.Sprintf("attach type %d", at)
}
