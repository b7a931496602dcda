package main

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel/wire"
)

// Two member images of a registered tcp_congestion_ops as the Debian 6.12 amd64 kernel built
// them (captured in a guest: ssthresh, then cong_avoid 172 bytes later), with their struct
// bpf_prog and __bpf_prog_enter/exit addresses.
const (
	so612Base     = uint64(0xffffffffc0316a40)
	so612Ssthresh = "f30f1efa554889e54883ec3048895de0b801000000488945e848897df031ff48897dd048bf00d009c01b7669ff488d75d0e8badadadc4889c34885c0740d488d7df0e8c1fbffff488945f848bf00d009c01b7669ff4889de488d55d0e89fdddadc488b45f8488b5de0c9c3cc"
	so612CongAvd  = "f30f1efa554889e54883ec3848895dd8b803000000488945e048897de8488975f0488955f831ff48897dc848bf00d00cc01b7669ff488d75c8e806dadadc4889c34885c07409488d7de8e891fcffff48bf00d00cc01b7669ff4889de488d55c8e8efdcdadc488b5dd8c9c3cc"
	so612Enter    = uint64(0xffffffff9d0c4530)
	so612Exit     = uint64(0xffffffff9d0c4840)
	so612Prog1    = uint64(0xff69761bc009d000)
	so612Prog2    = uint64(0xff69761bc00cd000)
)

// regionMem is kernel memory as byte regions (reads outside them fail, as unmapped pages do)
// plus sparse words.
type regionMem struct {
	regions map[uint64][]byte
	words   fakeMem
}

func (m regionMem) read(a uint64, n int) ([]byte, error) {
	for base, b := range m.regions {
		if a >= base && a-base <= uint64(len(b)) && uint64(n) <= uint64(len(b))-(a-base) {
			return append([]byte(nil), b[a-base:a-base+uint64(n)]...), nil
		}
	}
	return m.words.read(a, n)
}

func (m regionMem) u64(a uint64) (uint64, error) {
	for base, r := range m.regions {
		if a >= base && a-base <= uint64(len(r)) && uint64(len(r))-(a-base) >= 8 {
			return binary.LittleEndian.Uint64(r[a-base:]), nil
		}
	}
	return m.words.u64(a)
}

// tcpOps is enough of struct tcp_congestion_ops for the walk: two function pointers, name and
// list at their 6.12 offsets.
func tcpOps() *btf.Struct {
	fp := &btf.Pointer{Target: &btf.FuncProto{Return: &btf.Int{Size: 4}}}
	list := &btf.Struct{Name: "list_head", Size: 16}
	return &btf.Struct{Name: "tcp_congestion_ops", Size: 256, Members: []btf.Member{
		{Name: "ssthresh", Type: fp, Offset: 0},
		{Name: "cong_avoid", Type: fp, Offset: 64}, // bits
		{Name: "name", Type: &btf.Array{Type: &btf.Int{Size: 1}, Nelems: 16}, Offset: 128 * 8},
		{Name: "list", Type: list, Offset: 152 * 8},
	}}
}

// TestReadTableBothWays: an image found by its new bpf__ ksym and by the registered table's
// pointer (tcp_cong_list), code read to its ret+int3, struct bpf_prog taken from the image,
// the layout back to back.
func TestReadTableBothWays(t *testing.T) {
	img1, _ := hex.DecodeString(so612Ssthresh)
	img2, _ := hex.DecodeString(so612CongAvd)
	page := bytes.Repeat([]byte{0xcc}, 2*4096)
	off := so612Base % 4096
	pageBase := so612Base - off
	copy(page[off:], img1)
	copy(page[off+172:], img2)
	const (
		head = uint64(0xffffffff9f000000) // tcp_cong_list
		ops  = uint64(0xff00000000100000) // our registered tcp_congestion_ops
	)
	m := regionMem{regions: map[uint64][]byte{pageBase: page}, words: fakeMem{
		head:      ops + 152, // head.next -> our ops' list
		ops + 152: head,      // ... and back
		ops:       so612Base, ops + 8: so612Base + 172,
		so612Prog1 + 0x30: 0xffffffffc0316648, so612Prog2 + 0x30: 0xffffffffc03167cc,
	}}
	name := make([]byte, 16)
	copy(name, "tj_ca1")
	m.words[ops+128] = binary.LittleEndian.Uint64(name)
	m.words[ops+136] = 0
	ks := &kallsyms{byName: map[string]uint64{"tcp_cong_list": head, "__bpf_prog_enter": so612Enter, "__bpf_prog_exit": so612Exit},
		byAddr: map[uint64]string{so612Enter: "__bpf_prog_enter", so612Exit: "__bpf_prog_exit"}}
	c := &capturer{arch: "amd64", mem: m, ks: ks, off: offsets{progBPFFunc: 0x30}, soSeen: map[uint64]bool{}}
	old := bpfKsyms
	defer func() { bpfKsyms = old }()
	bpfKsyms = func() ([]ksym, error) {
		return []ksym{{so612Base, "bpf__tcp_congestion_ops_ssthresh"}, {so612Base + 172, "bpf__tcp_congestion_ops_cong_avoid"}, {so612Base + 344, "bpf_prog_x"}}, nil
	}
	tbl := &soTable{members: map[string]wire.CaptureResult{}}
	funcs := map[string]uint64{"ssthresh": 0xffffffffc0316648, "cong_avoid": 0xffffffffc03167cc}
	for i, mem := range []string{"ssthresh", "cong_avoid"} {
		tbl.members[mem] = wire.CaptureResult{StructOps: &wire.StructOpsResult{Map: "tj_tcp_conge_1", Index: i},
			Progs: []wire.ProgResult{{Kind: jit.StructOpsProg, BPFFunc: funcs[mem]}}}
	}
	so := &wire.StructOpsCase{Ops: "tcp_congestion_ops", Map: 1, Data: map[string]string{"name": "tj_ca1"}}
	c.readTable(so, tcpOps(), "tj_tcp_conge_1", []soLoaded{{member: "ssthresh", index: 0}, {member: "cong_avoid", index: 1}}, tbl)

	for mem, want := range map[string][]byte{"ssthresh": img1, "cong_avoid": img2} {
		r := tbl.members[mem]
		if r.Error != "" {
			t.Fatalf("%s: %s: %s", mem, r.Stage, r.Error)
		}
		if !bytes.Equal(r.Code, want) {
			t.Errorf("%s: code\n%x, want\n%x", mem, r.Code, want)
		}
		if !strings.Contains(strings.Join(r.Checks, ";"), "the registered table's pointer equals the ksym") {
			t.Errorf("%s: checks %q", mem, r.Checks)
		}
		if !strings.HasPrefix(r.Locate, "kallsyms bpf__tcp_congestion_ops_"+mem) {
			t.Errorf("%s: locate %q", mem, r.Locate)
		}
		if len(r.StructOps.Layout) != 2 || r.StructOps.Page != 0 || r.StructOps.Mode != "reg" {
			t.Errorf("%s: struct_ops %+v", mem, r.StructOps)
		}
	}
	if p := tbl.members["ssthresh"].Progs[0].Prog; p != so612Prog1 {
		t.Errorf("ssthresh: struct bpf_prog %#x, want %#x (the movabs rdi before __bpf_prog_enter)", p, so612Prog1)
	}
	if p := tbl.members["cong_avoid"].Progs[0].Prog; p != so612Prog2 {
		t.Errorf("cong_avoid: struct bpf_prog %#x, want %#x", p, so612Prog2)
	}
	if e := tbl.members["cong_avoid"].StructOps.KsymEnd; uint64(e) != so612Base+344 {
		t.Errorf("cong_avoid: ksym_end %#x, want the next [bpf] symbol", uint64(e))
	}
	// A second map of the table gets other addresses: the ones taken are not reused.
	if !c.soSeen[so612Base] || !c.soSeen[so612Base+172] {
		t.Errorf("the ksyms found are not marked taken: %v", c.soSeen)
	}
}

func TestTCPCongPointersNotRegistered(t *testing.T) {
	const head = 0x1000
	c := &capturer{mem: fakeMem{head: head}, ks: &kallsyms{byName: map[string]uint64{"tcp_cong_list": head}}}
	if _, err := c.tcpCongPointers(tcpOps(), "tj_ca1"); err == nil || !strings.Contains(err.Error(), `no tcp_congestion_ops named "tj_ca1"`) {
		t.Errorf("empty list: %v", err)
	}
	c.ks = &kallsyms{byName: map[string]uint64{}}
	if _, err := c.tcpCongPointers(tcpOps(), "tj_ca1"); err == nil || !strings.Contains(err.Error(), "tcp_cong_list is not in /proc/kallsyms") {
		t.Errorf("no symbol: %v", err)
	}
}

// TestSOCodeEnd: struct_ops images are packed back to back, so the end of code is the return
// itself, not a fill pattern (arm64 images from the Debian 6.12 arm64 kernel).
func TestSOCodeEnd(t *testing.T) {
	arm, _ := hex.DecodeString("fd7bbfa9fd030091ff0301d12a0080d2ea0b00f9e00f00f9f31700f9f41b00f9ff0300f9f3ff85927301b0f21300d0f260020091e1030091ea3d86926ad5b3f2cad2d2f240013fd614000091800000b4e063009171feff97e01300f96002009181020091e2030091eafb85926ad5b3f2cad2d2f240013fd6f31740f9f41b40f9e01340f9bf030091fd7bc1a8c0035fd6")
	next := append(append([]byte(nil), arm...), arm[:16]...) // the next member's image follows at once
	if n, err := soCodeEnd("arm64", next, 0, &kallsyms{}); err != nil || n != len(arm) {
		t.Errorf("arm64: %d, %v; want %d (through ret x30)", n, err, len(arm))
	}
	x86, _ := hex.DecodeString(so612Ssthresh)
	following := append(append([]byte(nil), x86...), 0xf3, 0x0f, 0x1e, 0xfa)
	if n, err := soCodeEnd("amd64", following, so612Base, &kallsyms{}); err != nil || n != len(x86) {
		t.Errorf("amd64: %d, %v; want %d (through ret; int3)", n, err, len(x86))
	}
	// With a return thunk the image ends at the jmp: an int3 after it is not code.
	thunk := so612Base + 0x1000
	j := []byte{0xf3, 0x0f, 0x1e, 0xfa, 0xc9, 0xe9, 0, 0, 0, 0, 0xcc}
	binary.LittleEndian.PutUint32(j[6:], uint32(thunk-(so612Base+10)))
	if n, err := soCodeEnd("amd64", j, so612Base, &kallsyms{byName: map[string]uint64{"__x86_return_thunk": thunk}}); err != nil || n != 10 {
		t.Errorf("amd64 return thunk: %d, %v; want 10", n, err)
	}
}

func TestPageSlots(t *testing.T) {
	// The Debian 7.2 amd64 sched_ext_ops map: cgroup_exit ends 0x...3763 + 64, and
	// cgroup_prep_move (185 bytes with the margin) does not fit before 0x...27c0 + 4096: it
	// starts the next chunk, right after the first.
	s := []wire.StructOpsSlot{{Image: 0xffffffffc03e27c0, Size: 121}, {Image: 0xffffffffc03e36ba, Size: 105},
		{Image: 0xffffffffc03e37c0, Size: 121}, {Image: 0xffffffffc03e3879, Size: 113}, {Image: 0xffffffffc0001000, Size: 100}}
	pageSlots(s)
	if got := fmt.Sprint(s[0].Page, s[1].Page, s[2].Page, s[3].Page, s[4].Page); got != "0 0 1 1 2" {
		t.Errorf("pages %s, want 0 0 1 1 2", got)
	}
}

// TestARM64ListHead: without KALLSYMS_ALL the list head comes from the adrp + add in a
// function that walks it; an adrp + add to something that is not such a list is skipped.
func TestARM64ListHead(t *testing.T) {
	const (
		fn   = uint64(0xffff800008100010)
		head = uint64(0xffff800009a3c5e8) // tcp_cong_list
		bad  = uint64(0xffff800009a30000)
		reno = uint64(0xffff800009b00000) // a registered tcp_congestion_ops
	)
	adrp := func(rd uint32, pc, target uint64) uint32 {
		imm := uint32((target&^0xfff - pc&^0xfff) >> 12)
		return 0x90000000 | (imm&3)<<29 | (imm>>2&0x7ffff)<<5 | rd
	}
	add := func(rd, rn uint32, lo uint64) uint32 { return 0x91000000 | uint32(lo&0xfff)<<10 | rn<<5 | rd }
	words := []uint32{adrp(1, fn, bad), add(1, 1, bad), adrp(0, fn+8, head), add(0, 0, head), 0xd65f03c0}
	code := make([]byte, 512)
	for i, w := range words {
		binary.LittleEndian.PutUint32(code[4*i:], w)
	}
	name := make([]byte, 16)
	copy(name, "reno")
	m := regionMem{regions: map[uint64][]byte{fn: code, reno + 128: name}, words: fakeMem{
		head: reno + 152, reno + 152: head, // head <-> reno.list
		bad: 0x10, // not a list
	}}
	c := &capturer{arch: "arm64", mem: m, ks: &kallsyms{byName: map[string]uint64{"tcp_get_available_congestion_control": fn}}}
	if got, ok := c.arm64ListHead("tcp_get_available_congestion_control", 152, 128); !ok || got != head {
		t.Errorf("list head %#x, %v; want %#x", got, ok, head)
	}
}
