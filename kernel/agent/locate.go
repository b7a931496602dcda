package main

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf/btf"
)

// offsets are the kernel struct member offsets the agent follows, from the guest's BTF.
// 7.x moved a link's list node and cookie into struct bpf_tramp_node (which points back at
// its bpf_link) and renamed the trampoline hash to trampoline_key_table.
type offsets struct {
	opsDirectCall uint32   // ftrace_ops.direct_call (arm64 6.12 image lookup)
	trHlist       uint32   // bpf_trampoline.hlist (6.x) or .hlist_key (7.x)
	trFuncAddr    uint32   // bpf_trampoline.func.addr
	trCurImage    uint32   // bpf_trampoline.cur_image
	trProgsHlist  uint32   // bpf_trampoline.progs_hlist[]
	imImage       uint32   // bpf_tramp_image.image
	tlTrampHlist  uint32   // the list node in its container: bpf_tramp_link (6.x) or bpf_tramp_node (7.x)
	tlCookie      uint32   // bpf_tramp_link.cookie / bpf_tramp_node.cookie
	tlLinkProg    uint32   // bpf_tramp_link.link.prog (6.x) / bpf_link.prog (7.x)
	nodeLink      uint32   // bpf_tramp_node.link (7.x)
	nodes         bool     // 7.x layout: the list holds bpf_tramp_nodes
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
	if _, err := memberOffset(spec, "bpf_tramp_node", "tramp_hlist"); err == nil {
		o.nodes = true
		get(&o.trHlist, "bpf_trampoline", "hlist_key")
		get(&o.tlTrampHlist, "bpf_tramp_node", "tramp_hlist")
		get(&o.tlCookie, "bpf_tramp_node", "cookie")
		get(&o.nodeLink, "bpf_tramp_node", "link")
		get(&o.tlLinkProg, "bpf_link", "prog")
	} else {
		get(&o.trHlist, "bpf_trampoline", "hlist")
		get(&o.tlTrampHlist, "bpf_tramp_link", "tramp_hlist")
		get(&o.tlCookie, "bpf_tramp_link", "cookie")
		get(&o.tlLinkProg, "bpf_tramp_link", "link", "prog")
	}
	get(&o.trFuncAddr, "bpf_trampoline", "func", "addr")
	get(&o.trCurImage, "bpf_trampoline", "cur_image")
	get(&o.trProgsHlist, "bpf_trampoline", "progs_hlist")
	get(&o.imImage, "bpf_tramp_image", "image")
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
	table := "trampoline_table"
	if c.off.nodes {
		table = "trampoline_key_table"
	}
	base, err := c.ks.addr(table)
	if err != nil {
		return nil, err
	}
	heads, err := c.mem.read(base, 8*trampolineTableSize)
	if err != nil {
		return nil, err
	}
	var stale *tableEntry
	for i := 0; i < trampolineTableSize; i++ {
		node := binary.LittleEndian.Uint64(heads[8*i:])
		for n := 0; node != 0 && n < 64; n++ {
			tr := node - uint64(c.off.trHlist)
			addr, err := c.mem.u64(tr + uint64(c.off.trFuncAddr))
			if err != nil {
				return nil, err
			}
			if addr == fn {
				e, err := c.readTrampoline(tr)
				if err != nil || e.im != 0 {
					return e, err
				}
				// A trampoline without an image is one being torn down (7.2 keeps the
				// one of an unloaded BPF-program target at the same address a while):
				// keep looking for the live one.
				if stale == nil {
					stale = e
				}
			}
			if node, err = c.mem.u64(node); err != nil { // hlist_node.next
				return nil, err
			}
		}
	}
	if stale != nil {
		return stale, nil
	}
	return nil, fmt.Errorf("no bpf_trampoline for %#x in %s", fn, table)
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
			holder := link // the struct with the cookie
			if c.off.nodes {
				if link, err = c.mem.u64(holder + uint64(c.off.nodeLink)); err != nil {
					return nil, err
				}
			}
			prog, err := c.mem.u64(link + uint64(c.off.tlLinkProg))
			if err != nil {
				return nil, err
			}
			cookie, err := c.mem.u64(holder + uint64(c.off.tlCookie))
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
