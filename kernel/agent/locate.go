package main

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf/btf"
)

// offsets are the kernel struct member offsets the agent follows, from the guest's BTF.
type offsets struct {
	opsDirectCall uint32   // ftrace_ops.direct_call (arm64 6.12 image lookup)
	trHlist       uint32   // bpf_trampoline.hlist
	trFuncAddr    uint32   // bpf_trampoline.func.addr
	trCurImage    uint32   // bpf_trampoline.cur_image
	trProgsHlist  uint32   // bpf_trampoline.progs_hlist[]
	imImage       uint32   // bpf_tramp_image.image
	tlTrampHlist  uint32   // bpf_tramp_link.tramp_hlist
	tlCookie      uint32   // bpf_tramp_link.cookie
	tlLinkProg    uint32   // bpf_tramp_link.link.prog
	progBPFFunc   uint32   // bpf_prog.bpf_func
	errs          []string // for the trampoline_table walk
	opsErr        error    // ftrace_ops.direct_call is absent before 6.3 (x86 used a hash)
}

func loadOffsets(spec *btf.Spec) offsets {
	var o offsets
	get := func(dst *uint32, typ string, path ...string) {
		v, err := memberOffset(spec, typ, path...)
		if err != nil {
			o.errs = append(o.errs, err.Error())
		}
		*dst = v
	}
	o.opsDirectCall, o.opsErr = memberOffset(spec, "ftrace_ops", "direct_call")
	get(&o.trHlist, "bpf_trampoline", "hlist")
	get(&o.trFuncAddr, "bpf_trampoline", "func", "addr")
	get(&o.trCurImage, "bpf_trampoline", "cur_image")
	get(&o.trProgsHlist, "bpf_trampoline", "progs_hlist")
	get(&o.imImage, "bpf_tramp_image", "image")
	get(&o.tlTrampHlist, "bpf_tramp_link", "tramp_hlist")
	get(&o.tlCookie, "bpf_tramp_link", "cookie")
	get(&o.tlLinkProg, "bpf_tramp_link", "link", "prog")
	get(&o.progBPFFunc, "bpf_prog", "bpf_func")
	return o
}

// memberOffset returns the byte offset of typ.path[0].path[1]..., looking through
// anonymous struct and union members.
func memberOffset(spec *btf.Spec, typ string, path ...string) (uint32, error) {
	if spec == nil {
		return 0, fmt.Errorf("no kernel BTF for %s", typ)
	}
	var s *btf.Struct
	if err := spec.TypeByName(typ, &s); err != nil {
		return 0, fmt.Errorf("BTF struct %s: %w", typ, err)
	}
	var t btf.Type = s
	var off uint32
	for _, name := range path {
		o, mt, ok := findMember(t, name)
		if !ok {
			return 0, fmt.Errorf("BTF: struct %s has no member %v", typ, path)
		}
		off += o
		t = mt
	}
	return off, nil
}

func findMember(t btf.Type, name string) (uint32, btf.Type, bool) {
	var ms []btf.Member
	switch v := btf.UnderlyingType(t).(type) {
	case *btf.Struct:
		ms = v.Members
	case *btf.Union:
		ms = v.Members
	default:
		return 0, nil, false
	}
	for _, m := range ms {
		if m.Name == name {
			return m.Offset.Bytes(), m.Type, true
		}
		if m.Name == "" {
			if o, mt, ok := findMember(m.Type, name); ok {
				return m.Offset.Bytes() + o, mt, true
			}
		}
	}
	return 0, nil, false
}

// patchSite finds where the traced function calls its trampoline and what it calls.
// x86_64: a call rel32 at the entry, after an endbr64 when IBT builds one in (6.12).
// arm64: a bl among the first instructions (after bti c and "mov x9, x30").
func patchSite(arch string, site []byte, fn uint64) (ip, target uint64, err error) {
	switch arch {
	case "amd64":
		// The call is at +0, or at +4 after the ENDBR64 that IBT builds (which a CPU
		// without IBT sees sealed to a 4-byte nop).
		off := 0
		if len(site) >= 9 && site[0] != 0xe8 && site[4] == 0xe8 {
			off = 4
		}
		if len(site) < off+5 || site[off] != 0xe8 {
			return 0, 0, fmt.Errorf("no call rel32 at %#x or %#x+4 (bytes % x)", fn, fn, site[:min(len(site), 9)])
		}
		rel := int32(binary.LittleEndian.Uint32(site[off+1:]))
		ip = fn + uint64(off)
		return ip, ip + 5 + uint64(int64(rel)), nil
	case "arm64":
		for i := 0; i+4 <= len(site) && i < 16; i += 4 {
			w := binary.LittleEndian.Uint32(site[i:])
			if w&0xfc000000 == 0x94000000 { // bl imm26
				imm := int64(int32(w<<6) >> 6) // sign-extend 26 bits
				ip = fn + uint64(i)
				return ip, ip + uint64(imm*4), nil
			}
		}
		return 0, 0, fmt.Errorf("no bl in the first instructions at %#x (bytes % x)", fn, site[:min(len(site), 16)])
	}
	return 0, 0, fmt.Errorf("unsupported architecture %s", arch)
}

// trampolineTableSize is 1 << TRAMPOLINE_HASH_BITS (kernel/bpf/trampoline.c).
const trampolineTableSize = 1 << 10

// tableEntry is a struct bpf_trampoline found through trampoline_table.
type tableEntry struct {
	tr, im, image uint64
	links         [3][]linkEntry // per BPF_TRAMP_FENTRY/FEXIT/MODIFY_RETURN, attach order
}

type linkEntry struct{ prog, cookie uint64 }

// walkTrampolines finds the bpf_trampoline whose func.addr is fn by walking the kernel's
// trampoline_table hash (kernel/bpf/trampoline.c), independently of the patch site.
func (c *capturer) walkTrampolines(fn uint64) (*tableEntry, error) {
	if len(c.off.errs) > 0 {
		return nil, fmt.Errorf("BTF offsets: %v", c.off.errs)
	}
	base, err := c.ks.addr("trampoline_table")
	if err != nil {
		return nil, err
	}
	heads, err := c.mem.read(base, 8*trampolineTableSize)
	if err != nil {
		return nil, err
	}
	for i := 0; i < trampolineTableSize; i++ {
		node := binary.LittleEndian.Uint64(heads[8*i:])
		for n := 0; node != 0 && n < 64; n++ {
			tr := node - uint64(c.off.trHlist)
			addr, err := c.mem.u64(tr + uint64(c.off.trFuncAddr))
			if err != nil {
				return nil, err
			}
			if addr == fn {
				return c.readTrampoline(tr)
			}
			if node, err = c.mem.u64(node); err != nil { // hlist_node.next
				return nil, err
			}
		}
	}
	return nil, fmt.Errorf("no bpf_trampoline for %#x in trampoline_table", fn)
}

func (c *capturer) readTrampoline(tr uint64) (*tableEntry, error) {
	e := &tableEntry{tr: tr}
	var err error
	if e.im, err = c.mem.u64(tr + uint64(c.off.trCurImage)); err != nil {
		return nil, err
	}
	if e.im != 0 {
		if e.image, err = c.mem.u64(e.im + uint64(c.off.imImage)); err != nil {
			return nil, err
		}
	}
	for kind := 0; kind < 3; kind++ {
		node, err := c.mem.u64(tr + uint64(c.off.trProgsHlist) + uint64(8*kind))
		if err != nil {
			return nil, err
		}
		var l []linkEntry
		for n := 0; node != 0 && n < 64; n++ {
			link := node - uint64(c.off.tlTrampHlist)
			prog, err := c.mem.u64(link + uint64(c.off.tlLinkProg))
			if err != nil {
				return nil, err
			}
			cookie, err := c.mem.u64(link + uint64(c.off.tlCookie))
			if err != nil {
				return nil, err
			}
			l = append([]linkEntry{{prog, cookie}}, l...) // hlist head is the newest
			if node, err = c.mem.u64(node); err != nil {
				return nil, err
			}
		}
		e.links[kind] = l
	}
	return e, nil
}
