package amd64

import (
	"fmt"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// Symbols the x86 trampoline may embed besides the enter/exit helpers.
const (
	// SymReturnThunk names the return thunk emit_return jumps to with Features.Rethunk. 6.12
	// jumps to whatever x86_return_thunk points at (chosen at boot: __x86_return_thunk,
	// srso_return_thunk, its_return_thunk, ...); give that thunk's address under this name.
	SymReturnThunk = "__x86_return_thunk"
	// SymCallDepth is the address of the per-CPU call-depth counter the accounting template
	// shifts (6.12: pcpu_hot + X86_call_depth; later kernels name it __x86_call_depth).
	// open: without it in Tramp.Helpers the template's displacement is computed against 0.
	SymCallDepth = "__x86_call_depth"
)

const (
	pageSize   = 4096
	insnSafety = 64 // BPF_INSN_SAFETY
)

// profile is what differs between the kernel versions trampjit models, as data.
type profile struct {
	kernel btfmodel.Kernel
	// lim are the argument limits (btfmodel.LimitsFor): 6.1 takes six registers, 6.12
	// copies stack-passed arguments (save_args with >6 slots) up to MAX_BPF_FUNC_ARGS.
	lim btfmodel.ArchLimits
	// rbxInFrame: 6.12 keeps rbx in a frame slot; 6.1 pushes/pops it below the frame.
	rbxInFrame bool
	// sxImm64: emit_mov_imm64 has the sign-extended 7-byte branch (added after 6.7).
	sxImm64 bool
	// nopMax is ASM_NOP_MAX: 8 before 6.5, 11 after "x86/alternatives: Add longer 64-bit NOPs".
	nopMax int
	// endbrEntry: 6.1..6.7 start every trampoline with EMIT_ENDBR (endbr64 under IBT);
	// 6.8+ does so only for indirect (struct_ops) trampolines, via emit_cfi.
	endbrEntry bool
	// callDepth: x86_call_depth_emit_accounting exists (6.2+).
	callDepth bool
	// sls: the distro build has CONFIG_SLS / CONFIG_MITIGATION_SLS, so `ret` is followed by int3.
	// open: for Debian 6.1 this is assumed from the int3 at the end of the capture, which the
	// capture's own note calls page fill; either reading gives the same bytes there.
	sls bool
	// ibt: the distro build has CONFIG_X86_KERNEL_IBT (btfmodel.CapX86KernelIBT: Debian 6.12
	// yes, Debian 6.1 no). It puts ENDBR (or its poison) at traced functions, so orig_call
	// skips 4 more bytes when the request gives no patched call site, and makes EMIT_ENDBR
	// emit endbr64.
	ibt bool
	// alignImage: emit_align pads to the image address (6.1 writes the image in place); 6.12
	// writes a kvmalloc'd buffer at least 16-aligned, so the offset alone decides.
	alignImage bool
	// jmpMode: CONFIG_DYNAMIC_FTRACE_WITH_JMP (btfmodel.CapX86JmpMode): a trampoline that
	// calls the original is entered by jmp; DeriveFlags leaves SKIP_FRAME out then.
	jmpMode bool
	// progNop: each program block starts with a NOP5 and the ip_after_call NOP5 is gone
	// (btfmodel.CapX86ProgNop).
	progNop bool
	// indirectArgs16: stack arguments of an INDIRECT (struct_ops) image are read at rbp+16
	// (btfmodel.CapX86IndirectArgs); 6.12 reads them at rbp+24.
	indirectArgs16 bool
}

// useJmp is bpf_trampoline_use_jmp: the original is called and no frame is skipped, which in
// a jmp-mode kernel means the trampoline was entered by jmp.
func (p *profile) useJmp(flags jit.Flags) bool {
	return p.jmpMode && flags&jit.FlagCallOrig != 0 && flags&jit.FlagSkipFrame == 0
}

// profiles is the JIT's own switches per modelled kernel; the argument limits come from
// btfmodel.LimitsFor and IBT from btfmodel.CapX86KernelIBT.
var profiles = map[btfmodel.Kernel]profile{
	btfmodel.Kernel61: {
		kernel: btfmodel.Kernel61, nopMax: 8, endbrEntry: true, sls: true, alignImage: true,
	},
	btfmodel.Kernel612: {
		kernel: btfmodel.Kernel612, rbxInFrame: true, sxImm64: true, nopMax: 11, callDepth: true,
		sls: true,
	},
	btfmodel.Kernel72: {
		kernel: btfmodel.Kernel72, rbxInFrame: true, sxImm64: true, nopMax: 11, callDepth: true,
		sls: true,
	},
}

func profileFor(k btfmodel.Kernel) (*profile, error) {
	p, ok := profiles[k]
	if !ok {
		return nil, fmt.Errorf("amd64: no profile for kernel %q", k)
	}
	p.lim = btfmodel.LimitsFor(btfmodel.AMD64, k)
	p.ibt = k.Has(btfmodel.CapX86KernelIBT)
	p.jmpMode = k.Has(btfmodel.CapX86JmpMode)
	p.progNop = k.Has(btfmodel.CapX86ProgNop)
	p.indirectArgs16 = k.Has(btfmodel.CapX86IndirectArgs)
	return &p, nil
}

// feats are the switches in effect for one image: the request's features filtered by what
// the profile's kernel can do.
type feats struct {
	endbrEntry bool // endbr64 first (6.1..6.7: every image)
	ibtBuild   bool // EMIT_ENDBR emits endbr64 (emit_cfi's, with INDIRECT)
	rethunk    bool // jmp x86_return_thunk instead of ret
	int3       bool // int3 after ret
	callDepth  bool // accounting template before the preamble and every emit_rsb_call
	funcEndbr  bool
}

func (p *profile) feats(f jit.Features, flags jit.Flags) feats {
	// Features.IBT turns IBT on for a profile whose distro build lacks it; a false value
	// cannot turn it off (open: jit.Features has no "unset" state).
	ibt := p.ibt || f.IBT
	e := feats{rethunk: f.Rethunk, funcEndbr: ibt}
	e.int3 = p.sls && !f.Rethunk
	// 6.8+ gives only indirect (struct_ops) trampolines a landing pad, written by emitCFI.
	e.ibtBuild = ibt
	e.endbrEntry = ibt && p.endbrEntry
	// 6.1 predates call-depth tracking; the switch changes nothing there.
	e.callDepth = f.CallDepth && p.callDepth
	return e
}
