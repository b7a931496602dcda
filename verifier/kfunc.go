package verifier

// kfunc calls: add_kfunc_call and check_kfunc_call (kernel/bpf/verifier.c).

// addKfunc is add_kfunc_call for the call at insn i (a pre-pass, before the walk).
func (c *checker) addKfunc(i int) error {
	c.note("kfuncs are not modelled (insn %d)", i)
	c.logf("model: kfunc calls are not modelled")
	return reject("EINVAL")
}

// kfuncCall is check_kfunc_call for the current instruction.
func (c *checker) kfuncCall(in *insn) error {
	c.logf("model: kfunc calls are not modelled")
	return reject("EINVAL")
}
