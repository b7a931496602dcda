package verifier

// bpf-to-bpf calls: add_subprog, check_func_call and prepare_func_exit
// (kernel/bpf/verifier.c).

// addSubprog is add_subprog for the call at insn i (a pre-pass, before the walk).
func (c *checker) addSubprog(i int) error {
	c.note("bpf-to-bpf calls are not modelled (insn %d)", i)
	c.logf("model: bpf-to-bpf calls are not modelled")
	return reject("EINVAL")
}

// subprogCall is check_func_call for the current instruction.
func (c *checker) subprogCall(in *insn) error {
	c.logf("model: bpf-to-bpf calls are not modelled")
	return reject("EINVAL")
}
