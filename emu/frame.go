package emu

import (
	"fmt"
	"sort"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
	uc "github.com/trampjit/trampjit/emu/unicorn"
	"github.com/trampjit/trampjit/jit"
)

// The frame observation: one call of an image under Unicorn with a memory hook over the
// stack and a code hook that knows which instruction is executing, so that every load and
// store the image makes can be placed in its frame, and the pointers it hands the stubs
// (ctx, run_ctx, the original's stack arguments) read where they arrive. CheckFrame holds
// them against the backend's jit.Frame: that is what makes a frame diagram more than the
// backend's own account of its layout.

// FrameAccess is one load or store an instruction of the image made in its frame.
type FrameAccess struct {
	PC    int  `json:"pc"`  // image offset of the instruction
	Off   int  `json:"off"` // from the frame base
	Size  int  `json:"size"`
	Write bool `json:"write,omitempty"`
}

// FramePointer is a frame address a stub was handed, as a frame-base offset.
type FramePointer struct {
	Stub string `json:"stub"` // "bpf_func#1", "__bpf_prog_enter", "original"
	What string `json:"what"` // "ctx", "run_ctx", "session cookie", "stack arguments"
	Off  int    `json:"off"`
	// N is the argument-slot count behind ctx (nr_args's value), or the number of stack
	// arguments the original reads.
	N int `json:"n,omitempty"`
}

// FrameObservation is what one call of an image did to its frame.
type FrameObservation struct {
	Base uint64 `json:"base"` // the frame base register's value while the image calls out
	// SPBases are base - sp at each call out of the image (the sp the callee got, before
	// its return address on x86_64): what jit.Frame.SPBase must be.
	SPBases  []int          `json:"sp_bases"`
	Accesses []FrameAccess  `json:"accesses"`
	Pointers []FramePointer `json:"pointers"`
	// Others are the accesses of code other than the image (PC -1) at or above the image's
	// sp: the calls that entered it pushing return addresses, a return thunk's ret, the
	// original's body reading its stack arguments.
	Others []FrameAccess `json:"others,omitempty"`
	// Caller counts the image's accesses above its own frame (the caller's: incoming
	// stack arguments, the parent's return address); Pushes the return addresses its
	// calls pushed below sp.
	Caller int `json:"caller"`
	Pushes int `json:"pushes"`
	// Top is the frame-base offset where the caller's frame begins (past the return
	// address the image was entered with, on x86_64).
	Top      int          `json:"top"`
	Executed map[int]bool `json:"-"` // image offsets of the instructions that ran
}

// slotFuncMeta is ctx[-1]'s name where the kernel calls it func_meta (7.0+: nr_args with
// the session cookie's index and is_return); every backend spells it so.
const slotFuncMeta = "func_meta"

// baseRegs are the frame base registers jit.Frame.Base names.
var baseRegs = map[string]uc.Reg{"rbp": uc.RBP, "x29": uc.X29, "s0": uc.RVS0, "fp": uc.RVS0}

// ObserveFrame calls code (req's image, at its addresses) once under Unicorn and records
// its frame accesses; base names the frame base register (jit.Frame.Base).
func ObserveFrame(req *jit.Request, code []byte, base string, opts Options) (*FrameObservation, error) {
	breg, ok := baseRegs[base]
	if !ok {
		return nil, fmt.Errorf("emu: frame base %q: rbp, x29 or s0", base)
	}
	m, err := req.Model()
	if err != nil {
		return nil, err
	}
	shared.Lock()
	defer shared.Unlock()
	h, err := harnessFor(req.Arch)
	if err != nil {
		return nil, err
	}
	opts.Trace, opts.Count, opts.Engine = true, 1, ""
	addrs := Addrs(req)
	l, err := h.Load(req, m, addrs, code, opts)
	if err != nil {
		return nil, err
	}
	if a, ok := addrs.Helpers["__x86_call_depth"]; ok && req.Features.CallDepth {
		// Call-depth accounting shifts a per-CPU word %gs-relative; with gs at 0 it is
		// the symbol's own address: give it a writable page for this call.
		// The page may hold stubs already (then it is made writable too; unload unmaps it).
		page := uint64(a) &^ (uc.PageSize - 1)
		if err := h.e.Map(page, uc.PageSize, uc.ProtRead|uc.ProtWrite); err == nil {
			h.maps = append(h.maps, [2]uint64{page, uc.PageSize})
		} else if w, err := h.e.ReadU64(uint64(a)); err != nil || w != 0 {
			return nil, fmt.Errorf("emu: __x86_call_depth at %#x is inside the harness's stubs", uint64(a))
		} else if err := h.e.Protect(page, uc.PageSize, uc.ProtRead|uc.ProtWrite|uc.ProtExec); err != nil {
			return nil, fmt.Errorf("emu: mapping __x86_call_depth: %w", err)
		}
	}
	o := &FrameObservation{Executed: map[int]bool{}}
	fo := &frameObserver{l: l, o: o, breg: breg, stubs: map[uint64]string{}, progs: map[uint64]int{}}
	for name, a := range addrs.Helpers {
		if k := helperKind(name); k == stubEnter || k == stubExit || k == stubTramp {
			fo.stubs[uint64(a)] = name
		}
	}
	for i, p := range addrs.Progs {
		fo.stubs[uint64(p.BPFFunc)] = fmt.Sprintf("bpf_func#%d", i+1)
		fo.progs[uint64(p.BPFFunc)] = i
	}
	if l.body != 0 {
		fo.stubs[l.body] = "original"
	}
	hc, err := h.e.HookCode(1, 0, fo.insn)
	if err != nil {
		return nil, err
	}
	h.hooks = append(h.hooks, hc)
	hm, err := h.e.HookMem(uc.HookRead|uc.HookWrite, stackBase, stackBase+stackSize-1, fo.mem)
	if err != nil {
		return nil, err
	}
	h.hooks = append(h.hooks, hm)
	rep, err := l.Call(1)
	if err != nil {
		return nil, err
	}
	if !rep.OK {
		var fs []string
		for _, f := range rep.Failed() {
			fs = append(fs, f.Name+": "+f.Detail)
		}
		return nil, fmt.Errorf("emu: the image fails the oracle: %s", strings.Join(fs, "; "))
	}
	if !fo.haveBase {
		return nil, fmt.Errorf("emu: the image never called out: no frame base seen")
	}
	o.Top = int(int64(fo.entrySP - o.Base))
	if req.Arch == btfmodel.AMD64 {
		o.Top += 8
	}
	for _, r := range fo.raw {
		o.add(r, fo)
	}
	return o, nil
}

type rawAccess struct {
	pc, addr uint64
	size     int
	write    bool
	value    uint64
	insnEnd  uint64
}

type frameObserver struct {
	l        *Loaded
	o        *FrameObservation
	breg     uc.Reg
	stubs    map[uint64]string
	progs    map[uint64]int // bpf_func address -> attach index
	pc, next uint64         // the executing instruction and the one after it
	inImage  bool
	entrySP  uint64 // sp at the image's first instruction
	haveBase bool
	raw      []rawAccess
}

func (f *frameObserver) insn(addr uint64, size uint32) {
	l := f.l
	was := f.inImage
	f.pc, f.next = addr, addr+uint64(size)
	f.inImage = addr >= l.image && addr < l.image+uint64(len(l.code))
	if f.inImage {
		f.o.Executed[int(addr-l.image)] = true
		if f.entrySP == 0 {
			f.entrySP, _ = l.h.e.Reg(l.h.tg.spReg())
		}
		return
	}
	name, ok := f.stubs[addr]
	if !was || !ok {
		return
	}
	e := l.h.e
	base, err1 := e.Reg(f.breg)
	sp, err2 := e.Reg(l.h.tg.spReg())
	if err1 != nil || err2 != nil {
		return
	}
	if l.h.arch == btfmodel.AMD64 {
		sp += 8 // the call's return address
	}
	if f.haveBase && base != f.o.Base {
		// The frame is gone: an epilogue that leaves through the original's body
		// (riscv64's jr t0 without CALL_ORIG) restored the caller's base.
		return
	}
	f.haveBase = true
	f.o.Base = base
	f.o.SPBases = append(f.o.SPBases, int(int64(base-sp)))
	var buf [10]uint64
	args, _ := l.regs(3, &buf)
	off := func(p uint64) int { return int(int64(p - base)) }
	switch {
	case name == "original":
		if l.nstack > 0 {
			f.o.Pointers = append(f.o.Pointers, FramePointer{Stub: name, What: "stack arguments", Off: off(sp), N: l.nstack})
		}
	case strings.HasPrefix(name, "bpf_func#"):
		ctx := args[0]
		f.o.Pointers = append(f.o.Pointers, FramePointer{Stub: name, What: "ctx", Off: off(ctx), N: l.exp.nregs})
		if i, ok := f.progs[addr]; ok && l.exp.session && sessionCookie(l.req.Progs[i]) {
			// bpf_session_cookie: ctx minus the cookie index func_meta carries.
			meta, _ := l.h.word(ctx - 8)
			f.o.Pointers = append(f.o.Pointers, FramePointer{Stub: name, What: "session cookie", Off: off(ctx - 8*(meta>>metaIndexShift&0xff))})
		}
	case helperKind(name) == stubEnter:
		f.o.Pointers = append(f.o.Pointers, FramePointer{Stub: name, What: "run_ctx", Off: off(args[1])})
	case helperKind(name) == stubExit:
		f.o.Pointers = append(f.o.Pointers, FramePointer{Stub: name, What: "run_ctx", Off: off(args[2])})
	}
}

func (f *frameObserver) mem(a uc.MemAccess) {
	r := rawAccess{pc: f.pc, addr: a.Addr, size: a.Size, write: a.Kind == uc.Write, value: uint64(a.Value), insnEnd: f.next}
	if !f.inImage {
		r.pc = 0
	}
	f.raw = append(f.raw, r)
}

// add classifies one raw access: the image's within its frame or above it (the caller's),
// a call's return-address push, or someone else's.
func (o *FrameObservation) add(r rawAccess, f *frameObserver) {
	off := int(int64(r.addr - o.Base))
	if r.pc == 0 {
		// Not the image: the patch site's call pushing the return address counts for the
		// slot it lands in; a stub's own frame lies below every slot.
		o.Others = append(o.Others, FrameAccess{PC: -1, Off: off, Size: r.size, Write: r.write})
		return
	}
	l := f.l
	if l.h.arch == btfmodel.AMD64 && r.write && r.size == 8 && r.value == r.insnEnd {
		// A call pushing the address of the instruction after it: the callee's frame.
		o.Pushes++
		return
	}
	a := FrameAccess{PC: int(r.pc - l.image), Off: off, Size: r.size, Write: r.write}
	top := f.entrySP
	if l.h.arch == btfmodel.AMD64 {
		top += 8 // the return address the image was entered with is its own slot
	}
	if r.addr >= top {
		o.Caller++
		a.Size = -r.size // marks an access in the caller's frame
	}
	o.Accesses = append(o.Accesses, a)
}

// FrameMismatch is one way a frame and what the image did disagree.
type FrameMismatch struct {
	Kind   string `json:"kind"` // "overlap", "outside", "writers", "readers", "declared", "pointer", "untouched", "sp_base"
	Detail string `json:"detail"`
}

func (m FrameMismatch) String() string { return m.Kind + ": " + m.Detail }

// FrameCheck is the result of CheckFrame.
type FrameCheck struct {
	Accesses   int             `json:"accesses"` // image accesses checked against the slots
	Pointers   int             `json:"pointers"`
	Slots      int             `json:"slots"`
	Caller     int             `json:"caller"` // of Accesses, those in the caller's frame (above the image's own)
	Narrow     int             `json:"narrow"` // accesses to part of a wider slot
	Mismatches []FrameMismatch `json:"mismatches,omitempty"`
}

// CheckFrame holds a frame against an observation of its image: no two slots overlap;
// every access, in the image's frame or its caller's, lands in a declared slot (all of it
// or a part), by an instruction the slot lists as its writer or reader; every declared
// writer that ran stored there; every pointer a stub got is its slot's address (ctx at
// ctx[0], nr_args and ip below it, retval above the arguments, run_ctx at run_ctx.cookie
// with saved_run_ctx after it, the original's stack arguments at the outgoing copies, a
// session cookie where func_meta's index puts it); every slot is touched by the image or
// a stub, or its Note says why not; and sp after the prologue is SPBase below the base.
func CheckFrame(f *jit.Frame, o *FrameObservation) *FrameCheck {
	c := &FrameCheck{Slots: len(f.Slots)}
	bad := func(kind, format string, a ...any) {
		c.Mismatches = append(c.Mismatches, FrameMismatch{kind, fmt.Sprintf(format, a...)})
	}
	touched := map[string]bool{}
	stored := map[int]map[string]bool{} // image offset -> slots it stored to
	accessed := map[int]bool{}
	slotsOver := func(off, size int) (in *jit.Slot, overlaps []string) {
		for i := range f.Slots {
			s := &f.Slots[i]
			if off < s.Off+s.Size && s.Off < off+size {
				overlaps = append(overlaps, s.Name)
				if off >= s.Off && off+size <= s.Off+s.Size {
					in = s
				}
			}
		}
		return in, overlaps
	}
	// Slots do not overlap: an access must say which one it is.
	for i, s := range f.Slots {
		for _, u := range f.Slots[i+1:] {
			if s.Off < u.Off+u.Size && u.Off < s.Off+s.Size {
				bad("overlap", "%s (%s%+#x, %d bytes) and %s (%s%+#x, %d bytes) overlap", s.Name, f.Base, s.Off, s.Size, u.Name, f.Base, u.Off, u.Size)
			}
		}
	}
	for _, a := range o.Accesses {
		size := a.Size
		if size < 0 {
			size = -size
			c.Caller++ // the caller's frame: the incoming stack arguments, the parent's return address
		}
		s, over := slotsOver(a.Off, size)
		c.Accesses++
		accessed[a.PC] = true
		what := "load"
		if a.Write {
			what = "store"
		}
		switch {
		case s == nil && len(over) == 0:
			bad("outside", "%x: %d-byte %s at %s%+#x is in no slot", a.PC, size, what, f.Base, a.Off)
			continue
		case s == nil:
			bad("outside", "%x: %d-byte %s at %s%+#x straddles %s", a.PC, size, what, f.Base, a.Off, strings.Join(over, ", "))
			continue
		}
		touched[s.Name] = true
		if size != s.Size {
			// Part of the slot: x86_64 copies an int passed on the stack whole and then
			// zeroes the upper half with a 4-byte store, as the kernel's images do.
			c.Narrow++
		}
		if a.Write {
			if stored[a.PC] == nil {
				stored[a.PC] = map[string]bool{}
			}
			stored[a.PC][s.Name] = true
			if !hasInt(s.Writers, a.PC) {
				bad("writers", "%x stores to %s, which does not list it as a writer", a.PC, s.Name)
			}
		} else if !hasInt(s.Readers, a.PC) {
			bad("readers", "%x loads %s, which does not list it as a reader", a.PC, s.Name)
		}
	}
	for i := range f.Slots {
		s := &f.Slots[i]
		for _, w := range s.Writers {
			if o.Executed[w] && !stored[w][s.Name] {
				bad("declared", "%x is listed as a writer of %s but stored nothing there when it ran", w, s.Name)
			}
		}
		for _, r := range s.Readers {
			if o.Executed[r] && accessed[r] && !readsSlot(o, r, s) && !stored[r][s.Name] {
				bad("declared", "%x is listed as a reader of %s but accessed other slots when it ran", r, s.Name)
			}
			if o.Executed[r] {
				touched[s.Name] = true // a load, or an lea/add passing its address
			}
		}
	}
	for _, a := range o.Others {
		if a.Off < -f.SPBase {
			continue // a stub's own frame, below the image's sp
		}
		s, _ := slotsOver(a.Off, a.Size)
		if s == nil {
			bad("outside", "code outside the image made a %d-byte access at %s%+#x, in no slot", a.Size, f.Base, a.Off)
			continue
		}
		c.Accesses++
		touched[s.Name] = true
	}
	// The pointers the stubs got.
	named := func(off int, name string, prefix bool) *jit.Slot {
		s := f.SlotAt(off)
		if s == nil || s.Off != off {
			return nil
		}
		if s.Name == name || prefix && strings.HasPrefix(s.Name, name) || name == jit.SlotNrArgs && s.Name == slotFuncMeta {
			return s
		}
		return nil
	}
	expect := func(p FramePointer, off int, name string, prefix bool, what string) {
		c.Pointers++
		s := named(off, name, prefix)
		if s == nil {
			got := "no slot"
			if g := f.SlotAt(off); g != nil {
				got = fmt.Sprintf("%s at %s%+#x", g.Name, f.Base, g.Off)
			}
			bad("pointer", "%s: %s is %s%+#x, where the frame has %s, not %s", p.Stub, what, f.Base, off, got, name)
			return
		}
		touched[s.Name] = true
	}
	seen := map[string]bool{}
	for _, p := range o.Pointers {
		key := fmt.Sprintf("%s %s %d", p.What, p.Stub, p.Off)
		if seen[key] {
			continue
		}
		seen[key] = true
		switch p.What {
		case "ctx":
			for k := 0; k < p.N; k++ {
				expect(p, p.Off+8*k, fmt.Sprintf("ctx[%d]", k), true, fmt.Sprintf("ctx+%d", 8*k))
			}
			expect(p, p.Off-8, jit.SlotNrArgs, false, "ctx[-1]")
			if s := findSlot(f, jit.SlotIP); s != nil {
				expect(p, p.Off-16, jit.SlotIP, false, "ctx[-2]")
			}
			if s := findSlot(f, jit.SlotRetval); s != nil {
				expect(p, p.Off+8*p.N, jit.SlotRetval, false, fmt.Sprintf("ctx[%d] (the return value)", p.N))
			}
		case "run_ctx":
			// struct bpf_tramp_run_ctx: an empty bpf_run_ctx, then bpf_cookie and saved_run_ctx.
			expect(p, p.Off, jit.SlotRunCtxCook, false, "run_ctx")
			expect(p, p.Off+8, jit.SlotRunCtxSaved, false, "run_ctx+8")
		case "session cookie":
			expect(p, p.Off, "cookie[", true, "the session cookie")
		case "stack arguments":
			for k := 0; k < p.N; k++ {
				expect(p, p.Off+8*k, "stack arg", true, fmt.Sprintf("stack argument %d", k))
			}
		}
	}
	for _, s := range f.Slots {
		if !touched[s.Name] && s.Note == "" {
			bad("untouched", "%s at %s%+#x: neither the image nor a stub touched it, and no Note says why", s.Name, f.Base, s.Off)
		}
	}
	sort.Ints(o.SPBases)
	for i, sb := range o.SPBases {
		if sb != f.SPBase && (i == 0 || o.SPBases[i-1] != sb) {
			bad("sp_base", "a call out of the image had sp at %s-%#x, the frame says %s-%#x", f.Base, sb, f.Base, f.SPBase)
		}
	}
	return c
}

func findSlot(f *jit.Frame, name string) *jit.Slot {
	for i := range f.Slots {
		if f.Slots[i].Name == name {
			return &f.Slots[i]
		}
	}
	return nil
}

func readsSlot(o *FrameObservation, pc int, s *jit.Slot) bool {
	for _, a := range o.Accesses {
		size := a.Size
		if size < 0 {
			size = -size
		}
		if a.PC == pc && !a.Write && a.Off >= s.Off && a.Off+size <= s.Off+s.Size {
			return true
		}
	}
	return false
}

func hasInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
