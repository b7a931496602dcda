package emu

import (
	"fmt"
	"sort"
	"strings"

	uc "github.com/trampjit/trampjit/emu/unicorn"
	"github.com/trampjit/trampjit/jit"
)

// piece is code the harness writes at a fixed guest address.
type piece struct {
	name string
	addr uint64
	code []byte
	hook stubKind // what the Go hook at addr records; stubNone for no hook
	prog int      // attach index for program stubs
	// routine: the stub branches to a clobber routine (keepRet says which one) once
	// placed; stubs are first built with a dummy target to learn their size.
	routine bool
	keepRet bool
	ret     uint64
	id      int        // script identity (native checks)
	native  *nativeCfg // build with native checks
	fail    bool       // this piece is a cluster's fail address
}

type stubKind uint8

const (
	stubNone stubKind = iota
	stubEnter
	stubExit
	stubTramp
	stubProg
	stubStray
)

// helperKind classifies a kernel symbol the image may call.
func helperKind(name string) stubKind {
	switch {
	case strings.HasPrefix(name, "__bpf_prog_enter"):
		return stubEnter
	case strings.HasPrefix(name, "__bpf_prog_exit"):
		return stubExit
	case name == jit.HelperTrampEnter || name == jit.HelperTrampExit:
		return stubTramp
	}
	return stubStray
}

// specialHelper is the code of a symbol that is not a C helper: thunks and data.
func specialHelper(tg target, name string) (code []byte, skip, ok bool) {
	switch name {
	case "__x86_return_thunk":
		return tg.retStub(), false, true
	case "__x86_indirect_thunk_rbx":
		return []byte{0xff, 0xe3}, false, true // jmp *%rbx
	case "__x86_call_depth":
		return nil, true, true // per-cpu data, reached through %gs: not modelled
	}
	return nil, false, false
}

// buildStubs builds the helper and program stubs.
func buildStubs(tg target, a *jit.Addrs, progs []jit.Prog, retFor func(int) uint64, clobber bool, nc *nativeCfg) ([]piece, map[string]int, error) {
	ids := map[string]int{}
	var out []piece
	names := make([]string, 0, len(a.Helpers))
	for n := range a.Helpers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		at := uint64(a.Helpers[n])
		if code, skip, ok := specialHelper(tg, n); ok {
			if !skip {
				out = append(out, piece{name: n, addr: at, code: code})
			}
			continue
		}
		k := helperKind(n)
		ids[n] = len(ids) + 1
		pc := piece{name: n, addr: at, hook: k, prog: -1, routine: clobber, keepRet: k == stubEnter, id: ids[n], native: nc}
		out = append(out, pc)
	}
	for i := range progs {
		out = append(out, piece{name: fmt.Sprintf("bpf_func#%d", i+1), addr: uint64(a.Progs[i].BPFFunc),
			hook: stubProg, prog: i, routine: clobber, keepRet: true, ret: retFor(i), id: idProgBase + i, native: nc})
	}
	// Build with a placeholder routine (the stub's own address) to learn each size.
	for i := range out {
		if out[i].code != nil {
			continue
		}
		if err := out[i].build(tg, out[i].addr, out[i].addr); err != nil {
			return nil, nil, err
		}
	}
	return out, ids, nil
}

// progClobberer is a target whose programs return in more than the return register
// (riscv64: a5 = R0 beside a0): their stubs' clobber routine spares those.
type progClobberer interface {
	progClobberRoutine() []byte
}

// clusterGap separates clusters of pieces: code placed just past a cluster is within a
// direct branch (±128 MiB on arm64) of all of it and far from any other cluster.
const clusterGap = 1 << 20

// cluster returns the start and end of the run of pieces (gaps under clusterGap) that
// contains addr.
func cluster(ps []piece, addr uint64) (uint64, uint64) {
	s := append([]piece(nil), ps...)
	sort.Slice(s, func(i, j int) bool { return s[i].addr < s[j].addr })
	var start, end uint64
	for i, p := range s {
		switch {
		case i == 0:
			start, end = p.addr, p.end()
		case p.addr > end+clusterGap:
			if start <= addr && addr <= end {
				return start, end
			}
			start, end = p.addr, p.end()
		default:
			end = max(end, p.end())
		}
	}
	return start, end
}

// placeAfter is a free, 64-byte aligned address just past addr's cluster.
func placeAfter(ps []piece, addr uint64) uint64 {
	_, end := cluster(ps, addr)
	return (end + 63) &^ 63
}

// QEMU's tb jump cache (Unicorn looks the next block up in it on every indirect branch
// and every branch to another page) is direct-mapped: 64 rows of 64 slots, a page's row
// set by its page number, a block's slot in the row by its offset in the page. Two hot
// blocks in one slot evict each other, and each miss costs a hash-table walk (a few
// hundred host instructions). The harness places the stubs' checks where their bytes
// meet no slot of another piece or of the caller.

// jmpCachePageBits is the guest page size Unicorn runs arch with: arm64 uses 1 KiB
// pages (TARGET_PAGE_BITS_MIN), the others 4 KiB.
func jmpCachePageBits(a uc.Arch) uint {
	if a == uc.ARM64 {
		return 10
	}
	return 12
}

// jmpCacheSlot is the jump-cache index of pc: 12 bits, the page number's low bits and
// the pc's low bits each xor-folded with the six bits above them.
func jmpCacheSlot(pc uint64, pageBits uint) uint64 {
	const half = 6
	t := pc ^ pc>>(pageBits-half)
	return t>>(pageBits-half)&0xfc0 | t&0x3f
}

// callerReserve bounds the caller's code at callerBase, whose slots are kept free.
const callerReserve = 0x400

// placeChecks is where a checks piece of n bytes for the stub at addr goes: the first of
// the pages past addr's cluster (within direct-branch reach of it) on which none of its
// bytes shares a jump-cache slot with the bytes of another piece or of the caller.
func placeChecks(tg target, ps []piece, addr uint64, n int) uint64 {
	bits := jmpCachePageBits(tg.ucArch())
	var used [4096]bool
	mark := func(a, end uint64) {
		for ; a < end; a++ {
			used[jmpCacheSlot(a, bits)] = true
		}
	}
	mark(callerBase, callerBase+callerReserve)
	for _, p := range ps {
		mark(p.addr, p.end())
	}
	_, end := cluster(ps, addr)
	first := (end + 4095) &^ 4095
	for k := uint64(0); k < 64; k++ {
		at, free := first+k*4096, true
		for a := at; a < at+uint64(n) && free; a++ {
			free = !used[jmpCacheSlot(a, bits)]
		}
		if free {
			return at
		}
	}
	return first
}

// addClusterCode gives each cluster of stubs what they branch to, placed just past the
// cluster: a pair of clobber routines (with clobber) and a fail address (native checks).
// It rebuilds the stubs with those addresses and returns all pieces with the new ones.
func addClusterCode(tg target, all []piece, clobber, native bool) ([]piece, error) {
	type extra struct{ keep, every, prog, fail uint64 }
	extras := map[uint64]extra{} // cluster start -> its code
	for i, n := 0, len(all); i < n; i++ {
		if all[i].hook == stubNone || !(all[i].routine || all[i].native != nil || overlaps(all, i)) {
			continue
		}
		cs, _ := cluster(all, all[i].addr)
		x, ok := extras[cs]
		if !ok {
			at := placeAfter(all, all[i].addr)
			if clobber {
				keep := piece{name: "clobber routine", addr: at, code: tg.clobberRoutine(true)}
				every := piece{name: "clobber routine", addr: keep.end(), code: tg.clobberRoutine(false)}
				all = append(all, keep, every)
				x.keep, x.every, x.prog, at = keep.addr, every.addr, keep.addr, every.end()
				if pk, ok := tg.(progClobberer); ok {
					prog := piece{name: "clobber routine", addr: at, code: pk.progClobberRoutine()}
					all = append(all, prog)
					x.prog, at = prog.addr, prog.end()
				}
			}
			if native {
				f := piece{name: "fail", addr: at, code: tg.failStub(), fail: true}
				all = append(all, f)
				x.fail = f.addr
			}
			extras[cs] = x
		}
		r := x.every
		switch {
		case all[i].keepRet && all[i].hook == stubProg:
			r = x.prog
		case all[i].keepRet:
			r = x.keep
		}
		// A stub goes at its own address when it fits there: a jump to code elsewhere
		// is one more translated block per call.
		if err := all[i].build(tg, r, x.fail); err == nil && !overlaps(all, i) {
			continue
		} else if err != nil && all[i].native == nil {
			return nil, err
		}
		// A stub that does not fit before the next piece (kernel helpers packed closer
		// than a checking stub's length, a struct_ops image right after its program's
		// entry, or a fail out of its branches' reach) jumps to its code, placed past
		// the cluster (a jump leaves the return address and arguments as they were).
		q := all[i]
		q.name += " checks"
		q.addr = placeAfter(all, all[i].addr) // to learn its size
		if err := q.build(tg, r, x.fail); err != nil {
			return nil, err
		}
		q.addr = placeChecks(tg, all, all[i].addr, len(q.code))
		if err := q.build(tg, r, x.fail); err != nil {
			return nil, err
		}
		q.hook = stubNone
		all = append(all, q)
		code, err := tg.jump(all[i].addr, q.addr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", all[i].name, err)
		}
		all[i].code = code
	}
	return all, nil
}

// overlaps says whether piece i shares bytes with another piece.
func overlaps(all []piece, i int) bool {
	p := &all[i]
	for j := range all {
		if j != i && all[j].addr < p.end() && p.addr < all[j].end() {
			return true
		}
	}
	return false
}

func (p *piece) build(tg target, routine, fail uint64) error {
	if !p.routine {
		routine = 0
	}
	var err error
	switch {
	case p.native != nil:
		p.code, err = tg.nativeStub(p, routine, fail, p.native)
	case p.hook == stubProg:
		p.code, err = tg.progStub(p.addr, p.ret, routine)
	case p.hook == stubEnter:
		p.code, err = tg.enterStub(p.addr, routine)
	default:
		p.code, err = tg.helperStub(p.addr, routine)
	}
	if err != nil {
		return fmt.Errorf("%s stub at %#x: %w", p.name, p.addr, err)
	}
	return nil
}

func (p *piece) end() uint64 { return p.addr + uint64(len(p.code)) }

// checkOverlaps refuses pieces that share bytes: a stub must never overwrite the image.
func checkOverlaps(ps []piece) error {
	s := append([]piece(nil), ps...)
	sort.Slice(s, func(i, j int) bool { return s[i].addr < s[j].addr })
	for i := 1; i < len(s); i++ {
		if s[i].addr < s[i-1].end() {
			return fmt.Errorf("layout: %s at %#x overlaps %s at %#x..%#x", s[i].name, s[i].addr, s[i-1].name, s[i-1].addr, s[i-1].end())
		}
	}
	return nil
}

// pageRuns merges the pages the pieces touch into mappable runs [addr, addr+size).
func pageRuns(ps []piece) [][2]uint64 {
	const pg = 4096
	var pages []uint64
	seen := map[uint64]bool{}
	for _, p := range ps {
		for a := p.addr &^ (pg - 1); a < p.end(); a += pg {
			if !seen[a] {
				seen[a] = true
				pages = append(pages, a)
			}
		}
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i] < pages[j] })
	var runs [][2]uint64
	for _, a := range pages {
		if n := len(runs); n > 0 && runs[n-1][0]+runs[n-1][1] == a {
			runs[n-1][1] += pg
			continue
		}
		runs = append(runs, [2]uint64{a, pg})
	}
	return runs
}

// layOut builds every piece around l's image: the traced function and its out-of-line
// body, the stubs, and per cluster the clobber routines and fail addresses (native
// checks, nc != nil). It returns the pieces, the helpers' script ids and the fail
// addresses.
func (h *Harness) layOut(l *Loaded, nc *nativeCfg) ([]piece, map[string]int, []uint64, error) {
	if l.req.StructOps != nil {
		return h.layOutStructOps(l, nc)
	}
	req, m, addrs, o, code := l.req, l.m, l.addrs, &l.opts, l.code
	site := &siteSpec{fn: uint64(addrs.Func), ip: uint64(addrs.IP), image: l.image, progTarget: req.Target == "bpf",
		ibt: req.Features.IBT, slots: l.locs, retSize: m.RetSize, constRet: o.TargetRet, clobber: o.Clobber,
		jmp: jmpEntry(req, l.exp.flags), callOps: callOpsEntry(req)}
	if site.ip == 0 {
		site.ip = site.fn
	}
	site.ool = site.ip // placeholder: the prefix's length does not depend on it
	start, scode, body, err := h.tg.site(site)
	if err != nil {
		return nil, nil, nil, err
	}
	l.entry, l.body = start, body
	modPos := map[int]int{}
	for i, p := range req.Progs {
		if listOf(p.Kind, m) == jit.ModRet {
			modPos[i] = len(modPos)
		}
	}
	retFor := func(i int) uint64 {
		if j, ok := modPos[i]; ok && j < len(o.RetValues) {
			return o.RetValues[j]
		}
		return 0
	}
	stubs, ids, err := buildStubs(h.tg, addrs, req.Progs, retFor, o.Clobber, nc)
	if err != nil {
		return nil, nil, nil, err
	}
	pieces := append([]piece{{name: "image", addr: l.image, code: code}, {name: "traced function", addr: start, code: scode}}, stubs...)
	// The body goes where there is room: a BPF-program target may be packed right
	// before another program.
	site.ool = placeAfter(pieces, start)
	if nc != nil {
		site.fail = site.ool // placeholder: lengths do not depend on it
	}
	if _, scode, _, err = h.tg.site(site); err != nil {
		return nil, nil, nil, err
	}
	pieces[1].code = scode
	pieces = append(pieces, piece{name: "original's body", addr: site.ool, code: h.tg.outOfLine(site)})
	if sp, ok := h.tg.(sitePrefixer); ok {
		if at, data := sp.sitePrefix(site); len(data) > 0 {
			pieces = append(pieces, piece{name: "ftrace_ops pointer", addr: at, code: data})
		}
	}
	if pieces, err = addClusterCode(h.tg, pieces, o.Clobber, nc != nil); err != nil {
		return nil, nil, nil, err
	}
	var fails []uint64
	if nc != nil {
		site.fail = 0
		bodyStart, _ := cluster(pieces, site.ool)
		for _, p := range pieces {
			if cs, _ := cluster(pieces, p.addr); p.fail && cs == bodyStart {
				site.fail = p.addr
			}
		}
		if site.fail == 0 {
			f := piece{name: "fail", addr: placeAfter(pieces, site.ool), code: h.tg.failStub(), fail: true}
			pieces = append(pieces, f)
			site.fail = f.addr
		}
		for i := range pieces {
			if pieces[i].fail {
				fails = append(fails, pieces[i].addr)
			}
			if pieces[i].addr == site.ool {
				pieces[i].code = h.tg.outOfLine(site)
			}
		}
	}
	if err := checkOverlaps(pieces); err != nil {
		return nil, nil, nil, err
	}
	return pieces, ids, fails, nil
}
