package btfmodel

import "fmt"

// wideReturnDeny is the verifier's refusal, at load, of a program that sees or sets the
// return value (fexit, fsession, fmod_ret) on a function whose return does not fit the
// trampoline's one 8-byte return slot: btf_distill_func_proto takes returns of up to 16
// bytes (__int128; a struct return is refused by distill itself). fentry does not touch the
// return and loads. It comes before the fmod_ret list: fmod_ret on get_signed_val, which
// no error-injection list admits, was refused with this message, not "is not modifiable". 7.2 riscv64 refused fexit and fsession on get_signed_val (lib/ubsan.c,
// returning s_max, an __int128) with EOPNOTSUPP at load, and fmod_ret alike; the selftest
// is tracing_failure's fexit_int128_ret.
func wideReturnDeny(name string, m *FuncModel, at AttachType, env AttachEnv) (Verdict, bool) {
	if env.NoWideReturnRule || m == nil || m.RetSize <= 8 || !env.Kernel.Has(CapWideReturnDeny) {
		return Verdict{}, false
	}
	if at != Fexit && at != Fsession && at != ModRet {
		return Verdict{}, false
	}
	return Verdict{Type: at, Stage: StageLoad, Errno: "EOPNOTSUPP", KernelMsg: true,
		Msg: fmt.Sprintf("Attach to function %s with a >8 byte return value is not supported for this attach type", name)}, true
}
