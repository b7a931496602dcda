package riscv64

import (
	"fmt"
	"strconv"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// Backend emits riscv64 trampolines like __arch_prepare_bpf_trampoline in
// arch/riscv/net/bpf_jit_comp64.c.
type Backend struct{}

var _ jit.Backend = Backend{}

// Arch is riscv64.
func (Backend) Arch() btfmodel.Arch { return btfmodel.RISCV64 }

// reject refuses a request with the kernel's errno.
func reject(errno jit.Errno, reason string) error { return jit.Reject(errno, "%s", reason) }

// Generate emits t's image: the sizing pass of arch_bpf_trampoline_size (no image address,
// every call auipc+jalr, im as maxCountImm), then the pass at t.Image, as
// arch_prepare_bpf_trampoline runs it. Code ends with the final jr: the bytes up to the
// sizing pass's length are the JIT's scratch buffer, not code.
func (b Backend) Generate(t *jit.Tramp) (*jit.Image, error) {
	g, err := b.prepare(t)
	if err != nil {
		return nil, err
	}
	if err := g.run(false); err != nil {
		return nil, err
	}
	return &jit.Image{
		Arch:     string(btfmodel.RISCV64),
		Kernel:   string(t.Kernel),
		Base:     t.Image,
		Flags:    t.Flags,
		Code:     g.a.b,
		Sections: g.secs,
		Relocs:   g.relocs,
	}, nil
}

// Size is the bytes the kernel allocates for t (arch_bpf_trampoline_size): the sizing
// pass, a multiple of 2 (the JIT counts 16-bit units).
func (b Backend) Size(t *jit.Tramp) (int, error) {
	g, err := b.prepare(t)
	if err != nil {
		return 0, err
	}
	return g.size, nil
}

// gen is one trampoline's resolved inputs plus the state of the pass being run.
type gen struct {
	p    Profile
	t    *jit.Tramp
	l    StackLayout
	size int // sizing-pass bytes

	trampEnter, trampExit uint64
	structOps             bool

	sizing bool
	a      asm
	secs   []jit.Section
	relocs []jit.Reloc
	sec    string
	secAt  int
}

// prepare checks t, computes the frame, resolves helpers and runs the sizing pass.
func (b Backend) prepare(t *jit.Tramp) (*gen, error) {
	if t.Arch != "" && t.Arch != btfmodel.RISCV64 {
		return nil, fmt.Errorf("riscv64 backend given a %s trampoline", t.Arch)
	}
	if t.Model == nil {
		return nil, fmt.Errorf("riscv64: trampoline has no function model")
	}
	p, err := ProfileFor(t.Kernel)
	if err != nil {
		return nil, err
	}
	if n := len(t.Fentry) + len(t.ModRet) + len(t.Fexit); n > p.Limits.MaxTrampLinks {
		// bpf_trampoline_link_prog, generic code; checked here too so a hand-built
		// Tramp cannot go past it.
		return nil, reject(jit.E2BIG, fmt.Sprintf("%d programs on one trampoline, at most %d", n, p.Limits.MaxTrampLinks))
	}
	if errno, why := p.Limits.RefusesFlags(btfmodel.RISCV64, uint32(t.Flags)); errno != "" {
		return nil, reject(jit.ENOTSUPP, why)
	}
	if t.Fsessions > 0 && !p.Limits.Fsession {
		return nil, reject(jit.ENOTSUPP, fmt.Sprintf("the %s riscv64 JIT has no fsession support (bpf_jit_supports_fsession)", t.Kernel))
	}
	if t.StructOps != nil {
		if err := checkStructOps(t); err != nil {
			return nil, err
		}
	}
	g := &gen{p: p, t: t, structOps: t.Flags&jit.FlagIndirect != 0}
	if g.l, err = Layout(p, t.Model, t.Flags, t.CookieSlots); err != nil {
		return nil, err
	}
	for _, list := range [][]jit.ProgRef{t.Fentry, t.ModRet, t.Fexit} {
		for _, pr := range list {
			en, ex := jit.EnterExit(t.Kernel, pr.Prog)
			if _, err := t.Helper(en); err != nil {
				return nil, err
			}
			if _, err := t.Helper(ex); err != nil {
				return nil, err
			}
		}
	}
	if t.Flags&jit.FlagCallOrig != 0 {
		if g.trampEnter, err = t.Helper(jit.HelperTrampEnter); err != nil {
			return nil, err
		}
		if g.trampExit, err = t.Helper(jit.HelperTrampExit); err != nil {
			return nil, err
		}
	}
	if err := g.run(true); err != nil {
		return nil, err
	}
	g.size = len(g.a.b)
	if g.size > PageSize { // bpf_trampoline_update after arch_bpf_trampoline_size
		return nil, reject(jit.E2BIG, fmt.Sprintf("trampoline needs %d bytes, more than a %d-byte page", g.size, PageSize))
	}
	return g, nil
}

// run is one pass of __arch_prepare_bpf_trampoline.
func (g *gen) run(sizing bool) error {
	g.sizing = sizing
	nprogs := len(g.t.Fentry) + len(g.t.ModRet) + len(g.t.Fexit)
	g.a = asm{base: g.t.Image, rvc: g.p.RVC, zbb: g.t.Features.Zbb, sizing: sizing}
	if sizing {
		g.a.b = make([]byte, 0, 128+80*nprogs)
		g.relocs, g.secs = nil, nil
	} else {
		g.a.b = make([]byte, 0, g.size)
		g.relocs = make([]jit.Reloc, 0, 4+4*nprogs)
		g.secs = make([]jit.Section, 0, 10+nprogs)
	}
	g.sec = ""
	t, l, f, a := g.t, g.l, g.t.Flags, &g.a
	S := int32(l.StackSize)

	if !g.structOps {
		g.open(jit.SecPrologue)
		// Frame 1 for the traced function (ra, its caller's s0), frame 2 for the
		// trampoline (t0, the return into the traced function).
		a.addi(SP, SP, -16)
		a.sd(SP, 8, RA)
		a.sd(SP, 0, FP)
		a.addi(FP, SP, 16)
		a.addi(SP, SP, -S)
		a.sd(SP, S-8, T0)
		a.sd(SP, S-16, FP)
		a.addi(FP, SP, S)
	} else {
		g.structOpsPrologue(S) // called through a function pointer: one frame
	}
	a.sd(FP, -int32(l.SRegOff), S1) // s1 carries each program's start time

	if l.HasIP {
		g.open(jit.SecIP)
		g.loadAddr(T1, t.Func, "func")
		a.sd(FP, -int32(l.IPOff), T1)
	}
	g.open(jit.SecNrArgs)
	if g.p.FuncMeta {
		g.storeMeta(jit.FuncMeta(l.NArgs, 0, false))
	} else {
		a.li(T1, int32(l.NArgs))
		a.sd(FP, -int32(l.NRegsOff), T1)
	}
	g.open(jit.SecArgSpill)
	g.storeArgs()

	if t.Fsessions > 0 {
		g.sessionStart()
	}
	if f&jit.FlagCallOrig != 0 {
		g.open(jit.SecTrampEnter)
		g.loadIM()
		if err := g.call(g.trampEnter, jit.HelperTrampEnter); err != nil {
			return err
		}
	}
	for i := range t.Fentry {
		pr := &t.Fentry[i]
		g.open(g.progSection(pr))
		g.cookieMeta(pr, false)
		if err := g.invoke(pr, f&jit.FlagRetFentryRet != 0); err != nil {
			return err
		}
	}

	var fix []int // invoke_bpf_mod_ret's placeholders, patched to bne below
	if len(t.ModRet) > 0 {
		g.open(jit.SecModRetInit)
		a.sd(FP, -int32(l.RetvalOff), Zero) // zeroed once for all fmod_ret programs
	}
	for i := range t.ModRet {
		pr := &t.ModRet[i]
		g.open(secName(pr.Index, 1))
		if err := g.invoke(pr, true); err != nil {
			return err
		}
		a.ld(T1, -int32(l.RetvalOff), FP)
		fix = append(fix, a.off())
		a.nop()
	}

	if f&jit.FlagCallOrig != 0 {
		g.open(jit.SecCallOrig)
		g.restoreArgs()
		for j := 0; j < l.NStack(); j++ { // restore_stack_args: the original's own copy
			a.ld(T1, -int32(l.ArgOff(MaxRegArgs+j)), FP)
			a.sd(FP, -int32(l.StkArgOff-8*j), T1)
		}
		// orig_call skips the patch site: the two instructions at the function's entry
		// (ftrace's auipc/jalr or a BPF program's two NOPs).
		if err := g.call(t.Func+8, "func"); err != nil {
			return err
		}
		g.open(jit.SecRetval)
		a.sd(FP, -int32(l.RetvalOff), A0)
		a.sd(FP, -int32(l.RetvalOff-8), A5)
		if !g.p.ProgSkipNop {
			g.open(jit.SecIPAfterCall)
			a.nop() // im->ip_after_call: room for auipc+jalr to ip_epilogue on teardown
			a.nop()
		}
	}
	if !sizing {
		for _, at := range fix {
			a.patch(at, rvBne(T1, Zero, int32(a.off()-at)))
		}
	}

	if t.Fsessions > 0 {
		g.open(jit.SecIsReturn) // where the fmod_ret bne lands
		g.storeMeta(jit.FuncMeta(l.NArgs, 0, true))
	}
	for i := range t.Fexit {
		pr := &t.Fexit[i]
		g.open(secName(pr.Index, 2))
		g.cookieMeta(pr, true)
		if err := g.invoke(pr, false); err != nil {
			return err
		}
	}
	if f&jit.FlagCallOrig != 0 {
		g.open(jit.SecTrampExit) // im->ip_epilogue
		g.loadIM()
		if err := g.call(g.trampExit, jit.HelperTrampExit); err != nil {
			return err
		}
	}

	g.open(jit.SecEpilogue)
	if f&jit.FlagRestoreRegs != 0 {
		g.restoreArgs()
	}
	if l.SaveRet {
		if g.p.RetvalA5First {
			a.ld(A5, -int32(l.RetvalOff-8), FP)
			if g.structOps {
				m := t.Model
				if err := a.signExtend(A0, A5, m.RetSize, m.RetFlags&btfmodel.SignedArg != 0); err != nil {
					return err
				}
			} else {
				a.ld(A0, -int32(l.RetvalOff), FP)
			}
		} else {
			a.ld(A0, -int32(l.RetvalOff), FP)
			a.ld(A5, -int32(l.RetvalOff-8), FP)
		}
	}
	a.ld(S1, -int32(l.SRegOff), FP)
	if !g.structOps {
		a.ld(T0, S-8, SP)
		a.ld(FP, S-16, SP)
		a.addi(SP, SP, S)
		a.ld(RA, 8, SP)
		a.ld(FP, 0, SP)
		a.addi(SP, SP, 16)
		if f&jit.FlagSkipFrame != 0 {
			a.jalr(Zero, RA, 0) // back to the traced function's caller
		} else {
			a.jalr(Zero, T0, 0) // into the traced function, past the patch site
		}
	} else {
		g.structOpsEpilogue(S)
	}
	g.open("")
	return nil
}

// storeArgs is store_args: a0..a7, then the caller's stack slots through t1.
func (g *gen) storeArgs() {
	l, a := g.l, &g.a
	for i := 0; i < l.NArgs; i++ {
		if i < MaxRegArgs {
			a.sd(FP, -int32(l.ArgOff(i)), A0+Reg(i))
			continue
		}
		a.ld(T1, int32(StackArgBase+8*(i-MaxRegArgs)), FP)
		a.sd(FP, -int32(l.ArgOff(i)), T1)
	}
}

// restoreArgs is restore_args for the register slots.
func (g *gen) restoreArgs() {
	for i := 0; i < g.l.NRegs; i++ {
		g.a.ld(A0+Reg(i), -int32(g.l.ArgOff(i)), FP)
	}
}

// invoke is invoke_bpf_prog: cookie into run_ctx, enter, the program unless enter returned
// 0, exit.
func (g *gen) invoke(pr *jit.ProgRef, saveRet bool) error {
	l, a := g.l, &g.a
	if g.p.ProgSkipNop {
		a.nop() // patched to skip this block once the program is detached
	}
	if pr.Cookie != 0 {
		a.imm(T1, int64(pr.Cookie)) // not an address
		a.sd(FP, -int32(l.RunCtxOff), T1)
	} else {
		a.sd(FP, -int32(l.RunCtxOff), Zero)
	}
	g.loadAddr(A0, pr.Addr, progSym(pr.Index, 0))
	a.addi(A1, FP, -int32(l.RunCtxOff))
	enter, exit := jit.EnterExit(g.t.Kernel, pr.Prog) // helpers checked in prepare
	if err := g.call(g.t.Helpers[enter], enter); err != nil {
		return err
	}
	a.mv(S1, A0) // the start time, valid even when the program is skipped
	branch := a.off()
	a.nop()
	a.addi(A0, FP, -int32(l.ArgsOff))
	// open: programs are assumed JITed; the interpreter case (insnsi into a1) cannot
	// happen with BPF_JIT_ALWAYS_ON and jit.ProgRef cannot express it.
	if err := g.call(pr.BPFFunc, progSym(pr.Index, 1)); err != nil {
		return err
	}
	if saveRet {
		a.sd(FP, -int32(l.RetvalOff), A0)
		a.sd(FP, -int32(l.RetvalOff-8), A5) // regmap[BPF_REG_0]
	}
	if !g.sizing {
		a.patch(branch, rvBeq(A0, Zero, int32(a.off()-branch)))
	}
	g.loadAddr(A0, pr.Addr, progSym(pr.Index, 0))
	a.mv(A1, S1)
	a.addi(A2, FP, -int32(l.RunCtxOff))
	return g.call(g.t.Helpers[exit], exit)
}

// loadIM puts im in a0 for __bpf_tramp_enter/exit; the sizing pass loads the longest
// constant instead, so the real image is never longer.
func (g *gen) loadIM() {
	if g.sizing {
		g.a.imm(A0, maxCountImm)
		return
	}
	g.loadAddr(A0, g.t.IM, "im")
}

// loadAddr is emit_imm of an address, recorded as a relocation.
func (g *gen) loadAddr(rd Reg, v uint64, sym string) {
	g.reloc(jit.RelocImm64, sym)
	g.a.imm(rd, int64(v))
}

// call is emit_call(addr, true): jal within ±1 MiB of the final pc, else auipc t1 + jalr
// ra; the sizing pass has no address, so it always takes the pair.
func (g *gen) call(target uint64, sym string) error {
	g.reloc(jit.RelocBranch, sym)
	return g.a.call(target, true)
}

func (g *gen) reloc(kind jit.RelocKind, sym string) {
	if !g.sizing {
		g.relocs = append(g.relocs, jit.Reloc{Offset: g.a.off(), Kind: kind, Symbol: sym})
	}
}

// open ends the current section at the current offset and starts name ("" ends).
func (g *gen) open(name string) {
	at := g.a.off()
	if g.sec != "" && at > g.secAt && !g.sizing {
		g.secs = append(g.secs, jit.Section{Name: g.sec, Start: g.secAt, End: at})
	}
	g.sec, g.secAt = name, at
}

// Names per program index, cached for the first btfmodel.MaxTrampLinks indexes.
var (
	secNames [btfmodel.MaxTrampLinks + 1][3]string
	progSyms [btfmodel.MaxTrampLinks + 1][2]string
)

func init() {
	for i := range secNames {
		secNames[i] = [3]string{jit.SecFentry(i), jit.SecModRet(i), jit.SecFexit(i)}
		progSyms[i] = [2]string{"prog#" + strconv.Itoa(i), "bpf_func#" + strconv.Itoa(i)}
	}
	jit.Register(Backend{}, Disassembler{})
}

// secName is the section of program n: kind 0 fentry, 1 fmod_ret, 2 fexit.
func secName(n, kind int) string {
	if n >= 0 && n <= btfmodel.MaxTrampLinks {
		return secNames[n][kind]
	}
	return [3]func(int) string{jit.SecFentry, jit.SecModRet, jit.SecFexit}[kind](n)
}

// progSym is "prog#n" (kind 0) or "bpf_func#n" (kind 1).
func progSym(n, kind int) string {
	if n >= 0 && n <= btfmodel.MaxTrampLinks {
		return progSyms[n][kind]
	}
	return [2]string{"prog#", "bpf_func#"}[kind] + strconv.Itoa(n)
}
