package jit

// The func_meta word at ctx[-1] (7.0+; the argument count before): bpf_get_func_arg_cnt reads
// its low byte, the inlined bpf_session_cookie its cookie index, bpf_session_is_return bit 63.
const (
	CookieIndexShift = 8  // BPF_TRAMP_COOKIE_INDEX_SHIFT
	IsReturnShift    = 63 // BPF_TRAMP_IS_RETURN_SHIFT
)

// FuncMeta is the func_meta word a trampoline stores: the argument-slot count, the cookie
// index (the cookie lives at ctx[-index]; 0 for none) and, after the original returned,
// is_return.
func FuncMeta(nrArgs, cookieIndex int, isReturn bool) uint64 {
	m := uint64(nrArgs) | uint64(cookieIndex)<<CookieIndexShift
	if isReturn {
		m |= 1 << IsReturnShift
	}
	return m
}

// IsSessionCookie reports whether r's block needs a func_meta store with its cookie index
// first: an fsession program that calls bpf_session_cookie.
func (r *ProgRef) IsSessionCookie() bool { return r.Kind == Fsession && r.SessionCookie }
