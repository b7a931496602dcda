package main

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"unsafe"

	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/trampjit/trampjit/kernel/wire"
)

// verifier loads programs through the kernel's verifier, one at a time, and reports each
// verdict. Everything a load opens is closed before the next one.
type verifier struct {
	level   uint32
	limit   int    // the log buffer's largest size
	log     []byte // reused between loads
	vmlinux *btf.Spec
	btfErr  error
}

func newVerifier(req *wire.VerifyRequest) *verifier {
	v := &verifier{level: req.LogLevel, limit: int(req.LogLimit)}
	if v.level == 0 {
		v.level = 1
	}
	if v.limit == 0 {
		v.limit = defaultLogLimit
	}
	v.limit = max(v.limit, 128) // the kernel's smallest log buffer
	v.vmlinux, v.btfErr = btf.LoadKernelSpec()
	return v
}

// verifyAll reports one KindVerify frame per program.
func (v *verifier) verifyAll(progs []wire.VerifyProgram) {
	for i, p := range progs {
		emit(wire.KindVerify, v.verify(i, p))
		if i%64 == 63 {
			debug.FreeOSMemory() // level-2 logs are large; keep the guest's footprint flat
		}
		if i%500 == 499 {
			logf("verified %d of %d programs", i+1, len(progs))
		}
	}
}

// verify loads one program. A panic fails this program only, never the boot.
func (v *verifier) verify(i int, p wire.VerifyProgram) (r wire.VerifyResult) {
	r = wire.VerifyResult{Index: i, Name: p.Name}
	defer func() {
		if x := recover(); x != nil {
			r = wire.VerifyResult{Index: i, Name: p.Name, Stage: "agent", Error: fmt.Sprintf("agent panic: %v\n%s", x, debug.Stack())}
		}
	}()
	fail := func(stage string, err error) wire.VerifyResult {
		r.Stage, r.Error, r.Errno = stage, err.Error(), errnoOf(err)
		return r
	}
	if err := p.Validate(); err != nil {
		return fail("request", err)
	}
	expected := wire.AttachTypes[p.AttachType]
	var targetID btf.TypeID
	var err error
	if p.Type == "struct_ops" {
		var idx int
		if targetID, idx, err = v.structOpsMember(p.AttachTo); err != nil {
			// libbpf's words (bpf_map__init_kern_struct_ops) for an ops table or member
			// vmlinux does not have.
			r.Stage, r.Errno, r.Error = "target", "ENOTSUP", err.Error()
			return r
		}
		expected = uint32(idx)
	} else {
		targetID, err = v.targetID(p)
	}
	if err != nil {
		// libbpf's words for a target vmlinux does not have.
		r.Stage, r.Errno = "target", "ESRCH"
		r.Error = fmt.Sprintf("failed to find kernel BTF type ID of '%s': -ESRCH", p.AttachTo)
		if !errors.Is(err, btf.ErrNotFound) {
			r.Error += fmt.Sprintf(" (%v)", err)
		}
		return r
	}
	insns := append(wire.Bytecode(nil), p.Insns...)
	for _, k := range p.Kfuncs {
		id, err := v.funcID(k.Func)
		if err != nil {
			r.Stage, r.Errno = "kfunc", "ESRCH"
			r.Error = fmt.Sprintf("extern (func ksym) '%s': not found in kernel or module BTFs", k.Func)
			return r
		}
		insns.SetImm(k.Insn, int32(id))
	}
	if err := v.resolveKsyms(insns, p.Ksyms); err != nil {
		r.Stage, r.Errno, r.Error = "ksym", "ESRCH", err.Error()
		return r
	}
	fds := map[string]int{}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, ms := range p.Maps {
		fd, err := createMap(ms)
		if err != nil {
			return fail("map", fmt.Errorf("map %q: %w", ms.Name, err))
		}
		fds[ms.Name] = fd
	}
	for _, ref := range p.MapRefs {
		insns.SetImm(ref.Insn, int32(fds[ref.Map]))
	}
	license := append([]byte(p.License), 0)
	attr := progLoadAttr{
		ProgType:           wire.ProgTypes[p.Type],
		InsnCnt:            uint32(insns.Len()),
		Insns:              uint64(uintptr(unsafe.Pointer(&insns[0]))),
		License:            uint64(uintptr(unsafe.Pointer(&license[0]))),
		ProgName:           objName(p.Name),
		ExpectedAttachType: expected,
		AttachBTFID:        uint32(targetID),
	}
	if p.Sleepable {
		attr.ProgFlags |= bpfFSleepable
	}
	keep := []any{insns, license}
	var h *btf.Handle
	if len(p.BTF) > 0 {
		// libbpf's bpf_object__sanitize_and_load_btf: BTF is optional; when the kernel
		// refuses it, the programs load without BTF, func and line info.
		if h, err = btf.NewHandleFromRawBTF(p.BTF); err != nil {
			r.BTFDropped = err.Error()
			h = nil
		}
	}
	if h != nil {
		defer h.Close()
		attr.ProgBTFFD = uint32(h.FD())
		if len(p.FuncInfo) > 0 {
			attr.FuncInfoRecSize, attr.FuncInfoCnt = 8, uint32(len(p.FuncInfo)/8)
			attr.FuncInfo = uint64(uintptr(unsafe.Pointer(&p.FuncInfo[0])))
		}
		if len(p.LineInfo) > 0 {
			attr.LineInfoRecSize, attr.LineInfoCnt = 16, uint32(len(p.LineInfo)/16)
			attr.LineInfo = uint64(uintptr(unsafe.Pointer(&p.LineInfo[0])))
		}
		keep = append(keep, p.FuncInfo, p.LineInfo)
	}
	l, err := loadWithLog(&attr, v.level, v.limit, &v.log, keep...)
	r.Log, r.Truncated = wire.SplitLog(l.log), l.truncated
	if err != nil {
		r.Stage, r.Errno = "load", errnoOf(err)
		if !l.headOnly {
			r.Error = wire.ReasonLine(r.Log)
		}
		return r
	}
	unix.Close(l.fd)
	r.Accepted = true
	return r
}

// funcID resolves a kernel function to its vmlinux BTF id as libbpf does
// (btf__find_by_name_kind(BTF_KIND_FUNC): the first FUNC of that name).
func (v *verifier) funcID(name string) (btf.TypeID, error) {
	return v.typeID(name, func(t btf.Type) bool { _, ok := t.(*btf.Func); return ok })
}

// targetID resolves a program's attach target as libbpf's find_kernel_btf_id does: the
// "bpf_lsm_" prefix for LSM hooks, the "btf_trace_" TYPEDEF for raw_tp (tp_btf), and a
// "module:function" target whose module is a prefix of "vmlinux" (libbpf compares mod_len
// bytes) looked up in vmlinux. Other modules would be searched in module BTFs; the guests
// load no modules, so they are not found.
func (v *verifier) targetID(p wire.VerifyProgram) (btf.TypeID, error) {
	target := p.AttachTo
	if mod, fn, ok := strings.Cut(target, ":"); ok {
		if !strings.HasPrefix("vmlinux", mod) {
			return 0, btf.ErrNotFound
		}
		target = fn
	}
	switch {
	case p.AttachType == "raw_tp":
		return v.typeID("btf_trace_"+target, func(t btf.Type) bool { _, ok := t.(*btf.Typedef); return ok })
	case p.Type == "lsm" && !strings.HasPrefix(target, "bpf_lsm_"):
		target = "bpf_lsm_" + target // libbpf's BTF_LSM_PREFIX
	}
	return v.funcID(target)
}

// structOpsMember resolves "OPS:MEMBER" as libbpf does for a struct_ops map's program: the
// STRUCT named OPS in vmlinux (find_struct_ops_kern_types) and the index of MEMBER in it,
// the program's expected_attach_type (bpf_map__init_kern_struct_ops).
func (v *verifier) structOpsMember(target string) (btf.TypeID, int, error) {
	ops, member, _ := strings.Cut(target, ":")
	id, err := v.typeID(ops, func(t btf.Type) bool { _, ok := t.(*btf.Struct); return ok })
	if err != nil {
		return 0, 0, fmt.Errorf("struct_ops init_kern: struct %s is not found in kernel BTF", ops)
	}
	t, err := v.vmlinux.TypeByID(id)
	if err != nil {
		return 0, 0, err
	}
	for i, m := range t.(*btf.Struct).Members {
		if m.Name == member {
			return id, i, nil
		}
	}
	return 0, 0, fmt.Errorf("struct_ops init_kern %s: Cannot find member %s in kernel BTF", ops, member)
}

// typeID is btf__find_by_name_kind: the lowest id of that name whose kind is.
func (v *verifier) typeID(name string, kind func(btf.Type) bool) (btf.TypeID, error) {
	if v.vmlinux == nil {
		return 0, fmt.Errorf("kernel BTF: %w", v.btfErr)
	}
	types, err := v.vmlinux.AnyTypesByName(name)
	if err != nil {
		return 0, err
	}
	best := btf.TypeID(0)
	for _, t := range types {
		if !kind(t) || t.TypeName() != name {
			continue
		}
		if id, err := v.vmlinux.TypeID(t); err == nil && (best == 0 || id < best) {
			best = id
		}
	}
	if best == 0 {
		return 0, btf.ErrNotFound
	}
	return best, nil
}

// resolveKsyms patches __ksym variable loads as libbpf's bpf_object__resolve_ksyms does: a
// typed extern gets its VAR's vmlinux BTF id (imm; the next imm, the BTF object fd, stays 0
// for vmlinux), a typeless one its kallsyms address; a missing weak one stays 0.
func (v *verifier) resolveKsyms(insns wire.Bytecode, refs []wire.KsymRef) error {
	var syms *kallsyms
	for _, k := range refs {
		if k.Typed {
			id, err := v.typeID(k.Var, func(t btf.Type) bool { _, ok := t.(*btf.Var); return ok })
			if err != nil {
				if k.Weak {
					continue
				}
				return fmt.Errorf("extern (var ksym) '%s': not found in kernel BTF", k.Var)
			}
			insns.SetImm(k.Insn, int32(id))
			insns.SetImm(k.Insn+1, 0)
			continue
		}
		if syms == nil {
			var err error
			if syms, err = readKallsyms(); err != nil {
				return fmt.Errorf("extern (ksym) '%s': %v", k.Var, err)
			}
		}
		addr, err := syms.addr(k.Var)
		if err != nil {
			if k.Weak {
				continue
			}
			return fmt.Errorf("extern (ksym) '%s': not found in kallsyms", k.Var)
		}
		insns.SetImm(k.Insn, int32(uint32(addr)))
		insns.SetImm(k.Insn+1, int32(uint32(addr>>32)))
	}
	return nil
}
