package kernel

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel/vm"
)

// maxMinimiseRounds bounds the re-captures of one disagreement (each round is one boot).
const maxMinimiseRounds = 8

// minimise shrinks disagreements: each round captures every one-step simplification of
// each one's current case (a program fewer, a flag or cookie cleared, a program made fentry,
// a prototype with an argument fewer or a void return), all in one guest, and keeps the
// first that still disagrees the same way. The originals are captured again in the first
// round: a disagreement that does not repeat stays unconfirmed.
func minimise(ctx context.Context, o FuzzOptions, pin vm.Pin, pool *FuzzPool, ds []*FuzzDisagreement, progress io.Writer) (int, error) {
	boots := 0
	cur := make([]Case, len(ds))
	active := make([]bool, len(ds))
	for i, d := range ds {
		cur[i], active[i] = d.Case, true
	}
	for round := 1; round <= maxMinimiseRounds; round++ {
		var all []Case
		owner := map[string]int{}
		orig := map[string]bool{}
		for i, d := range ds {
			if !active[i] {
				continue
			}
			cands := simpler(pool, cur[i])
			if round == 1 {
				cands = append(cands, d.Case)
			}
			for j := range cands {
				cands[j].ID = fmt.Sprintf("%s-m%d-%d", d.Case.ID, round, j)
				owner[cands[j].ID] = i
				if round == 1 && j == len(cands)-1 {
					orig[cands[j].ID] = true
				}
			}
			all = append(all, cands...)
		}
		if len(all) == 0 {
			break
		}
		n := 0
		for _, a := range active {
			if a {
				n++
			}
		}
		fmt.Fprintf(progress, "%s-%s: minimising %d disagreements, round %d: %d candidates\n", o.Kernel, o.Arch, n, round, len(all))
		got, n, err := fuzzCapture(ctx, o, pin, all)
		boots += n
		if err != nil {
			return boots, err
		}
		moved := make([]bool, len(ds))
		for j, c := range got {
			i := owner[all[j].ID]
			d := ds[i]
			r := fuzzDiff(c)
			if r.Verdict != d.Original.Verdict || moved[i] {
				continue
			}
			d.Confirmed = true
			if !orig[all[j].ID] {
				moved[i] = true
				cur[i] = all[j]
			}
			d.Minimised, d.Diff, d.Corpus = all[j], r, c
		}
		for i := range ds {
			active[i] = active[i] && moved[i]
		}
	}
	return boots, nil
}

// simpler lists the one-step simplifications of a case.
func simpler(pool *FuzzPool, c Case) []Case {
	var out []Case
	with := func(progs []jit.Prog) {
		out = append(out, Case{Func: c.Func, Target: c.Target, Progs: progs})
	}
	n := len(c.Progs)
	switch {
	case n > 8:
		with(clone(c.Progs[:n/2]))
		with(clone(c.Progs[n/2:]))
	case n > 1:
		for i := range c.Progs {
			with(append(clone(c.Progs[:i]), c.Progs[i+1:]...))
		}
	}
	for i, p := range c.Progs {
		if n > 8 {
			break // programs first: a flag a round on 38 programs costs 38 captures a round
		}
		for _, q := range []jit.Prog{
			{Kind: p.Kind, Sleepable: p.Sleepable, FuncIP: p.FuncIP, SessionCookie: p.SessionCookie},
			{Kind: p.Kind, Cookie: p.Cookie, FuncIP: p.FuncIP, SessionCookie: p.SessionCookie},
			{Kind: p.Kind, Cookie: p.Cookie, Sleepable: p.Sleepable, SessionCookie: p.SessionCookie},
			{Kind: p.Kind, Cookie: p.Cookie, Sleepable: p.Sleepable, FuncIP: p.FuncIP},
			{Kind: jit.Fentry, Cookie: p.Cookie, Sleepable: p.Sleepable, FuncIP: p.FuncIP},
		} {
			if q != p {
				ps := clone(c.Progs)
				ps[i] = q
				with(ps)
			}
		}
	}
	for _, fn := range pool.simplerFuncs(c) {
		out = append(out, Case{Func: fn, Target: c.Target, Progs: clone(c.Progs)})
	}
	return dedupe(out)
}

func clone(p []jit.Prog) []jit.Prog { return append([]jit.Prog(nil), p...) }

func dedupe(cs []Case) []Case {
	seen := map[string]bool{}
	var out []Case
	for _, c := range cs {
		k := fmt.Sprintf("%s %s %v", c.Func, c.Target, c.Progs)
		if !seen[k] {
			seen[k] = true
			out = append(out, c)
		}
	}
	return out
}

// simplerFuncs are functions of a simpler prototype than c's: the last argument dropped,
// or the return made void (the first of each shape by name, so the same every run).
func (p *FuzzPool) simplerFuncs(c Case) []string {
	if c.Target == "bpf" {
		var n int
		if _, err := fmt.Sscanf(c.Func, "tj_args%d", &n); err == nil && n > 0 {
			return []string{fmt.Sprintf("tj_args%d", n-1)}
		}
		return nil
	}
	m := p.models[c.Func]
	if m == nil {
		return nil
	}
	var keys []string
	if len(m.Args) > 0 {
		mm := *m
		mm.Args = m.Args[:len(m.Args)-1]
		keys = append(keys, shapeKey(&mm))
	}
	if m.RetSize > 0 {
		mm := *m
		mm.RetSize, mm.RetType, mm.RetFlags = 0, nil, 0
		keys = append(keys, shapeKey(&mm))
	}
	var out []string
	for _, k := range keys {
		for _, fn := range p.byKey[k] {
			if sameAttachKinds(p, c, fn) {
				out = append(out, fn)
				break
			}
		}
	}
	return out
}

// sameAttachKinds: the simpler function admits the case's program kinds as the original
// does (an fmod_ret case needs a modifiable function), so the disagreement can survive.
func sameAttachKinds(p *FuzzPool, c Case, fn string) bool {
	env := btfmodel.AttachEnv{Kernel: p.Kernel, Arch: p.Arch}
	for _, pr := range c.Progs {
		a := btfmodel.CheckAttach(c.Func, p.models[c.Func], nil, pr.Kind, env).OK
		b := btfmodel.CheckAttach(fn, p.models[fn], nil, pr.Kind, env).OK
		if a != b {
			return false
		}
	}
	return !strings.HasPrefix(c.Func, "bpf_lsm_") || strings.HasPrefix(fn, "bpf_lsm_")
}
