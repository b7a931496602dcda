package verifier

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// checkAttach is check_attach_btf_id for trampoline programs: btfmodel.CheckAttach holds
// bpf_check_attach_target's rules and the deny lists; the LSM license check of
// bpf_lsm_verify_prog (kernel/bpf/bpf_lsm.c) is added here in its place.
func (c *checker) checkAttach() error {
	p := c.prog
	if p.AttachType == btfmodel.RawTP {
		return c.checkAttachRawTP()
	}
	if p.AttachType == btfmodel.StructOps {
		return c.checkAttachStructOps()
	}
	m, derr := btfmodel.Distill(c.fn, c.env.Kernel)
	v := btfmodel.CheckAttach(p.Target, m, derr, p.AttachType, btfmodel.AttachEnv{
		Kernel: c.env.Kernel, Arch: c.env.Arch, Sleepable: p.Sleepable,
		ErrorInjection: c.env.ErrorInjection, BTFID: c.btfID,
	})
	if v.Note != "" {
		c.note("attach: %s", v.Note)
	}
	lsmStage := v.OK || v.Stage == btfmodel.StageAttach || strings.HasPrefix(v.Msg, "attach_btf_id ")
	if p.AttachType == btfmodel.LSM && !gplCompatible(p.License) && lsmStage {
		c.logf("LSM programs must have a GPL compatible license")
		return reject("EINVAL")
	}
	if v.OK {
		return nil
	}
	if v.Stage == btfmodel.StageAttach {
		// The arch JIT refuses the trampoline at BPF_LINK_CREATE, after a successful load.
		c.note("attach (link time, not the verifier): %s %s", v.Errno, v.Msg)
		return nil
	}
	if v.KernelMsg {
		c.logf("%s", v.Msg)
		return reject(v.Errno)
	}
	if strings.HasPrefix(v.Msg, "btf_id_deny") {
		c.note("%s", v.Msg)
		return reject(v.Errno) // no message: the log holds only the stats line
	}
	return errors.New(fmt.Sprintf("attach: %s", v.Msg))
}

// resolveTarget finds the attach target in the kernel's BTF as libbpf does before
// BPF_PROG_LOAD (find_kernel_btf_id, tools/lib/bpf/libbpf.c): a FUNC for fentry, fexit,
// fmod_ret and LSM, the btf_trace_<tracepoint> TYPEDEF for tp_btf. A "module:function"
// target whose module is a prefix of "vmlinux" (libbpf compares mod_len bytes) names the
// kernel itself; any other module is searched in module BTFs, which the model does not have.
func (c *checker) resolveTarget() error {
	p := c.prog
	if p.AttachType == btfmodel.StructOps {
		return c.resolveStructOps()
	}
	name := p.Target
	if p.AttachType == btfmodel.LSM {
		name = strings.TrimPrefix(name, "bpf_lsm_") // libbpf names the hook as the section does
	}
	lookup := p.Target
	if mod, fn, ok := strings.Cut(p.Target, ":"); ok {
		if !strings.HasPrefix("vmlinux", mod) {
			c.note("target %q: module BTF is not modelled (the guests load no modules)", p.Target)
			c.logf("failed to find kernel BTF type ID of '%s': -ESRCH", name)
			return reject("ESRCH")
		}
		lookup = fn
		p.Target = fn
	}
	if p.AttachType == btfmodel.RawTP {
		td, proto, err := btfmodel.RawTPTarget(c.env.BTF, lookup)
		if err != nil || len(proto.Params) == 0 {
			c.logf("failed to find kernel BTF type ID of '%s': -ESRCH", name)
			return reject("ESRCH")
		}
		c.proto = proto
		id, _ := c.env.BTF.TypeID(td)
		c.btfID = uint32(id)
		return nil
	}
	fn, err := btfmodel.FuncByName(c.env.BTF, lookup)
	if err != nil {
		c.logf("failed to find kernel BTF type ID of '%s': -ESRCH", name)
		return reject("ESRCH")
	}
	c.fn = fn
	c.proto, _ = fn.Type.(*btf.FuncProto)
	id, _ := c.env.BTF.TypeID(fn)
	c.btfID = uint32(id)
	return nil
}

// checkAttachRawTP is bpf_check_attach_target and check_attach_btf_id for BPF_TRACE_RAW_TP:
// RawTPTarget already checked the typedef; raw tracepoints have no deny list, no
// error-injection or sleepable rules, and no license rule of their own.
func (c *checker) checkAttachRawTP() error {
	if c.prog.Sleepable {
		c.logf("Only fentry/fexit/fmod_ret, lsm, iter, uprobe, and struct_ops programs can be sleepable")
		return reject("EINVAL")
	}
	return nil
}
