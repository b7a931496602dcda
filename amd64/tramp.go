package amd64

import (
	"fmt"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// Backend emits x86-64 trampolines; it implements jit.Backend.
type Backend struct{}

var _ jit.Backend = Backend{}

// Arch returns btfmodel.AMD64.
func (Backend) Arch() btfmodel.Arch { return btfmodel.AMD64 }

// SecAlign is emit_align(16) before do_fexit, where the fmod_ret programs' jne lands: the
// padding closes the fmod_ret step, after the original call.
const SecAlign = "align"

// smallImage holds an image of up to smallProgs programs and its annotations.
type smallImage struct {
	img    jit.Image
	code   [448]byte
	secs   [16]jit.Section
	relocs [32]jit.Reloc
}

const smallProgs = 4

// gen is the state of one Generate call.
type gen struct {
	t   *jit.Tramp
	p   *profile
	f   feats
	l   StackLayout
	a   asm
	img *jit.Image
	sec int // index of the open section in img.Sections, -1 if none
}

// Generate emits t's image the way __arch_prepare_bpf_trampoline (6.12, 7.2: jmp mode, skip
// NOPs, fsession) / arch_prepare_bpf_trampoline (6.1) in arch/x86/net/bpf_jit_comp.c lays it
// out.
func (Backend) Generate(t *jit.Tramp) (*jit.Image, error) {
	if t.Model == nil {
		return nil, fmt.Errorf("amd64: trampoline has no function model")
	}
	p, err := profileFor(t.Kernel)
	if err != nil {
		return nil, err
	}
	if t.StructOps != nil {
		if err := checkStructOps(t); err != nil {
			return nil, err
		}
	}
	n := len(t.Fentry) + len(t.ModRet) + len(t.Fexit)
	g := gen{t: t, p: p, f: p.feats(t.Features, t.Flags), sec: -1}
	if err := g.l.compute(t.Model, t.Flags, p, t.CookieSlots); err != nil {
		return nil, err
	}
	if n <= smallProgs {
		// One allocation for the common case; appends still grow past it if needed.
		s := new(smallImage)
		g.img, g.a.b = &s.img, s.code[:0]
		g.img.Sections, g.img.Relocs = s.secs[:0], s.relocs[:0]
	} else {
		g.img = &jit.Image{Sections: make([]jit.Section, 0, 10+n), Relocs: make([]jit.Reloc, 0, 6+5*n)}
		g.a.b = make([]byte, 0, 192+80*n)
	}
	g.img.Arch, g.img.Kernel = string(btfmodel.AMD64), string(t.Kernel)
	g.img.Base, g.img.Flags = t.Image, t.Flags
	if err := g.emit(); err != nil {
		return nil, err
	}
	g.close()
	// The JIT refuses code that leaves less than BPF_INSN_SAFETY bytes of its page.
	if len(g.a.b) > pageSize-insnSafety {
		return nil, fmt.Errorf("amd64: trampoline code is %d bytes, more than %d: %w",
			len(g.a.b), pageSize-insnSafety, jit.EFAULT)
	}
	g.img.Code = g.a.b
	return g.img, nil
}

func (g *gen) emit() error {
	t, l, a := g.t, &g.l, &g.a
	flags := t.Flags
	callOrig := flags&jit.FlagCallOrig != 0

	if flags&jit.FlagIndirect != 0 {
		// struct_ops (6.8+): the CFI landing sequence instead of call-depth accounting.
		g.open(SecCFI)
		g.emitCFI()
	} else {
		g.open(jit.SecPrologue)
		if g.f.endbrEntry {
			a.endbr()
		}
		if g.f.callDepth {
			// Direct trampolines account for the __fentry__ call that reached them.
			g.callDepth()
		}
	}
	g.open(jit.SecPrologue)
	a.push(RBP)
	a.movRBPRSP()
	a.subRSP(int32(l.StackSize))
	if flags&jit.FlagTailCallCtx != 0 {
		a.push(RAX)
	}
	if g.p.rbxInFrame {
		a.store(int32(-l.RBXOff), RBX)
	} else {
		a.push(RBX)
	}

	g.open(jit.SecNrArgs)
	a.movImm64(g.p.sxImm64, RAX, uint64(l.NrRegs))
	a.store(int32(-l.NregsOff), RAX)

	if flags&jit.FlagIPArg != 0 {
		// 6.1+ stores the function's symbol address, not the patched call site.
		g.open(jit.SecIP)
		g.movImm(RAX, t.Func, "func")
		a.store(int32(-l.IPOff), RAX)
	}

	g.open(jit.SecArgSpill)
	g.saveArgs(l.RegsOff, false)

	if callOrig {
		g.open(jit.SecTrampEnter)
		g.movImm(RDI, t.IM, "im")
		if err := g.callHelper(jit.HelperTrampEnter); err != nil {
			return err
		}
	}
	if t.Fsessions > 0 {
		g.sessionStart()
	}

	for i := range t.Fentry {
		g.open(g.progSection(&t.Fentry[i]))
		g.cookieMeta(&t.Fentry[i], false)
		if err := g.invokeProg(&t.Fentry[i], flags&jit.FlagRetFentryRet != 0); err != nil {
			return err
		}
	}

	// fmod_ret: each program may short-circuit to do_fexit; the jumps are NOP6
	// placeholders until do_fexit is known (invoke_bpf_mod_ret).
	var branches []int
	for i := range t.ModRet {
		r := &t.ModRet[i]
		if i == 0 {
			g.open(jit.SecModRetInit)
			branches = make([]int, 0, len(t.ModRet))
			a.movImm32(false, RAX, 0) // the first program sees a zeroed return slot
			a.store(-8, RAX)
		}
		g.open(secName(jit.SecModRet, 1, r.Index))
		if err := g.invokeProg(r, true); err != nil {
			return err
		}
		a.cmpRetZero()
		branches = append(branches, a.off())
		a.nops(6, g.p.nopMax)
	}

	if callOrig {
		if err := g.callOrig(); err != nil {
			return err
		}
	}

	if len(branches) > 0 {
		g.open(SecAlign)
		pos := uint64(a.off())
		if g.p.alignImage {
			pos += t.Image
		}
		a.nops(int(-pos&15), g.p.nopMax) // emit_align(16)
		for _, b := range branches {
			a.patchJNE(b, a.off())
		}
	}
	if t.Fsessions > 0 {
		g.open(jit.SecIsReturn)
		g.storeMeta(jit.FuncMeta(l.NrRegs, 0, true))
	}

	for i := range t.Fexit {
		g.open(secName(jit.SecFexit, 2, t.Fexit[i].Index))
		g.cookieMeta(&t.Fexit[i], true)
		if err := g.invokeProg(&t.Fexit[i], false); err != nil {
			return err
		}
	}

	if flags&jit.FlagRestoreRegs != 0 {
		g.open(jit.SecEpilogue)
		g.restoreRegs(l.RegsOff)
	}
	if callOrig {
		// im->ip_epilogue: where a retiring image's ip_after_call jump lands.
		g.open(jit.SecTrampExit)
		g.movImm(RDI, t.IM, "im")
		if err := g.callHelper(jit.HelperTrampExit); err != nil {
			return err
		}
	} else if flags&jit.FlagTailCallCtx != 0 {
		g.open(jit.SecEpilogue)
		a.loadDisp32(RAX, int32(-l.TailCallOff))
	}

	g.open(jit.SecEpilogue)
	if l.SaveRet {
		a.load(RAX, -8)
	}
	if g.p.rbxInFrame {
		a.load(RBX, int32(-l.RBXOff))
	} else {
		a.pop(RBX)
	}
	a.leave()
	if flags&jit.FlagSkipFrame != 0 {
		a.addRSP8() // return to the traced function's caller
	}
	return g.emitReturn()
}

// invokeProg emits one program's run (invoke_bpf_prog): the skip NOP where the profile has
// one, cookie into the run context, enter helper, the program unless enter said skip, exit
// helper.
func (g *gen) invokeProg(r *jit.ProgRef, saveRet bool) error {
	a, l := &g.a, &g.l
	if g.p.progNop {
		a.nops(patchLen, g.p.nopMax)
	}
	runCtx := int32(-l.RunCtxOff)
	g.movImm(RDI, uint64(r.Cookie), "")
	a.store(runCtx, RDI)
	g.movImm(RDI, r.Addr, progSym("prog#", r.Index))
	a.lea(RSI, runCtx)
	enter, exit := jit.EnterExit(g.t.Kernel, r.Prog)
	if err := g.callHelper(enter); err != nil {
		return err
	}
	a.movReg(RBX, RAX) // start time, passed to exit
	a.testRAX()
	je := a.off()
	a.nops(2, g.p.nopMax) // becomes je over the program call
	a.lea(RDI, int32(-l.RegsOff))
	// open: a non-JITed program (the LSM-cgroup shim) would get `mov rsi, insnsi` here.
	if err := g.call(progSym("bpf_func#", r.Index), r.BPFFunc); err != nil {
		return err
	}
	if saveRet {
		a.store(-8, RAX)
	}
	if err := a.patchJE(je, a.off()); err != nil {
		return err
	}
	g.movImm(RDI, r.Addr, progSym("prog#", r.Index))
	a.movReg(RSI, RBX)
	a.lea(RDX, runCtx)
	return g.callHelper(exit)
}

// callOrig reloads the arguments and calls the traced function's body, then stashes its
// return value and, before per-program skip NOPs, leaves the NOP5 that im->ip_after_call
// points at (its own section, ip_after_call).
func (g *gen) callOrig() error {
	t, a, l := g.t, &g.a, &g.l
	g.open(jit.SecCallOrig)
	g.restoreRegs(l.RegsOff)
	if g.p.lim.StackArgs {
		g.saveArgs(l.ArgStackOff, true)
	}
	if t.Flags&jit.FlagTailCallCtx != 0 {
		a.loadDisp32(RAX, int32(-l.TailCallOff))
	}
	if t.Flags&jit.FlagOrigStack != 0 {
		// Through the return address; no thunk, no accounting.
		a.load(RBX, 8)
		a.callReg(RBX)
	} else if err := g.call("func", g.origCall()); err != nil {
		return err
	}
	g.open(jit.SecRetval)
	a.store(-8, RAX)
	if !g.p.progNop {
		// im->ip_after_call points here: patched to jmp ip_epilogue when the image retires.
		g.open(jit.SecIPAfterCall)
		a.nops(patchLen, g.p.nopMax)
	}
	return nil
}

// origCall is the original call's target. With SKIP_FRAME, or entered by jmp, it is just past
// the patch site: func_addr, plus 4 if the function starts with ENDBR (or its poison), plus 5.
func (g *gen) origCall() uint64 {
	t := g.t
	switch {
	case t.Flags&jit.FlagSkipFrame == 0 && !g.p.useJmp(t.Flags):
		return t.Func
	case t.IP != 0:
		return t.IP + patchLen
	case g.f.funcEndbr:
		return t.Func + 4 + patchLen
	}
	return t.Func + patchLen
}

// saveArgs is save_args: with forCall false it fills the ctx array from registers and the
// caller's stack; with forCall true it copies only stack arguments to the outgoing area.
// 6.1 has no stack arguments, so its save_regs is the register half of the same walk.
func (g *gen) saveArgs(off int, forCall bool) {
	a, l := &g.a, &g.l
	first := 0
	for i := 0; i < l.NrArgs; i++ {
		loc := l.Args[i]
		if loc.Reg < 0 {
			for j := 0; j < loc.Slots; j++ {
				if loc.Stack+j == 0 {
					first = off
				}
				a.load(RAX, int32(l.StackArgsOff+8*(loc.Stack+j)))
				a.store(int32(-off), RAX)
				off -= 8
			}
			continue
		}
		if forCall {
			continue
		}
		for j := 0; j < loc.Slots; j++ {
			a.store(int32(-off), argRegs[loc.Reg+j])
			off -= 8
		}
	}
	// clean_stack_garbage: a lone stack slot may hold a 4-byte value with stale upper bytes,
	// judged by the size of the last argument.
	if l.StackSlots == 1 && g.t.Model.Args[l.NrArgs-1].Size <= 4 {
		a.storeZero32(int32(-(first - 4)))
	}
}

// restoreRegs reloads the register-passed arguments from the ctx array (restore_regs).
func (g *gen) restoreRegs(off int) {
	for i := 0; i < g.l.NrArgs; i++ {
		loc := g.l.Args[i]
		if loc.Reg < 0 {
			off -= 8 * loc.Slots
			continue
		}
		for j := 0; j < loc.Slots; j++ {
			g.a.load(argRegs[loc.Reg+j], int32(-off))
			off -= 8
		}
		if loc.Reg+loc.Slots >= g.p.lim.ArgRegs {
			break
		}
	}
}

// emitReturn is emit_return: a jump to the return thunk, or ret (+int3 under SLS).
func (g *gen) emitReturn() error {
	a := &g.a
	if g.f.rethunk {
		addr, err := g.t.Helper(SymReturnThunk)
		if err != nil {
			return err
		}
		g.reloc(a.off()+1, jit.RelocRel32, SymReturnThunk)
		return a.rel32(opJmp, g.pc(), addr)
	}
	a.ret()
	if g.f.int3 {
		a.int3()
	}
	return nil
}

// callHelper calls a kernel helper by name.
func (g *gen) callHelper(name string) error {
	addr, err := g.t.Helper(name)
	if err != nil {
		return err
	}
	return g.call(name, addr)
}

// call is emit_rsb_call (6.12) / emit_call (6.1): accounting template if active, then
// call rel32 computed from the final image address.
func (g *gen) call(sym string, target uint64) error {
	if g.f.callDepth {
		// open: the kernel skips the template when the callee is itself a call thunk
		// (is_callthunk); trampjit cannot see the callee's padding and always emits it.
		g.callDepth()
	}
	g.reloc(g.a.off()+1, jit.RelocRel32, sym)
	return g.a.rel32(opCall, g.pc(), target)
}

func (g *gen) callDepth() {
	v := g.t.Helpers[SymCallDepth] // missing: 0, see SymCallDepth
	at := g.a.callDepth(g.pc(), v)
	g.reloc(at, jit.RelocRel32, SymCallDepth)
}

// movImm is emit_mov_imm64 of a value, recording a relocation when it names a symbol.
func (g *gen) movImm(dst Reg, v uint64, sym string) {
	at, w := g.a.movImm64(g.p.sxImm64, dst, v)
	if sym == "" || at < 0 {
		return
	}
	k := jit.RelocImm64
	if w == 4 {
		k = jit.RelocImm32
	}
	g.reloc(at, k, sym)
}

func (g *gen) pc() uint64 { return g.t.Image + uint64(g.a.off()) }

func (g *gen) reloc(off int, k jit.RelocKind, sym string) {
	g.img.Relocs = append(g.img.Relocs, jit.Reloc{Offset: off, Kind: k, Symbol: sym})
}

// open ends the current section here and starts name, unless name is already open.
func (g *gen) open(name string) {
	if g.sec >= 0 && g.img.Sections[g.sec].Name == name {
		return
	}
	g.close()
	g.img.Sections = append(g.img.Sections, jit.Section{Name: name, Start: g.a.off()})
	g.sec = len(g.img.Sections) - 1
}

func (g *gen) close() {
	if g.sec < 0 {
		return
	}
	s := &g.img.Sections[g.sec]
	s.End = g.a.off()
	if s.End == s.Start { // nothing emitted (e.g. no arguments to spill)
		g.img.Sections = g.img.Sections[:g.sec]
	}
	g.sec = -1
}

// progSym is "prog#N" / "bpf_func#N" without fmt, which the benchmark would feel.
func progSym(prefix string, n int) string {
	if n >= 1 && n <= len(symCache) {
		if prefix == "prog#" {
			return symCache[n-1][0]
		}
		return symCache[n-1][1]
	}
	return fmt.Sprintf("%s%d", prefix, n)
}

// secName is a per-program section name, cached: kind 0 fentry, 1 fmod_ret, 2 fexit.
func secName(f func(int) string, kind, n int) string {
	if n >= 1 && n <= len(secCache) {
		return secCache[n-1][kind]
	}
	return f(n)
}

var secCache = func() (c [64][3]string) {
	for i := range c {
		c[i] = [3]string{jit.SecFentry(i + 1), jit.SecModRet(i + 1), jit.SecFexit(i + 1)}
	}
	return c
}()

var symCache = func() (c [64][2]string) {
	for i := range c {
		c[i] = [2]string{fmt.Sprintf("prog#%d", i+1), fmt.Sprintf("bpf_func#%d", i+1)}
	}
	return c
}()
