package arm64

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// Backend emits arm64 trampolines like prepare_trampoline in
// arch/arm64/net/bpf_jit_comp.c.
type Backend struct{}

var _ jit.Backend = Backend{}

// Arch is arm64.
func (Backend) Arch() btfmodel.Arch { return btfmodel.ARM64 }

// reject refuses a request with the kernel's errno.
func reject(errno jit.Errno, reason string) error { return jit.Reject(errno, "%s", reason) }

// Generate emits t's image: a sizing pass that reserves the worst case for every call
// and im load, then the emission pass at t.Image, as arch_prepare_bpf_trampoline does
// around prepare_trampoline.
func (b Backend) Generate(t *jit.Tramp) (*jit.Image, error) {
	g, err := b.prepare(t)
	if err != nil {
		return nil, err
	}
	words := g.run(false)
	for i, w := range words {
		if w == Fault { // validate_code
			return nil, reject(jit.EINVAL, fmt.Sprintf("instruction %d (offset %#x) could not be encoded", i, 4*i))
		}
	}
	if !g.p.Limits.KernelFuncTargets && !t.ProgTarget && t.StructOps == nil {
		// register_fentry: the function is an ftrace site but tr->fops is NULL.
		return nil, reject(jit.ENOTSUPP, fmt.Sprintf("%s arm64 cannot attach to kernel function %s (no ftrace direct calls before 6.4); only BPF-program targets", t.Kernel, t.Model.Name))
	}
	code := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(code[4*i:], w)
	}
	return &jit.Image{
		Arch:     string(btfmodel.ARM64),
		Kernel:   string(t.Kernel),
		Base:     t.Image,
		Flags:    t.Flags,
		Code:     code,
		Sections: g.secs,
		Relocs:   g.relocs,
	}, nil
}

// Size is the bytes the kernel allocates for t: the sizing pass (6.12,
// arch_bpf_trampoline_size) or the whole page (6.1). The image is Generate's code
// followed by brk #0x100 up to Size.
func (b Backend) Size(t *jit.Tramp) (int, error) {
	g, err := b.prepare(t)
	if err != nil {
		return 0, err
	}
	if !g.p.PackAlloc {
		return PageSize, nil
	}
	return g.size, nil
}

// gen is one trampoline's resolved inputs plus the state of the pass being run.
type gen struct {
	p    Profile
	t    *jit.Tramp
	l    StackLayout
	size int // sizing-pass bytes

	trampEnter, trampEx uint64

	sizing bool
	code   []uint32
	secs   []jit.Section
	relocs []jit.Reloc
	sec    string
	secAt  int
}

// prepare checks t, computes the frame, resolves helpers and runs the sizing pass.
func (b Backend) prepare(t *jit.Tramp) (*gen, error) {
	if t.Arch != "" && t.Arch != btfmodel.ARM64 {
		return nil, fmt.Errorf("arm64 backend given a %s trampoline", t.Arch)
	}
	if t.Model == nil {
		return nil, fmt.Errorf("arm64: trampoline has no function model")
	}
	p, err := ProfileFor(t.Kernel)
	if err != nil {
		return nil, err
	}
	if n := len(t.Fentry) + len(t.ModRet) + len(t.Fexit); n > p.Limits.MaxTrampLinks {
		// __bpf_trampoline_link_prog, generic code; checked here too so a hand-built
		// Tramp cannot go past it.
		return nil, reject(jit.E2BIG, fmt.Sprintf("%d programs on one trampoline, at most %d", n, p.Limits.MaxTrampLinks))
	}
	g := &gen{p: p, t: t}
	if err := g.checkStructOps(); err != nil {
		return nil, err
	}
	if t.Fsessions > 0 && !p.Fsession {
		return nil, reject(jit.ENOTSUPP, fmt.Sprintf("the %s arm64 JIT has no fsession support (bpf_jit_supports_fsession)", t.Kernel))
	}
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
		if g.trampEx, err = t.Helper(jit.HelperTrampExit); err != nil {
			return nil, err
		}
	}
	g.size = 4 * len(g.run(true))
	if g.size > PageSize {
		if p.PackAlloc { // bpf_trampoline_update after arch_bpf_trampoline_size
			return nil, reject(jit.E2BIG, fmt.Sprintf("trampoline needs %d bytes, more than a %d-byte page", g.size, PageSize))
		}
		return nil, reject(jit.EFBIG, fmt.Sprintf("trampoline needs %d bytes, more than a %d-byte page", g.size, PageSize))
	}
	return g, nil
}

// run is one pass of prepare_trampoline. The sizing pass knows no image address:
// every call is indirect and every im load is reserved as 4 instructions.
func (g *gen) run(sizing bool) []uint32 {
	g.sizing = sizing
	nprogs := len(g.t.Fentry) + len(g.t.ModRet) + len(g.t.Fexit)
	if sizing {
		g.code = make([]uint32, 0, 64+32*nprogs)
		g.relocs, g.secs = nil, nil
	} else {
		g.code = make([]uint32, 0, g.size/4)
		g.relocs = make([]jit.Reloc, 0, 4+4*nprogs)
		g.secs = make([]jit.Section, 0, 14+nprogs)
	}
	g.sec = ""
	t, l, f := g.t, g.l, g.t.Flags

	if t.StructOps != nil {
		g.landing() // kCFI word, bti: sections of their own
	}
	g.open(jit.SecPrologue)
	if t.Features.IBT && t.StructOps == nil {
		g.emit(BTIJC) // reached by bl, br (ftrace_caller, PLT) or blr
	}
	if !g.oneFrame() {
		g.emit(PUSH(FP, X9), g.mov(FP, SP)) // frame 1: x9 = parent LR
	}
	g.emit(PUSH(FP, LR), g.mov(FP, SP)) // frame 2: x30 = patched function (struct_ops: the caller)
	g.emit(SUBI(true, SP, SP, l.StackSize))

	if l.HasIP {
		g.open(jit.SecIP)
		g.addrMov(TMP, t.Func, "func")
		g.emit(STR(TMP, SP, l.IP))
	}
	g.open(jit.SecNrArgs)
	if g.p.FuncMeta {
		g.storeMeta(jit.FuncMeta(l.NArgs, 0, false))
	} else {
		g.emit(MOVZ(true, TMP, uint16(l.NArgs), 0), STR(TMP, SP, l.NRegsOff))
	}
	g.open(jit.SecArgSpill)
	for i := 0; i < l.NRegs; i++ {
		g.emit(STR(Reg(i), SP, l.ArgOff(i)))
	}
	for k, mask := range l.StackMask { // the BPF copy: the last slot's unused bytes cleared
		g.emit(LDR(TMP, FP, g.stackArgBase()+8*k))
		if mask != 0 {
			g.emit(LSL(TMP, TMP, mask), LSR(TMP, TMP, mask))
		}
		g.emit(STR(TMP, SP, l.ArgOff(l.NRegs+k)))
	}
	// The callee-saved registers the program calls use (x19 the bpf_prog, x20 the start
	// time): part of the prologue, though prepare_trampoline saves them after the arguments.
	g.open(jit.SecPrologue)
	g.emit(STR(X19, SP, l.Regs), STR(X20, SP, l.Regs+8))

	if f&jit.FlagCallOrig != 0 {
		g.open(jit.SecTrampEnter)
		g.loadIM()
		g.call(g.trampEnter, jit.HelperTrampEnter)
	}
	if t.Fsessions > 0 {
		g.sessionStart()
	}
	for i := range t.Fentry {
		pr := &t.Fentry[i]
		g.open(g.progSection(pr))
		g.cookieMeta(pr, false)
		g.invoke(*pr, f&jit.FlagRetFentryRet != 0)
	}

	var fix []int // invoke_bpf_mod_ret's branches, patched to cbnz below
	for i, pr := range t.ModRet {
		if i == 0 {
			g.open(jit.SecModRetInit)
			g.emit(STR(XZR, SP, l.Retval)) // zeroed once for all fmod_ret programs
		}
		g.open(secName(pr.Index, 1))
		g.invoke(pr, true)
		g.emit(LDR(TMP, SP, l.Retval))
		fix = append(fix, len(g.code))
		g.emit(NOP)
	}

	if f&jit.FlagCallOrig != 0 {
		g.open(jit.SecCallOrig)
		for i := 0; i < l.NRegs; i++ {
			g.emit(LDR(Reg(i), SP, l.ArgOff(i)))
		}
		for k := range l.StackMask { // the original's own copy, as the caller passed it
			g.emit(LDR(TMP, FP, StackArgBase+8*k), STR(TMP, SP, l.OArgs+8*k))
		}
		g.emit(LDR(TMP, SP, l.RetAddr))
		if g.p.RetToOrig {
			g.emit(ADR(LR, 8), RET(TMP)) // ret, not blr: no BTI landing pad at R
		} else {
			g.emit(BLR(TMP))
		}
		g.open(jit.SecRetval)
		g.emit(STR(X0, SP, l.Retval))
		if !g.p.ProgSkipNop {
			g.open(jit.SecIPAfterCall)
			g.emit(NOP) // im->ip_after_call, patched to b ip_epilogue on teardown
		}
	}
	if !sizing {
		for _, b := range fix {
			g.code[b] = CBNZ(true, TMP, int64(4*(len(g.code)-b)))
		}
	}

	if t.Fsessions > 0 {
		g.open(jit.SecIsReturn) // where the fmod_ret cbnz lands
		g.storeMeta(jit.FuncMeta(l.NArgs, 0, true))
	}
	for i := range t.Fexit {
		pr := &t.Fexit[i]
		g.open(secName(pr.Index, 2))
		g.cookieMeta(pr, true)
		g.invoke(*pr, false)
	}
	if f&jit.FlagCallOrig != 0 {
		g.open(jit.SecTrampExit) // im->ip_epilogue
		g.loadIM()
		g.call(g.trampEx, jit.HelperTrampExit)
	}

	g.open(jit.SecEpilogue)
	if f&jit.FlagRestoreRegs != 0 {
		for i := 0; i < l.NRegs; i++ {
			g.emit(LDR(Reg(i), SP, l.ArgOff(i)))
		}
	}
	g.emit(LDR(X19, SP, l.Regs), LDR(X20, SP, l.Regs+8))
	if l.SaveRet {
		g.emit(LDR(X0, SP, l.Retval))
	}
	g.emit(g.mov(SP, FP))
	if g.oneFrame() {
		g.emit(POP(FP, LR), RET(LR)) // back to the indirect caller
		g.open("")
		return g.code
	}
	g.emit(POP(FP, LR), POP(FP, X9))
	if f&jit.FlagSkipFrame != 0 {
		g.emit(g.mov(LR, X9), RET(X9)) // straight back to the parent
	} else {
		g.emit(g.mov(TMP, LR), g.mov(LR, X9), RET(TMP)) // into the patched function
	}
	g.open("")
	return g.code
}

// invoke is invoke_bpf_prog: cookie into run_ctx, enter, the program unless enter
// returned 0, exit.
func (g *gen) invoke(pr jit.ProgRef, saveRet bool) {
	l := g.l
	if g.p.ProgSkipNop {
		g.emit(NOP) // patched to skip this block once the program is detached
	}
	if pr.Cookie == 0 {
		g.emit(STR(XZR, SP, l.RunCtx))
	} else {
		g.code = AppendMovImm64(g.code, TMP, uint64(pr.Cookie)) // not an address
		g.emit(STR(TMP, SP, l.RunCtx))
	}
	g.addrMov(X19, pr.Addr, progSym(pr.Index, 0))
	g.emit(g.mov(X0, X19), ADDI(true, X1, SP, l.RunCtx))
	enter, exit := jit.EnterExit(g.t.Kernel, pr.Prog) // helpers checked in prepare
	g.call(g.t.Helpers[enter], enter)
	var branch int
	if g.p.MovX20FirstThenCBZ {
		g.emit(g.mov(X20, X0))
		branch = len(g.code)
		g.emit(NOP)
	} else {
		branch = len(g.code)
		g.emit(NOP, g.mov(X20, X0))
	}
	g.emit(ADDI(true, X0, SP, l.Args))
	// open: programs are assumed JITed; the interpreter case (insnsi into x1)
	// cannot happen with BPF_JIT_ALWAYS_ON and jit.ProgRef cannot express it.
	g.call(pr.BPFFunc, progSym(pr.Index, 1))
	if saveRet {
		g.emit(STR(X0, SP, l.Retval))
	}
	if !g.sizing {
		g.code[branch] = CBZ(true, X0, int64(4*(len(g.code)-branch))) // skip to exit
	}
	g.emit(g.mov(X0, X19), g.mov(X1, X20), ADDI(true, X2, SP, l.RunCtx))
	g.call(g.t.Helpers[exit], exit)
}

// loadIM puts im in x0 for __bpf_tramp_enter/exit.
func (g *gen) loadIM() {
	switch {
	case !g.p.IMMovImm64:
		g.addrMov(X0, g.t.IM, "im")
	case g.sizing:
		g.emit(NOP, NOP, NOP, NOP) // worst case reserved
	default:
		g.reloc(jit.RelocImm64, "im")
		g.code = AppendMovImm64(g.code, X0, g.t.IM)
	}
}

// call is emit_call: bl when the profile allows it and the target is within
// ±128 MiB of this instruction's final address, else an absolute blr x10.
func (g *gen) call(target uint64, sym string) {
	pc := g.t.Image + uint64(4*len(g.code))
	off := int64(target - pc)
	if g.p.DirectCalls && !g.sizing && target != 0 && off >= -sz128M && off < sz128M {
		g.reloc(jit.RelocBranch, sym)
		g.emit(BL(off))
		return
	}
	g.addrMov(TMP, target, sym)
	g.emit(BLR(TMP))
}

// mov is A64_MOV(1, rd, rn): ORR where the profile has it and neither register is sp.
func (g *gen) mov(rd, rn Reg) uint32 {
	if g.p.MovORR && rd != SP && rn != SP {
		return MOVR(rd, rn)
	}
	return MOV(rd, rn)
}

func (g *gen) addrMov(rd Reg, v uint64, sym string) {
	g.reloc(jit.RelocImm64, sym)
	g.code = AppendAddrMov(g.code, rd, v)
}

func (g *gen) emit(ws ...uint32) { g.code = append(g.code, ws...) }

func (g *gen) reloc(kind jit.RelocKind, sym string) {
	if !g.sizing {
		g.relocs = append(g.relocs, jit.Reloc{Offset: 4 * len(g.code), Kind: kind, Symbol: sym})
	}
}

// open ends the current section at the current offset and starts name ("" ends).
func (g *gen) open(name string) {
	at := 4 * len(g.code)
	if g.sec != "" && at > g.secAt && !g.sizing {
		g.secs = append(g.secs, jit.Section{Name: g.sec, Start: g.secAt, End: at, Data: g.sec == SecCFI})
	}
	g.sec, g.secAt = name, at
}

// Names per program index, cached for the first btfmodel.MaxTrampLinks indexes: Generate runs on
// every request and the names are the same every time.
var (
	secNames [btfmodel.MaxTrampLinks + 1][3]string
	progSyms [btfmodel.MaxTrampLinks + 1][2]string
)

func init() {
	for i := range secNames {
		secNames[i] = [3]string{jit.SecFentry(i), jit.SecModRet(i), jit.SecFexit(i)}
		progSyms[i] = [2]string{"prog#" + strconv.Itoa(i), "bpf_func#" + strconv.Itoa(i)}
	}
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
