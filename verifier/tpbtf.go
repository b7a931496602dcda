package verifier

import "github.com/trampjit/trampjit/btfmodel"

// tp_btf (BPF_TRACE_RAW_TP) programs run from a tracepoint, not a trampoline: the rules that
// follow from that, for helpers.go and retcode.go.

// hasTrampoline is bpf_prog_has_trampoline (kernel/bpf/trampoline.c): fentry, fexit,
// fmod_ret and LSM programs; not tp_btf.
func (c *checker) hasTrampoline() bool { return c.prog.AttachType != btfmodel.RawTP }

// helperOffered is tracing_prog_func_proto (kernel/trace/bpf_trace.c) for the helpers it
// offers only with a trampoline (bpf_get_func_arg, _ret, _arg_cnt, bpf_get_attach_cookie);
// tp_btf has bpf_get_attach_cookie from 6.10 (bpf_get_attach_cookie_proto_tracing for
// BPF_TRACE_RAW_TP), and bpf_get_func_arg and _arg_cnt on 7.2.
func (c *checker) helperOffered(id int32, p helperProto) bool {
	if !p.trampOnly || c.hasTrampoline() {
		return true
	}
	switch id {
	case 174:
		return c.has(btfmodel.CapHelperRawTPCookie)
	case 183, 185:
		return c.has(btfmodel.CapHelperRawTPFuncArg)
	}
	return false
}

// checkGetFuncIP is check_get_func_ip (kernel/bpf/verifier.c) for a TRACING program without a
// trampoline: bpf_get_func_ip is offered, then refused.
func (c *checker) checkGetFuncIP(id int32, name string) error {
	if id != 173 || c.hasTrampoline() {
		return nil
	}
	if c.has(btfmodel.CapFsession) {
		// the fsession series named it in the message
		c.logf("func %s#%d supported only for fentry/fexit/fsession/fmod_ret programs", name, id)
	} else {
		c.logf("func %s#%d supported only for fentry/fexit/fmod_ret programs", name, id)
	}
	return reject("ENOTSUPP")
}
