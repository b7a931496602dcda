package btfmodel

import "github.com/cilium/ebpf/btf"

// TraceTarget is the function a trampoline on fn is built for. A kfunc with implicit
// arguments (KF_IMPLICIT_ARGS, CapKfuncImplicitArgs) has two FUNCs in BTF: fn, the
// prototype BPF programs call, without the trailing struct bpf_prog_aux * the verifier
// supplies, and fn_impl, the C function's own. The symbol fn is that C function, and the
// kernel models a trampoline on it with all its arguments: 7.2 arm64 builds fexit on
// scx_bpf_cidperf_cap(s32) with two argument slots, as for scx_bpf_cidperf_cap_impl(s32,
// const struct bpf_prog_aux *). TraceTarget returns fn with that prototype, else fn.
func TraceTarget(spec *btf.Spec, fn *btf.Func, k Kernel) *btf.Func {
	if fn == nil || !k.Has(CapKfuncImplicitArgs) {
		return fn
	}
	impl, err := FuncByName(spec, fn.Name+"_impl")
	if err != nil || !implicitTwin(fn, impl) {
		return fn
	}
	return &btf.Func{Name: fn.Name, Type: impl.Type, Linkage: fn.Linkage}
}

// implicitTwin: impl's parameters are fn's and one more, a pointer to struct bpf_prog_aux.
func implicitTwin(fn, impl *btf.Func) bool {
	p, ok1 := fn.Type.(*btf.FuncProto)
	q, ok2 := impl.Type.(*btf.FuncProto)
	if !ok1 || !ok2 || len(q.Params) != len(p.Params)+1 || CName(p.Return) != CName(q.Return) {
		return false
	}
	for i, a := range p.Params {
		if CName(a.Type) != CName(q.Params[i].Type) {
			return false
		}
	}
	ptr, ok := SkipModifiers(q.Params[len(p.Params)].Type).(*btf.Pointer)
	if !ok {
		return false
	}
	s, ok := SkipModifiers(ptr.Target).(*btf.Struct)
	return ok && s.Name == "bpf_prog_aux"
}
