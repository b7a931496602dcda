package emu

import (
	"encoding/binary"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// The Go hooks sit on the first instruction of each stub and record what the trampoline
// passed; the stub's machine code then does the rest (return value, clobbering, return).
// A hook costs a Go callback and one batched register read; stack memory is read through
// the host mapping, without cgo.

func (h *Harness) installHooks(l *Loaded, ps []piece) error {
	for i := range ps {
		p := ps[i]
		var fn func()
		switch p.hook {
		case stubEnter, stubExit, stubTramp, stubStray:
			name, kind := p.name, p.hook
			fn = func() { l.helperHook(name, kind) }
		case stubProg:
			idx := p.prog
			fn = func() { l.progHook(idx) }
		default:
			continue
		}
		if err := h.hook(p.addr, fn); err != nil {
			return err
		}
	}
	if l.body == 0 {
		return nil // a struct_ops image calls no original
	}
	return h.hook(l.body, l.bodyHook)
}

// word reads guest memory: the stack through the host mapping, anything else by cgo.
func (h *Harness) word(addr uint64) (uint64, bool) {
	if addr >= stackBase && addr+8 <= stackBase+stackSize {
		return binary.LittleEndian.Uint64(h.stack[addr-stackBase:]), true
	}
	v, err := h.e.ReadU64(addr)
	return v, err == nil
}

// regs reads the first n argument registers plus the return-address source (sp on x86,
// x30 on arm64) in one cgo call; it returns the arguments and the return address.
func (l *Loaded) regs(n int, buf *[10]uint64) ([]uint64, uint64) {
	h := l.h
	rs := l.hookRegs[n] // the first n argument registers, then rsp or x30
	if err := h.e.ReadRegs(rs, buf[:n+1]); err != nil {
		return buf[:n], 0
	}
	from := buf[n]
	if h.arch == btfmodel.AMD64 {
		from, _ = h.word(buf[n]) // the return address the call pushed
	}
	return buf[:n], from
}

func (l *Loaded) push(e event) {
	if len(l.ev) < cap(l.ev) || len(l.ev) < 4*len(l.exp.events)+16 {
		l.ev = append(l.ev, e)
	}
}

func (l *Loaded) helperHook(name string, kind stubKind) {
	var buf [10]uint64
	a, from := l.regs(3, &buf)
	e := event{name: name, prog: -1, from: from}
	switch kind {
	case stubEnter:
		e.kind, e.ptr, e.runCtx = evEnter, a[0], a[1]
		e.prog = l.progIndex(a[0])
		e.cookie, _ = l.h.word(a[1])
		l.runCtx = a[1]
		e.start = startValue
		if l.missed(e.prog) {
			e.start = 0
		}
		l.h.e.SetReg(l.h.tg.scratch(), e.start) // the stub returns it
	case stubExit:
		e.kind, e.ptr, e.start, e.runCtx = evExit, a[0], a[1], a[2]
		e.prog = l.progIndex(a[0])
		e.cookie, _ = l.h.word(a[2])
	case stubTramp:
		e.kind, e.ptr = evTrampEnter, a[0]
		if name != "__bpf_tramp_enter" {
			e.kind = evTrampExit
		}
	default:
		e.kind = evStray
	}
	l.push(e)
}

func (l *Loaded) progIndex(ptr uint64) int {
	if i, ok := l.progByPtr[ptr]; ok {
		return i
	}
	return -1
}

func (l *Loaded) missed(i int) bool {
	for _, m := range l.opts.Miss {
		if m == i {
			return true
		}
	}
	return false
}

func (l *Loaded) progHook(idx int) {
	var buf [10]uint64
	a, from := l.regs(1, &buf)
	ctx := a[0]
	n := l.exp.nregs
	e := event{kind: evProg, prog: idx, ptr: ctx, from: from, n: n}
	for k := 0; k < n; k++ {
		e.ctx[k], _ = l.h.word(ctx + 8*uint64(k))
	}
	e.nargs, _ = l.h.word(ctx - 8)
	e.ip, _ = l.h.word(ctx - 16)
	e.ret, _ = l.h.word(ctx + 8*uint64(n))
	e.cookie, _ = l.h.word(l.runCtx)
	if l.req.Progs[idx].Kind == jit.Fsession {
		// The second enter of the program in this call makes this its exit run.
		enters := 0
		for k := range l.ev {
			if l.ev[k].kind == evEnter && l.ev[k].prog == idx {
				enters++
			}
		}
		e.exit = enters > 1
	}
	if l.exp.session && sessionCookie(l.req.Progs[idx]) {
		e.sess = l.sessionRun(idx, ctx, e.nargs)
	}
	l.push(e)
}

func (l *Loaded) bodyHook() {
	var buf [10]uint64
	nr := 0
	for _, loc := range l.locs {
		nr = max(nr, loc.reg+1)
	}
	a, from := l.regs(nr, &buf)
	e := event{kind: evOrig, prog: -1, from: from, n: len(l.locs)}
	sp := buf[nr]
	if l.h.arch == btfmodel.AMD64 {
		sp += 8 // past the return address
	} else if v, err := l.h.e.Reg(l.h.tg.spReg()); err == nil {
		sp = v
	}
	for k, loc := range l.locs {
		if loc.reg >= 0 {
			e.ctx[k] = a[loc.reg]
		} else {
			e.ctx[k], _ = l.h.word(sp + 8*uint64(loc.stack))
		}
	}
	l.push(e)
}

// afterHook runs when a call returns to the caller: it checks the call and starts the next.
func (l *Loaded) afterHook() {
	h := l.h
	if err := h.e.ReadRegs(l.outRegs, l.regsBuf); err != nil {
		l.failNow(CheckRun, "reading registers: "+err.Error())
		return
	}
	if l.hits == 0 {
		l.first = append([]event(nil), l.ev...)
		l.firstR, l.haveR = l.regsBuf[0], true
	}
	c := &l.chk
	c.fails = c.fails[:0]
	c.events(l.ev)
	c.final(l.regsBuf, l.count-int(l.hits))
	l.hits++
	if c.failed() {
		if l.fail == nil {
			l.fail = &checker{l: l, fails: append([]Check(nil), c.fails...)}
			l.firstR, l.haveR = l.regsBuf[0], true
			l.first = append([]event(nil), l.ev...)
		}
		h.e.Stop()
		return
	}
	l.resetHit()
}

func (l *Loaded) failNow(check, detail string) {
	if l.fail == nil {
		l.fail = &checker{l: l}
	}
	l.fail.add(check, detail)
	l.h.e.Stop()
}
