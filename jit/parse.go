package jit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
)

// maxRequestSize bounds a request document, and maxRequestProgs its programs.
const (
	maxRequestSize  = 16 << 20
	maxRequestProgs = 1024
)

// ReadRequest reads a request file; relative BTF paths resolve against its directory.
func ReadRequest(path string) (*Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	req, err := ParseRequest(f, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return req, nil
}

// ParseRequest decodes and validates a request. Unknown fields are errors, so that a typo
// cannot silently change an image.
func ParseRequest(r io.Reader, dir string) (*Request, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxRequestSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxRequestSize {
		return nil, fmt.Errorf("request larger than %d MiB", maxRequestSize>>20)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var req Request
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("request: %w", jsonErr(data, err))
	}
	if dec.More() {
		return nil, errors.New("request: more than one JSON value")
	}
	req.dir = dir
	if err := req.Validate(); err != nil {
		return nil, err
	}
	return &req, nil
}

// jsonErr adds the line and column to encoding/json's offset errors.
func jsonErr(data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return err
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(data[:off], '\n'))
	return fmt.Errorf("line %d column %d: %w", line, col, err)
}

// Validate checks what can be checked without BTF, with the kernel's limits.
func (r *Request) Validate() error {
	a, err := btfmodel.ParseArch(string(r.Arch))
	if err != nil || r.Arch == "" {
		return fmt.Errorf("request: arch %q: want amd64, arm64 or riscv64", r.Arch)
	}
	r.Arch = a // x86_64 and aarch64 are accepted as aliases; backends know one name each
	if _, err := btfmodel.ParseKernel(string(r.Kernel)); err != nil {
		return fmt.Errorf("request: kernel %q: want %s", r.Kernel, btfmodel.KernelNames())
	}
	if err := r.validateCFI(); err != nil {
		return err
	}
	if r.StructOps != nil {
		return r.validateStructOps()
	}
	switch {
	case r.Proto != "" && (r.BTF != "" || r.Func != ""):
		return errors.New("request: give either proto or btf+func, not both")
	case r.Proto == "" && (r.BTF == "" || r.Func == ""):
		return errors.New("request: needs btf and func, or proto")
	}
	if r.Target != "" && r.Target != "bpf" {
		return fmt.Errorf("request: target %q: want \"\" (a kernel function) or \"bpf\"", r.Target)
	}
	if len(r.Progs) == 0 {
		return errors.New("request: no progs: a trampoline exists only with programs attached")
	}
	if len(r.Progs) > maxRequestProgs {
		// More than the kernel links is a request the model refuses as the kernel does
		// (E2BIG, in Resolve); this bound only keeps what one request may allocate sane.
		return fmt.Errorf("request: %d programs: trampjit takes at most %d in one request, and the kernel links at most %d on one trampoline (BPF_MAX_TRAMP_LINKS)", len(r.Progs), maxRequestProgs, btfmodel.MaxTrampLinks)
	}
	if err := r.validateFlags(); err != nil {
		return err
	}
	for i, p := range r.Progs {
		if p.Kind == StructOpsProg {
			return fmt.Errorf("request: progs[%d]: kind struct_ops needs a struct_ops object naming the ops table and member", i)
		}
		if _, err := btfmodel.ParseAttachType(string(p.Kind)); err != nil {
			return fmt.Errorf("request: progs[%d]: %w", i, err)
		}
		if p.SessionCookie && p.Kind != Fsession {
			// bpf_session_cookie is an fsession kfunc; other programs cannot call it.
			return fmt.Errorf("request: progs[%d]: session_cookie is for fsession programs, not %s", i, p.Kind)
		}
	}
	if a := r.Addrs; a != nil {
		if len(a.Progs) != len(r.Progs) {
			return fmt.Errorf("request: addrs.progs has %d entries for %d progs", len(a.Progs), len(r.Progs))
		}
		if a.Image == 0 || a.Func == 0 {
			return errors.New("request: addrs needs at least image and func")
		}
	}
	return nil
}

// validateCFI checks features.cfi: a mode the kernel has on the request's arch, and a hash
// only with a mode that checks one.
func (r *Request) validateCFI() error {
	f := r.Features
	switch f.CFI {
	case CFINone:
		if f.CFIHash != 0 {
			return errors.New("request: features.cfi_hash without features.cfi (kcfi or fineibt)")
		}
	case CFIKCFI:
	case CFIFineIBT:
		if r.Arch != btfmodel.AMD64 {
			return fmt.Errorf("request: features.cfi %q: FineIBT is x86_64 only (want \"\" or \"kcfi\" on %s)", f.CFI, r.Arch)
		}
	default:
		return fmt.Errorf("request: features.cfi %q: want \"\", \"kcfi\" or \"fineibt\"", f.CFI)
	}
	return nil
}

// validateFlags checks an explicit flags word.
func (r *Request) validateFlags() error {
	if r.Flags != nil {
		if f := uint64(*r.Flags); f > math.MaxUint32 {
			return fmt.Errorf("request: flags %#x: wider than the kernel's 32-bit BPF_TRAMP_F_* word", f)
		} else if unknown := Flags(f) &^ knownFlags; unknown != 0 {
			return fmt.Errorf("request: flags %#x: %#x is no BPF_TRAMP_F_* flag trampjit knows (%s)", f, uint32(unknown), knownFlags)
		}
	}
	return nil
}

// validateStructOps checks a struct_ops request: bpf_struct_ops_map_update_elem builds one
// image per member with the member's one program, entered through the ops table's pointer,
// so there is no traced function, no ip and no bpf_tramp_image.
func (r *Request) validateStructOps() error {
	so := r.StructOps
	switch {
	case so.Ops == "":
		return errors.New("request: struct_ops.ops: missing (the ops table's struct, e.g. tcp_congestion_ops)")
	case so.Member == "":
		return errors.New("request: struct_ops.member: missing (the member the program implements, e.g. cong_avoid)")
	case r.Func != "":
		return errors.New("request: func: a struct_ops request has no traced function (struct_ops names the member)")
	case r.Proto != "":
		return errors.New("request: proto: a struct_ops request takes the member's prototype from btf")
	case r.Target != "":
		return errors.New("request: target: a struct_ops request has no target")
	case r.BTF == "":
		return errors.New("request: btf: a struct_ops request needs the kernel's BTF (the member's prototype and index)")
	case len(r.Progs) != 1:
		return fmt.Errorf("request: progs: a struct_ops image has exactly one program, not %d", len(r.Progs))
	case r.Progs[0].Kind != StructOpsProg:
		return fmt.Errorf("request: progs[0].kind: %q, want struct_ops", r.Progs[0].Kind)
	case r.Progs[0].Cookie != 0 || r.Progs[0].FuncIP || r.Progs[0].SessionCookie:
		return errors.New("request: progs[0]: cookie, func_ip and session_cookie are for tracing programs, not struct_ops")
	}
	if err := r.validateFlags(); err != nil {
		return err
	}
	if a := r.Addrs; a != nil {
		switch {
		case a.Image == 0:
			return errors.New("request: addrs.image: missing")
		case a.Func != 0:
			return errors.New("request: addrs.func: a struct_ops image calls no original function")
		case a.IP != 0:
			return errors.New("request: addrs.ip: a struct_ops image has no traced ip")
		case a.IM != 0:
			return errors.New("request: addrs.im: a struct_ops image has no bpf_tramp_image")
		case len(a.Progs) != 1:
			return fmt.Errorf("request: addrs.progs has %d entries for 1 prog", len(a.Progs))
		}
	}
	return nil
}

// SetDir sets the directory relative BTF paths resolve against (ReadRequest sets it to the
// request file's).
func (r *Request) SetDir(dir string) { r.dir = dir }

// BTFPath is the request's BTF file, resolved against the request's directory.
func (r *Request) BTFPath() string {
	if r.BTF == "" || filepath.IsAbs(r.BTF) || r.dir == "" {
		return r.BTF
	}
	return filepath.Join(r.dir, r.BTF)
}

// StructOpsMember decides a struct_ops request's member on its profile and arch.
func (r *Request) StructOpsMember() (*btfmodel.StructOpsMember, error) {
	if r.StructOps == nil {
		return nil, errors.New("request: not a struct_ops request")
	}
	spec, err := loadBTF(r.BTFPath())
	if err != nil {
		return nil, err
	}
	return btfmodel.StructOpsModel(spec, r.StructOps.Ops, r.StructOps.Member, r.Kernel, r.Arch)
}

// Model loads the traced function and distils it for the request's profile; for a struct_ops
// request, the member's prototype as bpf_struct_ops_desc_init distils it, or the kernel's
// refusal of the member.
func (r *Request) Model() (*btfmodel.FuncModel, error) {
	if r.StructOps != nil {
		so, err := r.StructOpsMember()
		if err != nil {
			return nil, err
		}
		if !so.Verdict.OK {
			return nil, &StructOpsError{StructOps: *r.StructOps, Verdict: so.Verdict}
		}
		return so.Model, nil
	}
	if r.Proto != "" {
		fn, err := btfmodel.ParseProto(r.Proto)
		if err != nil {
			return nil, fmt.Errorf("proto: %w", err)
		}
		return btfmodel.Distill(fn, r.Kernel)
	}
	spec, err := loadBTF(r.BTFPath())
	if err != nil {
		return nil, err
	}
	fn, err := btfmodel.FuncByName(spec, r.Func)
	if err != nil {
		return nil, err
	}
	m, err := btfmodel.Distill(btfmodel.TraceTarget(spec, fn, r.Kernel), r.Kernel)
	if err == nil {
		if id, ierr := spec.TypeID(fn); ierr == nil {
			m.BTFID = uint32(id)
		}
	}
	return m, err
}

// btfCache keeps loaded BTF by path: a corpus has hundreds of requests on one vmlinux.
var btfCache sync.Map // path -> *btf.Spec

func loadBTF(path string) (*btf.Spec, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if s, ok := btfCache.Load(abs); ok {
		return s.(*btf.Spec), nil
	}
	spec, err := btfmodel.LoadFile(abs, nil)
	if err != nil {
		return nil, err
	}
	btfCache.Store(abs, spec)
	return spec, nil
}
