package arm64

import "github.com/trampjit/trampjit/jit"

// fsession (7.x): each program that calls bpf_session_cookie gets an 8-byte slot between
// run_ctx and the IP slot, and learns where it is, and whether the original has returned,
// from the func_meta word at ctx[-1] (store_func_meta).

// sessionStart zeroes every cookie slot and the return-value slot after __bpf_tramp_enter,
// with one zero in x10 (a 64-bit movz, not emit_a64_mov_i64) for all the stores.
func (g *gen) sessionStart() {
	g.open(jit.SecSession)
	g.emit(MOVZ(true, TMP, 0, 0))
	for k := 0; k < g.t.CookieSlots; k++ {
		g.emit(STR(TMP, SP, g.l.Cookies+8*k))
	}
	g.emit(STR(TMP, SP, g.l.Retval))
}

// cookieMeta stores func_meta with r's cookie index before a block of a program that calls
// bpf_session_cookie; other programs get no store.
func (g *gen) cookieMeta(r *jit.ProgRef, isReturn bool) {
	if !r.IsSessionCookie() {
		return
	}
	idx := (g.l.Args - (g.l.Cookies + 8*r.CookieSlot)) / 8 // the cookie is ctx[-idx]
	g.storeMeta(jit.FuncMeta(g.l.NArgs, idx, isReturn))
}

// storeMeta is store_func_meta: emit_a64_mov_i64 into x10 (W form below 2^32), then the
// count slot.
func (g *gen) storeMeta(v uint64) {
	g.code = AppendMovImm64(g.code, TMP, v)
	g.emit(STR(TMP, SP, g.l.NRegsOff))
}
