package amd64

import "github.com/trampjit/trampjit/jit"

// fsession (7.0+): the trampoline gives each program that calls bpf_session_cookie an 8-byte
// slot between the IP slot and rbx, and tells the program where it is, and whether the
// original has returned, through the func_meta word at ctx[-1].

// sessionStart zeroes every cookie slot and then the return-value slot after
// __bpf_tramp_enter, so that the fentry half of a session sees zeros.
func (g *gen) sessionStart() {
	g.open(jit.SecSession)
	for k := 0; k < g.t.CookieSlots; k++ {
		g.storeImm(int32(-g.cookieOff(k)), 0)
	}
	g.storeImm(-8, 0)
}

// cookieMeta stores func_meta with r's cookie index before a block of a program that calls
// bpf_session_cookie; other programs get no store.
func (g *gen) cookieMeta(r *jit.ProgRef, isReturn bool) {
	if !r.IsSessionCookie() {
		return
	}
	idx := (g.cookieOff(r.CookieSlot) - g.l.RegsOff) / 8 // the cookie is ctx[-idx]
	g.storeMeta(jit.FuncMeta(g.l.NrRegs, idx, isReturn))
}

// cookieOff is cookie slot k's offset below rbp: the first cookie user in emission order
// gets the deepest slot.
func (g *gen) cookieOff(k int) int { return g.l.CookieOff - 8*k }

func (g *gen) storeMeta(v uint64) { g.storeImm(int32(-g.l.NregsOff), v) }

// storeImm is emit_store_stack_imm64: the value into rax (emit_mov_imm64), then to the slot.
func (g *gen) storeImm(d int32, v uint64) {
	g.movImm(RAX, v, "")
	g.a.store(d, RAX)
}
