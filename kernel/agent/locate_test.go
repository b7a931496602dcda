package main

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// fakeMem is sparse kernel memory: 8-byte words at their addresses.
type fakeMem map[uint64]uint64

func (m fakeMem) u64(a uint64) (uint64, error) { return m[a], nil }

func (m fakeMem) read(a uint64, n int) ([]byte, error) {
	if a%8 != 0 || n%8 != 0 {
		return nil, fmt.Errorf("unaligned read %#x+%d", a, n)
	}
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], m[a+uint64(i)])
	}
	return b, nil
}

// TestWalkSkipsStaleTrampoline: on 7.2 the trampoline_key_table bucket of a BPF-program
// target can still hold the trampoline of an unloaded target at the same address, with no
// image and no links, ahead of the live one. The walk must return the live one.
func TestWalkSkipsStaleTrampoline(t *testing.T) {
	const (
		table    = 0x1000
		fn       = 0xffffffffc0001000
		stale    = 0x100000
		live     = 0x200000
		im       = 0x300000
		image    = 0xffffffffc0042000
		node     = 0x400000 // struct bpf_tramp_node
		link     = 0x500000 // struct bpf_link
		prog     = 0x600000
		linkProg = 24 // bpf_link.prog
	)
	o := offsets{trHlist: 0, trFuncAddr: 64, trCurImage: 160, trProgsHlist: 120, imImage: 0,
		tlTrampHlist: 8, tlCookie: 24, nodeLink: 0, tlLinkProg: linkProg, nodes: true}
	m := fakeMem{
		table + 8*5:     stale, // bucket 5: stale -> live
		stale:           live,
		stale + 64:      fn,
		live + 64:       fn,
		live + 160:      im,
		im:              image,
		live + 120:      node + 8, // progs_hlist[FENTRY] -> the node's tramp_hlist
		node:            link,
		node + 24:       0x72, // the link's cookie
		link + linkProg: prog,
		live + 120 + 8:  0,
		live + 120 + 16: 0,
		node + 8:        0, // end of the list
		stale + 160:     0,
		stale + 120:     0,
	}
	c := &capturer{mem: m, ks: &kallsyms{byName: map[string]uint64{"trampoline_key_table": table}}, off: o}
	e, err := c.walkTrampolines(fn)
	if err != nil {
		t.Fatal(err)
	}
	if e.tr != live || e.image != image {
		t.Fatalf("walk found trampoline %#x with image %#x, want the live %#x with %#x", e.tr, e.image, uint64(live), uint64(image))
	}
	if len(e.links[0]) != 1 || e.links[0][0] != (linkEntry{prog, 0x72}) {
		t.Errorf("fentry links %+v, want prog %#x cookie 0x72 through bpf_tramp_node.link", e.links[0], uint64(prog))
	}
	// Only the stale one: it is what there is.
	delete(m, stale)
	m[table+8*5] = stale
	if e, err := c.walkTrampolines(fn); err != nil || e.tr != stale {
		t.Errorf("stale only: %+v %v", e, err)
	}
}
