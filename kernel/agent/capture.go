package main

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel/wire"
)

// imageReadSize is how much of an image the agent reads first; it reads more (up to four
// times as much) when the end of code is not in it.
const imageReadSize = 4096

// helperNames are the kernel functions a trampoline may call; their addresses go into the
// gen request whether or not this image calls them.
var helperNames = []string{
	"__bpf_prog_enter", "__bpf_prog_exit",
	"__bpf_prog_enter_recur", "__bpf_prog_exit_recur",
	"__bpf_prog_enter_sleepable", "__bpf_prog_exit_sleepable",
	"__bpf_prog_enter_sleepable_recur", "__bpf_prog_exit_sleepable_recur",
	"__bpf_prog_enter_lsm_cgroup", "__bpf_prog_exit_lsm_cgroup",
	"__bpf_tramp_enter", "__bpf_tramp_exit",
	"__x86_return_thunk",
}

// arch is the agent's (and so the kernel's) architecture, in Go's and Debian's spelling.
const arch = runtime.GOARCH

type capturer struct {
	arch string // the kernel's: arch, except in tests of another arch's decoding
	mem  kernelMem
	ks   *kallsyms
	spec *btf.Spec
	off  offsets
	// struct_ops tables built so far in this boot, and the [bpf] symbols their images took
	soTables map[soKey]*soTable
	soSeen   map[uint64]bool
	soClose  []func() // closeStructOps
}

func newCapturer() (*capturer, error) {
	mem, err := newMemReader()
	if err != nil {
		return nil, err
	}
	ks, err := readKallsyms()
	if err != nil {
		return nil, err
	}
	c := &capturer{arch: arch, mem: mem, ks: ks}
	if c.spec, err = btf.LoadKernelSpec(); err != nil {
		logf("kernel BTF: %v", err)
	}
	c.off = loadOffsets(c.spec)
	return c, nil
}

// capture attaches the case's programs in order, reads the trampoline back, and detaches.
func (c *capturer) capture(cs wire.Case) (r wire.CaptureResult) {
	if cs.StructOps != nil {
		return c.captureStructOps(cs)
	}
	r = wire.CaptureResult{ID: cs.ID, Func: cs.Func}
	fail := func(stage string, err error) wire.CaptureResult {
		r.Stage, r.Error, r.Errno = stage, err.Error(), errnoOf(err)
		return r
	}
	var progs []*ebpf.Program
	var links []int
	defer func() {
		for _, l := range links {
			unix.Close(l)
		}
		for _, p := range progs {
			p.Close()
		}
	}()
	var target *ebpf.Program // a BPF-program target, when the case asks for one
	switch cs.Target {
	case "":
	case "bpf":
		var err error
		if target, r.Addr, err = loadTarget(cs.Func); err != nil {
			return fail("load", err)
		}
		defer target.Close()
	default:
		return fail("load", fmt.Errorf("unknown target %q (want \"\" for a kernel function or \"bpf\")", cs.Target))
	}
	var rec *ebpf.Map
	if cs.Run && len(cs.Progs) > 0 {
		var err error
		if rec, err = newRecordMap(len(cs.Progs)); err != nil {
			return fail("load", fmt.Errorf("recording map: %w", err))
		}
		defer rec.Close()
	}
	for i, p := range cs.Progs {
		var insns asm.Instructions
		if rec != nil {
			insns = recordInsns(p, rec, i)
		}
		prog, err := loadProg(c.spec, cs.Func, p, insns, target)
		if err != nil {
			r.Log = verifierLog(err)
			return fail("load", fmt.Errorf("load program %d (%s): %w", i+1, p.Kind, err))
		}
		progs = append(progs, prog)
		pr := wire.ProgResult{Kind: p.Kind, Cookie: p.Cookie}
		if info, err := prog.Info(); err == nil {
			if ks, ok := info.JitedKsymAddrs(); ok && len(ks) > 0 {
				pr.BPFFunc = uint64(ks[0])
			}
			pr.Tag = info.Tag
		}
		r.Progs = append(r.Progs, pr)
	}
	for i, p := range cs.Progs {
		_, at, _ := attachTypes(p.Kind)
		fd, err := linkCreate(progs[i], at, uint64(p.Cookie))
		if err != nil {
			return fail("attach", fmt.Errorf("attach program %d (%s) to %s: %w", i+1, p.Kind, cs.Func, err))
		}
		links = append(links, fd)
	}

	fn := cs.Func
	if len(cs.Progs) > 0 && cs.Progs[0].Kind == jit.LSM && !strings.HasPrefix(fn, "bpf_lsm_") {
		fn = "bpf_lsm_" + fn
	}
	if target == nil {
		var err error
		if r.Addr, err = c.ks.addr(fn); err != nil {
			return fail("locate", err)
		}
	}
	if err := c.locate(&r, target != nil); err != nil {
		return fail("locate", err)
	}
	var raw []byte
	var n int
	for size := imageReadSize; ; size *= 2 {
		b, err := c.mem.read(r.Image, size)
		if err != nil {
			if raw != nil {
				break // the larger read crossed into unmapped memory; keep the last error
			}
			return fail("read", fmt.Errorf("read image at %#x: %w", r.Image, err))
		}
		raw = b
		if n, err = codeEnd(c.arch, raw, r.Image, c.ks); err == nil || size >= 4*imageReadSize {
			break
		}
	}
	if n == 0 {
		_, err := codeEnd(c.arch, raw, r.Image, c.ks)
		r.Raw = raw
		return fail("read", err)
	}
	r.Code = raw[:n]
	r.Raw = raw[n:min(len(raw), n+64)]
	r.Symbols = c.symbols(r.Code, r.Image, &r)
	if r.IM == 0 || (len(r.Progs) > 0 && r.Progs[0].Prog == 0) {
		c.addrsFromImage(&r, cs)
	}
	if rec != nil {
		r.Run = runCase(cs, rec, target)
	}
	return r
}

// locate finds the image two ways where it can and records whether they agree.
func (c *capturer) locate(r *wire.CaptureResult, bpfTarget bool) error {
	site, err := c.mem.read(r.Addr, 32)
	if err != nil {
		return fmt.Errorf("read patch site: %w", err)
	}
	r.Site = site
	ip, target, kind, serr := patchSite(c.arch, site, r.Addr)
	r.IP = ip
	var viaSite, opsVia uint64
	switch {
	case serr != nil:
		r.Checks = append(r.Checks, "patch site: "+serr.Error())
	case c.arch == "amd64":
		viaSite, r.Locate = target, "x86 "+string(kind)+" rel32 target at the patch site"
	case c.arch == "arm64" && bpfTarget:
		// A JITed program's patch site branches to the image, or to its PLT when the image is
		// out of range (arch/arm64/net/bpf_jit_comp.c, bpf_arch_text_poke).
		viaSite, r.Locate = target, "arm64 bl at the BPF program's patch site"
		if lit, ok := c.followPLT(target); ok {
			viaSite, r.Locate = lit, "arm64 bl at the BPF program's patch site, through its PLT"
		}
	case c.arch == "arm64":
		// The 8 bytes before the function hold its ftrace_ops (CALL_OPS); the image is
		// ops->direct_call. The bl at the site goes to the image when it is in range.
		ops, err := c.mem.u64(r.Addr - 8)
		if err == nil && c.off.opsErr != nil {
			err = c.off.opsErr
		}
		if err == nil && ops != 0 {
			if viaSite, err = c.mem.u64(ops + uint64(c.off.opsDirectCall)); err == nil {
				r.Locate = "arm64 ftrace_ops.direct_call via the ops pointer before the function"
			}
		}
		if err != nil {
			r.Checks = append(r.Checks, "ops literal: "+err.Error())
		}
		if target == viaSite {
			r.Checks = append(r.Checks, "bl at the patch site targets the image")
		} else if name, ok := c.ks.byAddr[target]; ok {
			r.Checks = append(r.Checks, "bl at the patch site targets "+name)
		}
	case c.arch == "riscv64" && bpfTarget:
		viaSite, r.Locate = target, "riscv64 auipc t1; jalr t0 at the BPF program's patch site"
	case c.arch == "riscv64":
		viaSite, opsVia = c.rvLocate(r, target)
	}
	e, werr := c.walkTrampolines(r.Addr)
	if werr != nil {
		r.Checks = append(r.Checks, "trampoline_table walk: "+werr.Error())
	} else {
		r.IM = e.im
		c.assignProgs(r, e)
		if opsVia != 0 {
			viaSite = rvOpsAgree(r, opsVia, e.image)
		}
		switch {
		case viaSite == 0:
			viaSite, r.Locate = e.image, "trampoline_table walk (cur_image->image)"
		case viaSite == e.image:
			r.Checks = append(r.Checks, "trampoline_table walk agrees on the image")
		default:
			r.Checks = append(r.Checks, fmt.Sprintf("trampoline_table walk says image %#x, patch site %#x", e.image, viaSite))
		}
	}
	if viaSite == 0 && opsVia != 0 {
		viaSite = opsVia // no walk to check it against
	}
	if viaSite == 0 {
		return fmt.Errorf("image not found: %v", r.Checks)
	}
	r.Image = viaSite
	return nil
}

// followPLT returns the literal target of a JITed program's PLT ("ldr x10, #8; br x10"
// followed by the address) at a, if a holds one.
func (c *capturer) followPLT(a uint64) (uint64, bool) {
	b, err := c.mem.read(a, 16)
	if err != nil || binary.LittleEndian.Uint32(b) != 0x5800004a || binary.LittleEndian.Uint32(b[4:]) != 0xd61f0140 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[8:]), true
}

// addrsFromImage fills in im and the struct bpf_prog addresses from the image itself (the
// first argument of __bpf_tramp_enter and of each __bpf_prog_enter*) when trampoline_table
// could not be read (arm64 6.1 has no KALLSYMS_ALL). Programs are emitted fentry, fmod_ret,
// fexit, each kind newest first.
func (c *capturer) addrsFromImage(r *wire.CaptureResult, cs wire.Case) {
	var enters []uint64
	for _, cl := range calls(c.arch, r.Code, r.Image) {
		name := c.ks.byAddr[cl.target]
		switch {
		case name == "__bpf_tramp_enter" && r.IM == 0:
			r.IM = cl.arg0
		case strings.HasPrefix(name, "__bpf_prog_enter"):
			enters = append(enters, cl.arg0)
		}
	}
	var order []int // attach indexes in emission order
	// An fsession program runs in the fentry list and again in the fexit list.
	for _, kinds := range [][]jit.Kind{{jit.Fentry, jit.Fsession}, {jit.ModRet, jit.LSM}, {jit.Fexit, jit.Fsession}} {
		for i := len(cs.Progs) - 1; i >= 0; i-- {
			for _, k := range kinds {
				if cs.Progs[i].Kind == k {
					order = append(order, i)
				}
			}
		}
	}
	if len(order) != len(enters) {
		r.Checks = append(r.Checks, fmt.Sprintf("image calls __bpf_prog_enter* %d times for %d programs", len(enters), len(order)))
		return
	}
	for j, i := range order {
		if r.Progs[i].Prog == 0 {
			r.Progs[i].Prog = enters[j]
		}
	}
	r.Checks = append(r.Checks, "im and struct bpf_prog addresses decoded from the image")
}

// assignProgs gives each requested program the struct bpf_prog address of its link, matching
// per kind in attach order, and cross-checks bpf_func and the cookie.
func (c *capturer) assignProgs(r *wire.CaptureResult, e *tableEntry) {
	next := [3]int{}
	for i := range r.Progs {
		k := map[jit.Kind]int{jit.Fentry: 0, jit.Fexit: 1, jit.ModRet: 2, jit.LSM: 2, jit.Fsession: 0}[r.Progs[i].Kind]
		if r.Progs[i].Kind == jit.Fsession {
			next[1]++ // its companion node sits in the fexit list, in the same attach order
		}
		if r.Progs[i].Kind == jit.LSM && len(e.links[2]) <= next[2] {
			k = 1 // LSM on a void hook is an fexit
		}
		if next[k] >= len(e.links[k]) {
			r.Checks = append(r.Checks, fmt.Sprintf("program %d has no link in the trampoline", i+1))
			continue
		}
		l := e.links[k][next[k]]
		next[k]++
		r.Progs[i].Prog = l.prog
		if uint64(r.Progs[i].Cookie) != l.cookie {
			r.Checks = append(r.Checks, fmt.Sprintf("program %d: link cookie %#x, requested %#x", i+1, l.cookie, uint64(r.Progs[i].Cookie)))
		}
		if f, err := c.mem.u64(l.prog + uint64(c.off.progBPFFunc)); err == nil && f != r.Progs[i].BPFFunc {
			r.Checks = append(r.Checks, fmt.Sprintf("program %d: bpf_prog.bpf_func %#x, prog info says %#x", i+1, f, r.Progs[i].BPFFunc))
		}
	}
}

// symbols names the helpers a trampoline may call plus every call target in code.
func (c *capturer) symbols(code []byte, base uint64, r *wire.CaptureResult) map[string]uint64 {
	s := map[string]uint64{}
	for _, n := range helperNames {
		if a, ok := c.ks.byName[n]; ok {
			s[n] = a
		}
	}
	for _, cl := range calls(c.arch, code, base) {
		t := cl.target
		if t >= base && t < base+uint64(len(code)) || t == r.IP+ipAfterPatch(c.arch) {
			continue // internal branch, or the call into the traced function's body
		}
		if i := progByFunc(r.Progs, t); i >= 0 {
			n := fmt.Sprintf("bpf_func#%d", i+1)
			s[n] = t
			r.Targets = append(r.Targets, n)
			continue
		}
		if n, ok := c.ks.byAddr[t]; ok {
			s[n] = t
			r.Targets = append(r.Targets, n)
		} else {
			r.Checks = append(r.Checks, fmt.Sprintf("call target %#x has no symbol", t))
		}
	}
	return s
}
