package emu

import (
	"errors"
	"fmt"
	"strings"

	uc "github.com/trampjit/trampjit/emu/unicorn"
	"github.com/trampjit/trampjit/jit"
)

// report turns a finished run into a Report: the checks of the first failing call (or
// the run's own failure), and what the first call observed.
func (l *Loaded) report(x uc.Exit, err error) *Report {
	r := &Report{Engine: "unicorn", Libunicorn: uc.Version(), Args: append([]uint64{}, l.opts.Args...), Hits: l.hits}
	var fails []Check
	if l.fail != nil {
		fails = l.fail.fails
	}
	if err != nil {
		var ue *uc.Error
		switch {
		case errors.As(err, &ue) && ue.Fault != nil:
			f := ue.Fault
			fails = append(fails, Check{Name: CheckMemory, Detail: fmt.Sprintf("%s of %d bytes at %#x by the instruction at %s",
				f.Kind, f.Size, f.Addr, l.where(f.PC))})
		case x.Reason == uc.ReasonBudget:
			what := fmt.Sprintf("more than %d instructions per call", l.opts.Budget)
			fails = append(fails, Check{Name: CheckBudget, Detail: fmt.Sprintf("%s (pc %s)", what, l.where(x.PC))})
		default:
			fails = append(fails, Check{Name: CheckRun, Detail: fmt.Sprintf("%v (pc %s)", err, l.where(x.PC))})
		}
	}
	if l.fail == nil && l.hits < uint64(l.count) {
		// The run ended inside a call: say how far the calls got.
		c := &checker{l: l}
		c.events(l.ev)
		fails = append(fails, c.fails...)
		if err == nil {
			fails = append(fails, Check{Name: CheckRun, Detail: fmt.Sprintf("%d of %d calls returned (%s at pc %s)", l.hits, l.count, x.Reason, l.where(x.PC))})
		}
	}
	if l.req.StructOps != nil {
		r.StructOps = l.req.StructOps.String()
		for _, d := range l.landing {
			fails = append(fails, Check{Name: CheckLanding, Detail: d})
		}
	}
	by := map[string][]string{}
	for _, f := range fails {
		by[f.Name] = append(by[f.Name], f.Detail)
	}
	r.OK = len(fails) == 0
	for _, name := range checkOrder {
		if name == CheckLanding && l.req.StructOps == nil {
			continue // only an indirectly called image has a landing to check
		}
		d := by[name]
		c := Check{Name: name, OK: len(d) == 0}
		if len(d) > 4 {
			d = append(d[:4:4], fmt.Sprintf("and %d more", len(d)-4))
		}
		c.Detail = strings.Join(d, "; ")
		if c.OK {
			c.Detail = l.passDetail(name)
		}
		r.Checks = append(r.Checks, c)
	}
	evs := l.first
	if evs == nil {
		evs = l.ev
	}
	if l.haveR {
		r.Ret = l.firstR
		if l.exp.structOps {
			r.Ret &= l.exp.retMask // what the member's type makes of it (both ways of checking agree)
		}
	}
	r.Programs = l.programs(evs)
	for i := range evs {
		r.OriginalCalled = r.OriginalCalled || evs[i].kind == evOrig
	}
	return r
}

// programs reports what each program (attach order) saw.
func (l *Loaded) programs(evs []event) []ProgReport {
	out := make([]ProgReport, len(l.req.Progs))
	for i, p := range l.req.Progs {
		out[i] = ProgReport{Kind: string(p.Kind), Index: i, Ctx: []uint64{}}
		if p.Kind == jit.Fsession {
			out[i].Session = &SessionReport{}
		}
	}
	for k := range evs {
		e := &evs[k]
		if e.prog < 0 || e.prog >= len(out) {
			continue
		}
		pr := &out[e.prog]
		fs := pr.Session != nil
		switch e.kind {
		case evEnter:
			pr.Cookie = e.cookie
		case evProg:
			if fs {
				l.sessionReport(pr.Session, e)
				if e.exit {
					continue // Ran and Ctx are the entry run's
				}
			}
			pr.Ran, pr.Cookie, pr.NArgs = true, e.cookie, e.nargs
			if l.exp.ipArg {
				pr.IP = e.ip // ctx[-2] is the IP only with IP_ARG
			}
			pr.Ctx = append([]uint64{}, e.ctx[:e.n]...)
			if l.exp.progs[e.prog].retSlot && !fs {
				pr.Ctx = append(pr.Ctx, e.ret)
			}
		}
	}
	return out
}

// sessionReport records one run of an fsession program.
func (l *Loaded) sessionReport(s *SessionReport, e *event) {
	exit := e.exit
	r := &SessionRun{FuncMeta: e.nargs, IsReturn: e.nargs&metaIsReturn != 0, Ctx: append([]uint64{}, e.ctx[:e.n]...)}
	if exit {
		r.Ctx = append(r.Ctx, e.ret)
	}
	if sessionCookie(l.req.Progs[e.prog]) {
		v := e.sess
		r.Cookie = &v
	}
	if exit {
		s.Exit = r
	} else {
		s.Entry = r
	}
}

func (l *Loaded) passDetail(name string) string {
	x := l.exp
	switch name {
	case CheckOrder:
		return fmt.Sprintf("%d calls in order", len(x.events))
	case CheckRet:
		if x.structOps {
			return l.structOpsRetDetail()
		}
		return fmt.Sprintf("%#x", x.ret)
	case CheckLanding:
		return l.landingDetail()
	case CheckOriginal:
		if x.structOps {
			return "none called (a struct_ops image has no original, no __bpf_tramp_enter/exit)"
		}
		if x.orig {
			return "called with the arguments"
		}
		return "skipped (fmod_ret returned non-zero)"
	case CheckFuncIP:
		if !x.ipArg {
			return "no IP_ARG"
		}
		return fmt.Sprintf("%#x", x.fn)
	case CheckSession:
		return l.sessionDetail()
	case CheckBudget:
		return fmt.Sprintf("under %d instructions per call", l.opts.Budget)
	case CheckStackArgs:
		return fmt.Sprintf("%d stack argument slots and the caller's frame intact", l.nstack)
	}
	return ""
}

// where names an address: inside the image, a stub, or the caller.
func (l *Loaded) where(pc uint64) string {
	switch {
	case pc >= l.image && pc < l.image+uint64(len(l.code)):
		return fmt.Sprintf("image+%#x", pc-l.image)
	case pc >= callerBase && pc < callerBase+uc.PageSize:
		return fmt.Sprintf("caller+%#x", pc-callerBase)
	case pc >= l.entry && pc < l.body+256:
		return fmt.Sprintf("func+%#x", pc-uint64(l.addrs.Func))
	}
	return fmt.Sprintf("%#x", pc)
}

// sessionDetail says what the session check covered in a passing run.
func (l *Loaded) sessionDetail() string {
	if !l.exp.session {
		return "no fsession program"
	}
	n, c := 0, 0
	for _, p := range l.req.Progs {
		if p.Kind == jit.Fsession {
			n++
			if p.SessionCookie {
				c++
			}
		}
	}
	return fmt.Sprintf("%d fsession program(s) run on entry and exit, func_meta is_return false then true; %d session cookie(s) 0 on entry, kept to exit", n, c)
}
