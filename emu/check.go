package emu

import (
	"bytes"
	"fmt"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// checker compares one call's observations with the expectation. It allocates only
// when something differs, so that batch mode can check every call.
type checker struct {
	l     *Loaded
	fails []Check
}

func (c *checker) add(name, detail string) {
	c.fails = append(c.fails, Check{Name: name, Detail: detail})
}
func (c *checker) failed() bool { return len(c.fails) > 0 }

// where says which instruction made a call: the call ends at its return address.
func (c *checker) where(e *event) string {
	l := c.l
	switch {
	case e.from >= l.image && e.from <= l.image+uint64(len(l.code)):
		return fmt.Sprintf(" (call returning to image+%#x)", e.from-l.image)
	case e.from == l.after:
		return " (called by the caller)"
	}
	return fmt.Sprintf(" (return address %#x)", e.from)
}

func (c *checker) events(obs []event) {
	l, x := c.l, c.l.exp
	progs := l.req.Progs
	var enterCtx [btfmodel.MaxTrampLinks]uint64
	var enterStart [btfmodel.MaxTrampLinks]uint64
	n := min(len(obs), len(x.events))
	for i := 0; i < n; i++ {
		e, o := &x.events[i], &obs[i]
		named := e.kind == evEnter || e.kind == evExit
		if o.kind != e.kind || (named && o.name != e.name) || (e.kind == evProg && o.prog != e.prog) {
			c.add(CheckOrder, fmt.Sprintf("call %d: expected %s, got %s%s", i+1, e.describe(progs), o.describe(progs), c.where(o)))
			c.original(obs)
			return
		}
		p := e.prog
		switch e.kind {
		case evTrampEnter, evTrampExit:
			if o.ptr != e.ptr {
				c.add(CheckHelperArgs, fmt.Sprintf("%s got im %#x, expected %#x%s", e.name, o.ptr, e.ptr, c.where(o)))
			}
		case evEnter:
			c.progPtr(e, o)
			if o.cookie != e.cookie {
				c.add(CheckHelperArgs, fmt.Sprintf("%s: run_ctx cookie %#x, expected %#x%s", e.describe(progs), o.cookie, e.cookie, c.where(o)))
			}
			enterCtx[p], enterStart[p] = o.runCtx, o.start
		case evExit:
			c.progPtr(e, o)
			if o.runCtx != enterCtx[p] {
				c.add(CheckHelperArgs, fmt.Sprintf("%s: run_ctx %#x, but enter got %#x%s", e.describe(progs), o.runCtx, enterCtx[p], c.where(o)))
			} else if o.cookie != e.cookie {
				c.add(CheckHelperArgs, fmt.Sprintf("%s: run_ctx cookie %#x, expected %#x%s", e.describe(progs), o.cookie, e.cookie, c.where(o)))
			}
			if o.start != enterStart[p] {
				c.add(CheckHelperArgs, fmt.Sprintf("%s: start %#x, but enter returned %#x%s", e.describe(progs), o.start, enterStart[p], c.where(o)))
			}
		case evProg:
			c.prog(e, o)
		case evOrig:
			for k := 0; k < e.n; k++ {
				if o.ctx[k] != e.ctx[k] {
					c.add(CheckOriginal, fmt.Sprintf("original got argument slot %d = %#x, expected %#x%s", k, o.ctx[k], e.ctx[k], c.where(o)))
				}
			}
		}
	}
	switch {
	case len(obs) < len(x.events):
		c.add(CheckOrder, fmt.Sprintf("call %d: expected %s, but no more calls came", len(obs)+1, x.events[len(obs)].describe(progs)))
	case len(obs) > len(x.events):
		o := &obs[len(x.events)]
		c.add(CheckOrder, fmt.Sprintf("call %d: unexpected %s%s", len(x.events)+1, o.describe(progs), c.where(o)))
	}
	c.original(obs)
}

func (c *checker) original(obs []event) {
	got := false
	for i := range obs {
		got = got || obs[i].kind == evOrig
	}
	if got != c.l.exp.orig {
		c.add(CheckOriginal, fmt.Sprintf("original called: %v, expected %v", got, c.l.exp.orig))
	}
}

func (c *checker) progPtr(e, o *event) {
	if o.ptr != e.ptr {
		c.add(CheckHelperArgs, fmt.Sprintf("%s: prog %#x, expected %#x%s", e.describe(c.l.req.Progs), o.ptr, e.ptr, c.where(o)))
	}
}

func (c *checker) prog(e, o *event) {
	x := c.l.exp
	name := func() string { return e.describe(c.l.req.Progs) } // only on failure: it allocates
	for k := 0; k < e.n; k++ {
		if o.ctx[k] != e.ctx[k] {
			c.add(CheckCtx, fmt.Sprintf("%s: ctx[%d] = %#x, expected %#x%s", name(), k, o.ctx[k], e.ctx[k], c.where(o)))
		}
	}
	switch {
	case !x.session && o.nargs != e.nargs:
		c.add(CheckNrArgs, fmt.Sprintf("%s: ctx[-1] = %#x, expected %d%s", name(), o.nargs, e.nargs, c.where(o)))
	case x.session:
		c.session(e, o, name)
	}
	if x.ipArg && o.ip != x.fn {
		c.add(CheckFuncIP, fmt.Sprintf("%s: ctx[-2] = %#x, expected func %#x%s", name(), o.ip, x.fn, c.where(o)))
	}
	if e.hasRet && o.ret != e.ret {
		c.add(CheckRetval, fmt.Sprintf("%s: ctx[%d] (return value) = %#x, expected %#x%s", name(), e.n, o.ret, e.ret, c.where(o)))
	}
	if o.cookie != e.cookie {
		c.add(CheckHelperArgs, fmt.Sprintf("%s sees cookie %#x, expected %#x%s", name(), o.cookie, e.cookie, c.where(o)))
	}
}

// session checks func_meta (ctx[-1] with an fsession program attached) and the session
// cookie a cookie program finds in its slot.
func (c *checker) session(e, o *event, name func() string) {
	run := "entry"
	if e.exit {
		run = "exit"
	}
	if o.nargs&0xff != e.nargs&0xff {
		c.add(CheckNrArgs, fmt.Sprintf("%s: func_meta (ctx[-1]) = %#x, nr_args %d, expected %d%s", name(), o.nargs, o.nargs&0xff, e.nargs&0xff, c.where(o)))
	}
	if o.nargs&^0xff != e.nargs&^0xff {
		c.add(CheckSession, fmt.Sprintf("%s: func_meta (ctx[-1]) = %#x, expected %#x (is_return %v, cookie index %d)%s",
			name(), o.nargs, e.nargs, e.nargs&metaIsReturn != 0, e.nargs>>metaIndexShift&0xff, c.where(o)))
	}
	if c.l.exp.progs[e.prog].kind == jit.Fsession && sessionCookie(c.l.req.Progs[e.prog]) && o.sess != e.sess {
		want := "0 (zeroed after __bpf_tramp_enter)"
		if e.exit {
			want = fmt.Sprintf("%#x (what the entry run stored)", e.sess)
		}
		c.add(CheckSession, fmt.Sprintf("%s on %s: session cookie = %#x, expected %s%s", name(), run, o.sess, want, c.where(o)))
	}
}

// final checks the state the caller sees after a call; counter is the loop register's
// expected value.
func (c *checker) final(regs []uint64, counter int) {
	l, x := c.l, c.l.exp
	if (regs[0]^x.ret)&x.retMask != 0 {
		if x.retMask == ^uint64(0) {
			c.add(CheckRet, fmt.Sprintf("caller got %#x, expected %#x", regs[0], x.ret))
		} else {
			c.add(CheckRet, fmt.Sprintf("caller got %#x, expected %#x in the bits %#x", regs[0], x.ret, x.retMask))
		}
	}
	if regs[1] != sp0 {
		c.add(CheckSP, fmt.Sprintf("stack pointer %#x after the call, expected %#x", regs[1], uint64(sp0)))
	}
	cs := l.outRegs[2:]
	for i, v := range regs[2:] {
		want := l.canary[i]
		if i == len(cs)-1 {
			want = uint64(counter)
		}
		if v != want {
			c.add(CheckCalleeSaved, fmt.Sprintf("%s = %#x after the call, expected %#x", l.h.tg.names()[cs[i]], v, want))
		}
	}
	got := l.h.stack[sp0-stackBase : sp0-stackBase+frameLen]
	if !bytes.Equal(got, l.frame) {
		off := 0
		for got[off] == l.frame[off] {
			off++
		}
		what := fmt.Sprintf("the caller's frame at sp+%#x", off)
		if off < 8*l.nstack {
			what = fmt.Sprintf("stack argument slot %d", off/8)
		}
		c.add(CheckStackArgs, fmt.Sprintf("%s changed: %#x, was %#x", what, leU64(got[off&^7:]), leU64(l.frame[off&^7:])))
	}
}

func leU64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}
