package emu

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// struct_ops images. The kernel builds one image per implemented member of an ops table
// (bpf_struct_ops_map_update_elem, kernel/bpf/bpf_struct_ops.c) and stores its address, past
// the CFI preamble (cfi_get_offset()), in the table; the subsystem calls it like any member,
// e.g. tcp_ca's icsk->icsk_ca_ops->cong_avoid(sk, ack, acked). So there is no traced
// function and no patch site here: the harness's caller loads the member's arguments and
// makes an indirect call through a register (x86 call *%r11, arm64 blr x16, riscv64 jalr
// ra, t1) to image+offset, and the image runs its one program and returns to the caller.
//
// What the oracle derives, from the request and the member's model alone:
//   - flags: INDIRECT where the kernel has it (CapStructOpsIndirect), RET_FENTRY_RET for a
//     non-void member (bpf_struct_ops_prepare_trampoline); a request's flags override;
//   - one enter/program/exit triple with the non-recursion-checking pair
//     (bpf_trampoline_enter: bpf_prog_check_recur is false for BPF_PROG_TYPE_STRUCT_OPS),
//     __bpf_prog_enter/exit or the _sleepable pair; nothing else is called (no
//     __bpf_tramp_enter/exit: im is NULL; no original);
//   - the program's ctx: the argument slots as for fentry (seenWords), ctx[-1] = slot count;
//   - the caller's return value: the program's R0 through the return value slot (x86
//     mov rax, [rbp-8]; arm64 ldr x0, [sp, #retval_off]); only the member's width is
//     required. riscv64 derives a0 from the slot of a5 (BPF R0) by the member's type
//     ("riscv, bpf: Sign extend struct ops return values properly", in 6.12.53 and 6.18):
//     sign-extended for a signed 1/2-byte type and for any 4-byte one, a0 = R0 for an
//     unsigned 1/2-byte or an 8-byte type, all 64 bits checked. A void member's image has
//     no return value slot: nothing is required of the return register;
//   - a recursion miss (enter returns 0: the program is skipped, exit gets start 0) leaves
//     the slot as the trampoline found it, uninitialised stack: the harness's poison;
//   - landing: the entry is a legal target of the indirect call (x86 IBT: endbr64; arm64
//     BTI: bti c or bti jc, since blr sets BTYPE 01) and, with kCFI, the preamble carries
//     the member's hash (features.cfi_hash) where the caller's check reads it.

// soDefaultRet is what the struct_ops program returns unless Options.RetValues says: its
// low byte, half and word are negative as signed types, so that a wrong extension shows.
const soDefaultRet = 0x8badf00dc0ffe881

// soPoison is the stack poison as a word: what an unwritten return value slot holds.
const soPoison = 0xeeeeeeeeeeeeeeee

// structOpsFlags are the flags bpf_struct_ops_prepare_trampoline builds the member's image
// with, or the request's override.
func structOpsFlags(req *jit.Request, m *btfmodel.FuncModel) jit.Flags {
	if req.Flags != nil {
		return jit.Flags(*req.Flags)
	}
	var f jit.Flags
	if req.Kernel.Has(btfmodel.CapStructOpsIndirect) {
		f |= jit.FlagIndirect
	}
	if m.RetSize > 0 {
		f |= jit.FlagRetFentryRet
	}
	return f
}

// structOpsHelpers is bpf_trampoline_enter's choice for a struct_ops program: the plain pair,
// or the sleepable one.
func structOpsHelpers(p jit.Prog) (string, string) {
	if p.Sleepable {
		return "__bpf_prog_enter_sleepable", "__bpf_prog_exit_sleepable"
	}
	return "__bpf_prog_enter", "__bpf_prog_exit"
}

// cfiOffset is cfi_get_offset(): how far past the image's start the ops table points. A
// kernel without INDIRECT (6.1) emits no CFI sequence and stores the image itself.
func cfiOffset(req *jit.Request, f jit.Flags) (uint64, error) {
	if f&jit.FlagIndirect == 0 {
		return 0, nil
	}
	switch req.Features.CFI {
	case jit.CFINone:
		return 0, nil
	case jit.CFIKCFI:
		if req.Arch == btfmodel.AMD64 {
			// mov eax, hash, padded to 16 bytes with CONFIG_CALL_PADDING (selected by
			// FINEIBT with IBT, and by call depth tracking).
			if req.Features.IBT || req.Features.CallDepth {
				return 16, nil
			}
			return 5, nil
		}
		return 4, nil // the hash word before bti jc / the first instruction
	case jit.CFIFineIBT:
		if req.Arch == btfmodel.AMD64 {
			return 16, nil // the 16-byte FineIBT preamble, which the caller enters
		}
	}
	return 0, fmt.Errorf("features.cfi %q: not a CFI mode of %s", req.Features.CFI, req.Arch)
}

// fineIBTCaller is the call site a FineIBT kernel rewrites an indirect call into
// (arch/x86/kernel/alternative.c, fineibt_caller): the member's hash in r10d (eax where
// CapX86FineIBTEAX), then a call to the pointer minus 16, the preamble, which subtracts the
// hash and traps unless it matched. The harness's caller calls this stub, which loads the
// hash and jumps to the image's start: the preamble then runs as the kernel's would.
func fineIBTCaller(req *jit.Request, at, image uint64) ([]byte, error) {
	var b []byte
	if req.Kernel.Has(btfmodel.CapX86FineIBTEAX) {
		b = append(b, 0xb8) // mov eax, hash
	} else {
		b = append(b, 0x41, 0xba) // mov r10d, hash
	}
	b = binary.LittleEndian.AppendUint32(b, req.Features.CFIHash)
	j, err := x86asm(nil).rel32(0xe9, at+uint64(len(b)), image)
	return append(b, j...), err
}

// structOpsRet is what the caller finds in its return register when the program returned
// r0 (or the slot holds r0), and the bits of it that are required.
func structOpsRet(req *jit.Request, m *btfmodel.FuncModel, r0 uint64) (ret, mask uint64) {
	if req.Arch != btfmodel.RISCV64 {
		return widen(r0, m.RetSize), widen(^uint64(0), m.RetSize)
	}
	signed := m.RetFlags&btfmodel.SignedArg != 0
	switch {
	case m.RetSize == 4:
		return sext32(r0), ^uint64(0)
	case m.RetSize == 1 && signed:
		return uint64(int64(int8(r0))), ^uint64(0)
	case m.RetSize == 2 && signed:
		return uint64(int64(int16(r0))), ^uint64(0)
	}
	return r0, ^uint64(0)
}

// expectStructOps is the oracle's expectation for one call of a struct_ops image.
func expectStructOps(req *jit.Request, m *btfmodel.FuncModel, a *jit.Addrs, o *Options) (*expectation, error) {
	nregs := m.NrRegs()
	if len(o.Args) != nregs {
		return nil, fmt.Errorf("%d argument words for %d register slots", len(o.Args), nregs)
	}
	if len(req.Progs) != 1 || len(a.Progs) != 1 {
		return nil, fmt.Errorf("a struct_ops image has one program, not %d", len(req.Progs))
	}
	if len(o.RetValues) > 1 {
		return nil, fmt.Errorf("%d return values for 1 struct_ops program", len(o.RetValues))
	}
	missed := false
	for _, i := range o.Miss {
		if i != 0 {
			return nil, fmt.Errorf("miss: no program %d", i)
		}
		missed = true
	}
	flags := structOpsFlags(req, m)
	seen, _ := seenWords(req, m, o.Args)
	x := &expectation{nregs: nregs, flags: flags, seen: seen, retSlot: flags&jit.FlagRetFentryRet != 0, structOps: true}
	p := req.Progs[0]
	x.progs = []expProg{{kind: p.Kind, ran: !missed}}
	enter, exit := structOpsHelpers(p)
	x.events = append(x.events, event{kind: evEnter, name: enter, prog: 0, ptr: uint64(a.Progs[0].Prog)})
	if !missed {
		ev := event{kind: evProg, prog: 0, ptr: uint64(a.Progs[0].BPFFunc), n: nregs, nargs: uint64(nregs)}
		copy(ev.ctx[:], seen)
		x.events = append(x.events, ev)
		x.progs[0].ctx = append([]uint64(nil), seen...)
	}
	x.events = append(x.events, event{kind: evExit, name: exit, prog: 0, ptr: uint64(a.Progs[0].Prog)})
	if !x.retSlot {
		return x, nil // retMask 0: a void member returns nothing
	}
	r0 := uint64(soDefaultRet)
	if len(o.RetValues) == 1 {
		r0 = o.RetValues[0]
	}
	if missed {
		r0 = soPoison
	}
	x.ret, x.retMask = structOpsRet(req, m, r0)
	return x, nil
}

// structOpsLanding checks the image's entry as the indirect call meets it; it returns the
// problems found (none: a legal landing).
func structOpsLanding(req *jit.Request, code []byte, off uint64) []string {
	var bad []string
	f := req.Features
	at := func(o uint64, n int) []byte {
		if o+uint64(n) > uint64(len(code)) {
			return nil
		}
		return code[o : o+uint64(n)]
	}
	if f.CFI == jit.CFIFineIBT && off > 0 {
		// The preamble checks the hash when it runs; it must start with endbr64.
		if e := at(0, 4); e == nil || string(e) != "\xf3\x0f\x1e\xfa" {
			bad = append(bad, "no endbr64 at the FineIBT preamble (image+0x0), which the call site enters")
		}
	}
	if f.CFI == jit.CFIKCFI && off > 0 {
		// The caller compares the preamble's hash with its own before the call.
		hashAt := off - 4
		if req.Arch == btfmodel.AMD64 {
			hashAt = 1 // mov eax, imm32 at the image's start
		}
		if h := at(hashAt, 4); h == nil || binary.LittleEndian.Uint32(h) != f.CFIHash {
			bad = append(bad, fmt.Sprintf("the kCFI hash at image+%#x is not the member's %#x", hashAt, f.CFIHash))
		}
	}
	switch req.Arch {
	case btfmodel.AMD64:
		if f.IBT && f.CFI != jit.CFIFineIBT { // FineIBT's endbr64 starts the preamble (above)
			if e := at(off, 4); e == nil || string(e) != "\xf3\x0f\x1e\xfa" {
				bad = append(bad, fmt.Sprintf("no endbr64 at image+%#x: an indirect call faults (#CP) with IBT", off))
			}
		}
	case btfmodel.ARM64:
		e := at(off, 4)
		if e == nil {
			bad = append(bad, fmt.Sprintf("no instruction at image+%#x", off))
			break
		}
		w := binary.LittleEndian.Uint32(e)
		const bti, btiMask = 0xd503241f, 0xffffff3f // hint #32..#38: bti, bti c, bti j, bti jc
		isBTI := w&btiMask == bti
		if isBTI && w != a64BtiC && w != a64BtiJC {
			bad = append(bad, fmt.Sprintf("%#08x at image+%#x is a BTI that does not accept blr (want bti c or bti jc)", w, off))
		}
		if f.IBT && !isBTI {
			bad = append(bad, fmt.Sprintf("%#08x at image+%#x is no BTI landing pad: blr into a guarded page faults", w, off))
		}
	}
	return bad
}

// a64BtiJC is bti jc, the other BTI form blr may land on (a64BtiC: bti c).
const a64BtiJC = 0xd50324df

// layOutStructOps lays out a struct_ops image's surroundings: the image, the helper and
// program stubs and per cluster the clobber routines and fail addresses; the caller enters
// at image + cfi_get_offset().
func (h *Harness) layOutStructOps(l *Loaded, nc *nativeCfg) ([]piece, map[string]int, []uint64, error) {
	req, addrs, o := l.req, l.addrs, &l.opts
	off, err := cfiOffset(req, l.exp.flags)
	if err != nil {
		return nil, nil, nil, err
	}
	l.entry, l.body = l.image+off, 0
	l.landing = structOpsLanding(req, l.code, off)
	fineIBT := req.Features.CFI == jit.CFIFineIBT && off > 0
	retFor := func(int) uint64 {
		if len(o.RetValues) > 0 {
			return o.RetValues[0]
		}
		return soDefaultRet
	}
	stubs, ids, err := buildStubs(h.tg, addrs, req.Progs, retFor, o.Clobber, nc)
	if err != nil {
		return nil, nil, nil, err
	}
	pieces := append([]piece{{name: "image", addr: l.image, code: l.code}}, stubs...)
	if pieces, err = addClusterCode(h.tg, pieces, o.Clobber, nc != nil); err != nil {
		return nil, nil, nil, err
	}
	if fineIBT {
		at := placeAfter(pieces, l.image)
		code, err := fineIBTCaller(req, at, l.image)
		if err != nil {
			return nil, nil, nil, err
		}
		pieces = append(pieces, piece{name: "FineIBT call site", addr: at, code: code})
		l.entry = at
	}
	var fails []uint64
	for _, p := range pieces {
		if p.fail {
			fails = append(fails, p.addr)
		}
	}
	if err := checkOverlaps(pieces); err != nil {
		return nil, nil, nil, err
	}
	return pieces, ids, fails, nil
}

// structOpsRetDetail says what the ret check required of a passing struct_ops call.
func (l *Loaded) structOpsRetDetail() string {
	x := l.exp
	switch {
	case x.retMask == 0:
		return "void member: nothing required of the return register"
	case !x.progs[0].ran:
		return fmt.Sprintf("%#x: the return value slot as the skipped program left it (unwritten stack)", x.ret)
	case x.retMask != ^uint64(0):
		return fmt.Sprintf("%#x: the program's return value in the member's %d bytes", x.ret, l.m.RetSize)
	case l.req.Arch == btfmodel.RISCV64:
		return fmt.Sprintf("%#x: a0 from the program's a5 by the member's type (%s)", x.ret, l.m.RetTypeName)
	}
	return fmt.Sprintf("%#x: the program's return value", x.ret)
}

// landingDetail says what the landing check found in a passing struct_ops call.
func (l *Loaded) landingDetail() string {
	f := l.req.Features
	off := l.entry - l.image
	if l.entry < l.image || l.entry >= l.image+uint64(len(l.code)) {
		return fmt.Sprintf("the ops pointer is image+0x10; the FineIBT call site enters the preamble at image+0x0 with hash %#x, which it accepted", f.CFIHash)
	}
	what := []string{fmt.Sprintf("entered at image+%#x", off)}
	switch {
	case l.req.Arch == btfmodel.AMD64 && len(l.code) >= int(off)+4 && string(l.code[off:off+4]) == "\xf3\x0f\x1e\xfa":
		what = append(what, "endbr64 there")
	case l.req.Arch == btfmodel.ARM64 && len(l.code) >= int(off)+4:
		switch binary.LittleEndian.Uint32(l.code[off:]) {
		case a64BtiC:
			what = append(what, "bti c there")
		case a64BtiJC:
			what = append(what, "bti jc there")
		}
	}
	if f.CFI == jit.CFIKCFI && off > 0 {
		what = append(what, fmt.Sprintf("kCFI hash %#x", f.CFIHash))
	}
	return strings.Join(what, ", ")
}
