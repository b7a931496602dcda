package verifier

import (
	"errors"
	"fmt"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
)

// checkAttach is check_attach_btf_id for trampoline programs: btfmodel.CheckAttach holds
// bpf_check_attach_target's rules and the deny lists; the LSM license check of
// bpf_lsm_verify_prog (kernel/bpf/bpf_lsm.c) is added here in its place.
func (c *checker) checkAttach() error {
	p := c.prog
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
