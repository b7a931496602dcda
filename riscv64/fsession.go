package riscv64

import "github.com/trampjit/trampjit/jit"

// fsession (7.x): each program that calls bpf_session_cookie gets an 8-byte slot between the
// IP slot and run_ctx, and learns where it is, and whether the original has returned, from
// the func_meta word at ctx[-1].

// sessionStart zeroes every cookie slot and the a0 return-value slot, storing the zero
// register (fentry-side programs read 0 as the return value).
func (g *gen) sessionStart() {
	g.open(jit.SecSession)
	for k := 0; k < g.t.CookieSlots; k++ {
		g.a.sd(FP, -int32(g.l.CookieSlotOff(k)), Zero)
	}
	g.a.sd(FP, -int32(g.l.RetvalOff), Zero)
}

// cookieMeta stores func_meta with r's cookie index before a block of a program that calls
// bpf_session_cookie; other programs get no store. The cookie is ctx[-index].
func (g *gen) cookieMeta(r *jit.ProgRef, isReturn bool) {
	if !r.IsSessionCookie() {
		return
	}
	idx := (g.l.CookieSlotOff(r.CookieSlot) - g.l.ArgsOff) / 8
	g.storeMeta(jit.FuncMeta(g.l.NArgs, idx, isReturn))
}

// storeMeta is emit_store_stack_imm64 of func_meta: emit_imm into t1, then the count slot.
func (g *gen) storeMeta(v uint64) {
	g.a.storeStackImm64(T1, -int32(g.l.NRegsOff), v)
}
