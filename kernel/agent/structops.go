package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"unsafe"

	"golang.org/x/arch/x86/x86asm"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel/wire"
)

// A struct_ops case is one member of an ops table. The agent builds the whole table once per
// (ops, map): one BPF_PROG_TYPE_STRUCT_OPS program per function-pointer member, a
// BPF_MAP_TYPE_STRUCT_OPS map holding them, and the update that makes the kernel build every
// member's image (bpf_struct_ops_map_update_elem, kernel/bpf/bpf_struct_ops.c). Each member
// case is then answered from that table.

type soKey struct {
	ops string
	m   int
}

// soTable is a captured table: each member's result, or the error every member shares.
type soTable struct {
	members map[string]wire.CaptureResult
	err     *wire.CaptureResult
}

// captureStructOps answers a struct_ops case: one member, or a whole table (Member ""), or
// every table the host's catalogue does not know (Ops "").
func (c *capturer) captureStructOps(cs wire.Case) wire.CaptureResult {
	so := cs.StructOps
	if c.soTables == nil {
		c.soTables, c.soSeen = map[soKey]*soTable{}, map[uint64]bool{}
	}
	switch {
	case so.Ops == "":
		return c.discoverTables(cs)
	case so.Member == "":
		return c.emitTable(cs.ID, so, "")
	}
	t := c.table(so)
	var r wire.CaptureResult
	switch m, ok := t.members[so.Member]; {
	case t.err != nil:
		r = *t.err
	case ok:
		r = m
	default:
		r = wire.CaptureResult{Stage: "load", Error: fmt.Sprintf("struct %s has no function-pointer member %s in this kernel's BTF", so.Ops, so.Member)}
	}
	r.ID, r.Func = cs.ID, cs.Func
	return r
}

// table builds (once) and returns the map so names.
func (c *capturer) table(so *wire.StructOpsCase) *soTable {
	k := soKey{so.Ops, so.Map}
	t, ok := c.soTables[k]
	if !ok {
		t = c.captureTable(so)
		c.soTables[k] = t
	}
	return t
}

// emitTable captures every function-pointer member of the table in this kernel's BTF and
// reports each as a capture frame of its own, id prefix + "-" + member, in index order; the
// returned result (id prefix) is the table's: its error, or how many members it has.
func (c *capturer) emitTable(prefix string, so *wire.StructOpsCase, note string) wire.CaptureResult {
	t := c.table(so)
	sum := wire.CaptureResult{ID: prefix, Func: so.Ops}
	if t.err != nil {
		sum.Stage, sum.Error, sum.Errno = t.err.Stage, t.err.Error, t.err.Errno
		return sum
	}
	names := make([]string, 0, len(t.members))
	for m := range t.members {
		names = append(names, m)
	}
	sort.Slice(names, func(i, j int) bool { return t.members[names[i]].StructOps.Index < t.members[names[j]].StructOps.Index })
	for _, m := range names {
		r := t.members[m]
		r.ID, r.Func = prefix+"-"+m, so.Ops+"."+m
		if note != "" {
			r.Checks = append(r.Checks, note)
		}
		emit(wire.KindCapture, r)
	}
	sum.Checks = []string{fmt.Sprintf("%d function-pointer members: %s", len(names), strings.Join(names, ", "))}
	return sum
}

// opsTables are the ops tables of spec not named in except, sorted: a struct <ops> whose
// bpf_struct_ops_<ops> value type has it as its data member (is_valid_value_type,
// kernel/bpf/bpf_struct_ops.c); bpf_struct_ops_map, _value, _link... are no tables.
func opsTables(spec *btf.Spec, except []string) []string {
	var found []string
	for typ, err := range spec.All() {
		if err != nil {
			break
		}
		vt, ok := typ.(*btf.Struct)
		if !ok || !strings.HasPrefix(vt.Name, "bpf_struct_ops_") {
			continue
		}
		ops := strings.TrimPrefix(vt.Name, "bpf_struct_ops_")
		if _, mt, ok := findMember(vt, "data"); !ok || btf.UnderlyingType(mt).TypeName() != ops || contains(except, ops) {
			continue
		}
		found = append(found, ops)
	}
	sort.Strings(found)
	return found
}

// discoverTables captures the tables of this kernel's BTF that cs.StructOps.Except does not
// name: an ops table is a struct <ops> with a bpf_struct_ops_<ops> value type whose data
// member is that struct (is_valid_value_type, kernel/bpf/bpf_struct_ops.c). Each gets its
// recipe from Recipes, or one BPF_F_LINK map of trivial programs (the update builds the
// images and stops before reg, whatever the table's reg needs), recorded as such.
func (c *capturer) discoverTables(cs wire.Case) wire.CaptureResult {
	sum := wire.CaptureResult{ID: cs.ID, Func: cs.Func}
	if c.spec == nil {
		sum.Stage, sum.Error = "load", "no kernel BTF"
		return sum
	}
	found := opsTables(c.spec, cs.StructOps.Except)
	for _, ops := range found {
		so, note := &wire.StructOpsCase{Ops: ops, Map: 1, Link: true}, "no recipe: one BPF_F_LINK map of trivial programs"
		for _, r := range cs.StructOps.Recipes {
			if r.Ops == ops {
				rc := r
				rc.Map = max(rc.Map, 1)
				so, note = &rc, ""
			}
		}
		r := c.emitTable("struct_ops-"+ops, so, note)
		if r.Error != "" {
			logf("table %s: %s", ops, r.Error)
		}
	}
	sum.Checks = []string{fmt.Sprintf("tables the catalogue does not list: %s", strings.Join(found, ", "))}
	return sum
}

// closeStructOps unregisters and closes every table of the boot, newest first.
func (c *capturer) closeStructOps() {
	for i := len(c.soClose) - 1; i >= 0; i-- {
		c.soClose[i]()
	}
	c.soClose = nil
}

// soLoaded is one member's loaded program.
type soLoaded struct {
	member string
	index  int
	prog   *ebpf.Program
}

// captureTable loads, registers (or links) and reads back one map of an ops table.
func (c *capturer) captureTable(so *wire.StructOpsCase) *soTable {
	t := &soTable{members: map[string]wire.CaptureResult{}}
	fail := func(stage string, err error) *soTable {
		t.err = &wire.CaptureResult{Stage: stage, Error: err.Error(), Errno: errnoOf(err)}
		return t
	}
	if c.spec == nil {
		return fail("load", fmt.Errorf("no kernel BTF"))
	}
	var st, vt *btf.Struct
	if err := c.spec.TypeByName(so.Ops, &st); err != nil {
		return fail("load", fmt.Errorf("BTF struct %s: %w", so.Ops, err))
	}
	if err := c.spec.TypeByName("bpf_struct_ops_"+so.Ops, &vt); err != nil {
		return fail("load", fmt.Errorf("BTF struct bpf_struct_ops_%s (the table's map value): %w", so.Ops, err))
	}
	opsID, _ := c.spec.TypeID(st)
	valID, _ := c.spec.TypeID(vt)
	dataOff, _, ok := findMember(vt, "data")
	if !ok {
		return fail("load", fmt.Errorf("BTF struct bpf_struct_ops_%s has no data member", so.Ops))
	}
	value := make([]byte, vt.Size)
	for name, s := range so.Data {
		off, mt, ok := findMember(st, name)
		arr, isArr := btf.UnderlyingType(mt).(*btf.Array)
		if !ok || !isArr || int(arr.Nelems) <= len(s) {
			return fail("load", fmt.Errorf("data member %s.%s: not a char array longer than %q", so.Ops, name, s))
		}
		copy(value[dataOff+off:], s)
	}
	mapName := fmt.Sprintf("tj_%.9s_%d", so.Ops, so.Map)

	// Every table stays until the boot's cases are done (closeStructOps): two maps of one
	// table must coexist, or the second gets the first one's freed image addresses.
	var loaded []soLoaded
	defer func() {
		for _, l := range loaded {
			c.soClose = append(c.soClose, func() { l.prog.Close() })
		}
	}()
	for i, m := range st.Members {
		if !isFuncPtr(m.Type) {
			continue
		}
		r := wire.CaptureResult{StructOps: &wire.StructOpsResult{Map: mapName, Index: i}}
		insns, err := soInsns(c.spec, m, so.Release[m.Name])
		var prog *ebpf.Program
		if err == nil {
			prog, r.Log, err = loadStructOps(insns, uint32(opsID), i, contains(so.Sleepable, m.Name), m.Name)
		}
		if err != nil {
			r.Stage, r.Error, r.Errno = "load", fmt.Sprintf("load program 1 (struct_ops): %v", err), errnoOf(err)
			t.members[m.Name] = r
			continue
		}
		r.Log = ""
		pr := wire.ProgResult{Kind: jit.StructOpsProg}
		if info, err := prog.Info(); err == nil {
			if ks, ok := info.JitedKsymAddrs(); ok && len(ks) > 0 {
				pr.BPFFunc = uint64(ks[0])
			}
			pr.Tag = info.Tag
		}
		r.Progs = []wire.ProgResult{pr}
		binary.LittleEndian.PutUint64(value[dataOff+m.Offset.Bytes():], uint64(prog.FD()))
		t.members[m.Name] = r
		loaded = append(loaded, soLoaded{m.Name, i, prog})
	}
	failAll := func(stage string, err error) *soTable {
		for _, l := range loaded {
			r := t.members[l.member]
			r.Stage, r.Error, r.Errno = stage, err.Error(), errnoOf(err)
			r.Progs = nil
			t.members[l.member] = r
		}
		return t
	}
	if len(loaded) == 0 {
		return t
	}
	// map_create wants a BTF fd even for a kernel value type (libbpf passes the object's);
	// any BTF will do, so a one-type one.
	bb, err := btf.NewBuilder([]btf.Type{&btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}}, nil)
	var h *btf.Handle
	if err == nil {
		h, err = btf.NewHandle(bb)
	}
	if err != nil {
		return failAll("attach", fmt.Errorf("load a BTF for the struct_ops map: %w", err))
	}
	defer h.Close() // the map holds its own reference
	attr := mapCreateAttr{MapType: unix.BPF_MAP_TYPE_STRUCT_OPS, KeySize: 4, ValueSize: vt.Size, MaxEntries: 1,
		MapName: objName(mapName), BTFFD: uint32(h.FD()), BTFVmlinuxValueTypeID: uint32(valID)}
	if so.Link {
		attr.MapFlags = unix.BPF_F_LINK
	}
	mfd, err := mapCreate(&attr)
	if err != nil {
		return failAll("attach", fmt.Errorf("create the struct_ops map: %w", err))
	}
	c.soClose = append(c.soClose, func() { unix.Close(mfd) })
	if err := mapElem(unix.BPF_MAP_UPDATE_ELEM, mfd, value); err != nil {
		return failAll("attach", fmt.Errorf("update the struct_ops map (BPF_MAP_UPDATE_ELEM): %w", err))
	}
	if !so.Link {
		// The update registered the table; deleting the element unregisters it.
		c.soClose = append(c.soClose, func() {
			if err := mapElem(unix.BPF_MAP_DELETE_ELEM, mfd, nil); err != nil {
				logf("unregister %s: %v", mapName, err)
			}
		})
	}
	c.readTable(so, st, mapName, loaded, t)
	return t
}

// readTable finds and reads every loaded member's image.
func (c *capturer) readTable(so *wire.StructOpsCase, st *btf.Struct, mapName string, loaded []soLoaded, t *soTable) {
	mode := "reg"
	if so.Link {
		mode = "link"
	}
	var ptrs map[string]uint64
	var ptrErr error
	if !so.Link && so.Ops == "tcp_congestion_ops" {
		ptrs, ptrErr = c.tcpCongPointers(st, so.Data["name"])
	}
	syms, symErr := bpfKsyms()
	var slots []wire.StructOpsSlot
	for _, l := range loaded {
		r := t.members[l.member]
		sr := r.StructOps
		sr.Mode = mode
		if ptrErr != nil {
			r.Checks = append(r.Checks, "tcp_cong_list walk: "+ptrErr.Error())
		}
		if symErr != nil {
			r.Checks = append(r.Checks, "kallsyms: "+symErr.Error())
		}
		sr.Ptr = jit.Addr(ptrs[l.member])
		name := "bpf__" + so.Ops + "_" + l.member
		for i, s := range syms {
			if s.name == name && !c.soSeen[s.addr] && c.ks.byAddr[s.addr] != name {
				c.soSeen[s.addr] = true
				sr.Ksym, sr.KsymAt = name, jit.Addr(s.addr)
				if i+1 < len(syms) {
					sr.KsymEnd = jit.Addr(syms[i+1].addr)
				}
				break
			}
		}
		switch {
		case sr.KsymAt != 0 && sr.Ptr != 0:
			r.Image, r.Locate = uint64(sr.KsymAt), "kallsyms "+name+" (new after the update)"
			if sr.Ptr == sr.KsymAt {
				r.Checks = append(r.Checks, "the registered table's pointer equals the ksym")
			} else {
				r.Checks = append(r.Checks, fmt.Sprintf("the registered table's pointer is ksym%+d", int64(sr.Ptr-sr.KsymAt)))
			}
		case sr.KsymAt != 0:
			r.Image, r.Locate = uint64(sr.KsymAt), "kallsyms "+name+" (new after the update)"
		case sr.Ptr != 0:
			// Without a ksym the pointer is the only way; Debian's builds have no CFI offset.
			r.Image, r.Locate = uint64(sr.Ptr), "the registered table's function pointer (tcp_cong_list, found by name)"
		default:
			r.Stage, r.Error = "locate", fmt.Sprintf("image not found: no new %s in kallsyms and no registered table pointer", name)
			t.members[l.member] = r
			continue
		}
		if err := c.readSOImage(&r); err != nil {
			r.Stage, r.Error = "read", err.Error()
			t.members[l.member] = r
			continue
		}
		if sr.KsymEnd != 0 && r.Image+uint64(len(r.Code)) > uint64(sr.KsymEnd) {
			r.Checks = append(r.Checks, fmt.Sprintf("code runs past the next [bpf] symbol at %#x", sr.KsymEnd))
		}
		slots = append(slots, wire.StructOpsSlot{Member: l.member, Index: l.index, Image: jit.Addr(r.Image), Ptr: sr.Ptr, Size: len(r.Code)})
		t.members[l.member] = r
	}
	pageSlots(slots)
	for _, s := range slots {
		r := t.members[s.Member]
		r.StructOps.Page = s.Page
		r.StructOps.Layout = slots
		t.members[s.Member] = r
	}
}

// pageSlots numbers the pages of a map's images: members are packed back to back in member
// order (bpf_struct_ops_prepare_trampoline), and the next image goes to a new page
// (arch_alloc_bpf_trampoline(PAGE_SIZE): a bpf_prog_pack chunk, not page-aligned) when it
// does not fit in what is left of this one. So a page starts at its first image, and an image
// 4096 bytes or more past that start, or before it, is in a new page.
func pageSlots(s []wire.StructOpsSlot) {
	var start jit.Addr
	for i := range s {
		switch {
		case i == 0:
			start = s[i].Image
		case s[i].Image < s[i-1].Image || s[i].Image >= start+4096:
			s[i].Page, start = s[i-1].Page+1, s[i].Image
		default:
			s[i].Page = s[i-1].Page
		}
	}
}

// readSOImage reads the image's code (to its end of code) and the bytes after it, and takes
// the program's struct bpf_prog * from the image.
func (c *capturer) readSOImage(r *wire.CaptureResult) error {
	toPage := int(4096 - r.Image%4096)
	raw, err := c.mem.read(r.Image, toPage+4096) // the next page may be unmapped
	if err != nil {
		if raw, err = c.mem.read(r.Image, toPage); err != nil {
			return fmt.Errorf("read image at %#x: %w", r.Image, err)
		}
	}
	n, err := soCodeEnd(c.arch, raw, r.Image, c.ks)
	if err != nil {
		r.Raw = raw[:min(len(raw), 256)]
		return fmt.Errorf("%w (bytes at %#x: % x)", err, r.Image, raw[:min(len(raw), 48)])
	}
	r.Code, r.Raw = raw[:n], raw[n:min(len(raw), n+64)]
	r.Symbols = c.symbols(r.Code, r.Image, r)
	for _, cl := range calls(c.arch, r.Code, r.Image) {
		if strings.HasPrefix(c.ks.byAddr[cl.target], "__bpf_prog_enter") && len(r.Progs) == 1 && r.Progs[0].Prog == 0 {
			r.Progs[0].Prog = cl.arg0
		}
	}
	if len(r.Progs) == 1 && r.Progs[0].Prog != 0 {
		if f, err := c.mem.u64(r.Progs[0].Prog + uint64(c.off.progBPFFunc)); err != nil {
			r.Checks = append(r.Checks, "bpf_prog.bpf_func: "+err.Error())
		} else if f == r.Progs[0].BPFFunc {
			r.Checks = append(r.Checks, "struct bpf_prog from the image; its bpf_func is the program's JITed entry")
		} else {
			r.Checks = append(r.Checks, fmt.Sprintf("bpf_prog.bpf_func %#x, prog info says %#x", f, r.Progs[0].BPFFunc))
		}
	}
	return nil
}

// soCodeEnd is the length of a struct_ops image's code. Images are packed back to back, so no
// fill marks the end: x86_64 ends at the ret (with the int3 the kernel puts after a plain ret
// for SLS) or at the jmp to the return thunk; arm64 at its ret; riscv64 at jr ra.
func soCodeEnd(arch string, b []byte, base uint64, ks *kallsyms) (int, error) {
	switch arch {
	case "amd64":
		thunk := ks.byName["__x86_return_thunk"]
		for i := 0; i < len(b); {
			if bytes.HasPrefix(b[i:], endbr64) {
				i += 4
				continue
			}
			in, err := x86asm.Decode(b[i:], 64)
			if err != nil {
				return 0, fmt.Errorf("decode image at +%#x: %w", i, err)
			}
			end := i + in.Len
			if in.Op == x86asm.RET {
				if end < len(b) && b[end] == 0xcc {
					end++
				}
				return end, nil
			}
			if rel, ok := in.Args[0].(x86asm.Rel); ok && in.Op == x86asm.JMP && thunk != 0 && base+uint64(end)+uint64(int64(rel)) == thunk {
				return end, nil
			}
			i = end
		}
		return 0, fmt.Errorf("no ret in the first %d bytes of the image", len(b))
	case "arm64":
		for i := 0; i+4 <= len(b); i += 4 {
			if binary.LittleEndian.Uint32(b[i:])&0xfffffc1f == 0xd65f0000 { // ret xN
				return i + 4, nil
			}
		}
		return 0, fmt.Errorf("no ret in the first %d bytes of the image", len(b))
	}
	return codeEnd(arch, b, base, ks)
}

// tcpCongPointers walks tcp_cong_list (net/ipv4/tcp_cong.c: registered tcp_congestion_ops
// linked by .list) for the table named name, and returns its function pointers by member.
func (c *capturer) tcpCongPointers(st *btf.Struct, name string) (map[string]uint64, error) {
	listOff, _, ok1 := findMember(st, "list")
	nameOff, _, ok2 := findMember(st, "name")
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("BTF: tcp_congestion_ops has no list or name")
	}
	head, ok := c.ks.byName["tcp_cong_list"]
	if !ok && c.arch == "arm64" {
		// Without KALLSYMS_ALL (arm64 6.1) data has no symbols: take the list head from the
		// adrp/add pairs of a function that walks it.
		head, ok = c.arm64ListHead("tcp_get_available_congestion_control", uint64(listOff), uint64(nameOff))
	}
	if !ok {
		return nil, fmt.Errorf("tcp_cong_list is not in /proc/kallsyms")
	}
	p, err := c.mem.u64(head)
	for n := 0; err == nil && p != head && n < 256; n++ {
		ops := p - uint64(listOff)
		nb, err := c.mem.read(ops+uint64(nameOff), 16)
		if err != nil {
			return nil, err
		}
		if unix.ByteSliceToString(nb) == name {
			out := map[string]uint64{}
			for _, m := range st.Members {
				if isFuncPtr(m.Type) {
					v, err := c.mem.u64(ops + uint64(m.Offset.Bytes()))
					if err != nil {
						return nil, err
					}
					if v != 0 {
						out[m.Name] = v
					}
				}
			}
			return out, nil
		}
		p, err = c.mem.u64(p)
	}
	if err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("no tcp_congestion_ops named %q in tcp_cong_list", name)
}

// arm64ListHead decodes the adrp + add (or ldr) pairs in the first instructions of fn and
// returns the first address that is a list of tcp_congestion_ops: its next pointers come back
// to it, and each entry's name is printable.
func (c *capturer) arm64ListHead(fn string, listOff, nameOff uint64) (uint64, bool) {
	a, ok := c.ks.byName[fn]
	if !ok {
		return 0, false
	}
	code, err := c.mem.read(a, 512)
	if err != nil {
		return 0, false
	}
	var page [32]uint64
	for i := 0; i+4 <= len(code); i += 4 {
		w := binary.LittleEndian.Uint32(code[i:])
		rd, rn := w&31, (w>>5)&31
		var cand uint64
		switch {
		case w&0x9f000000 == 0x90000000: // adrp
			imm := uint64(int64(int32(((w>>5)&0x7ffff)<<2|(w>>29)&3)<<11) >> 11)
			page[rd] = (a+uint64(i))&^0xfff + imm<<12
			continue
		case w&0xffc00000 == 0x91000000 && page[rn] != 0: // add xd, xn, #lo12
			cand = page[rn] + uint64((w>>10)&0xfff)
		case w&0xffc00000 == 0xf9400000 && page[rn] != 0: // ldr xt, [xn, #lo12]
			cand = page[rn] + 8*uint64((w>>10)&0xfff)
		default:
			continue
		}
		if c.isCongList(cand, listOff, nameOff) {
			return cand, true
		}
	}
	return 0, false
}

func (c *capturer) isCongList(head, listOff, nameOff uint64) bool {
	p, err := c.mem.u64(head)
	for n := 0; err == nil && n < 64; n++ {
		if p == head {
			return n > 0
		}
		nb, rerr := c.mem.read(p-listOff+nameOff, 16)
		name := unix.ByteSliceToString(nb)
		if rerr != nil || name == "" || strings.IndexFunc(name, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
			return false
		}
		p, err = c.mem.u64(p)
	}
	return false
}

type ksym struct {
	addr uint64
	name string
}

// bpfKsyms reads /proc/kallsyms again for its [bpf] symbols, sorted by address.
var bpfKsyms = func() ([]ksym, error) {
	b, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		return nil, err
	}
	var out []ksym
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasSuffix(l, "[bpf]") {
			continue
		}
		fs := strings.Fields(l)
		var a uint64
		if len(fs) >= 3 {
			fmt.Sscanf(fs[0], "%x", &a)
		}
		if a != 0 {
			out = append(out, ksym{a, fs[2]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out, nil
}

func isFuncPtr(t btf.Type) bool {
	p, ok := btf.UnderlyingType(t).(*btf.Pointer)
	if !ok {
		return false
	}
	_, ok = btf.UnderlyingType(p.Target).(*btf.FuncProto)
	return ok
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// soInsns is a member's program: r0 = 0; exit. A member whose first argument is a
// referenced pointer the program must release (Qdisc_ops.enqueue's skb) calls the releasing
// kfunc with the first and the last argument (bpf_qdisc_skb_drop(skb, to_free)) and returns
// 1 (NET_XMIT_DROP).
func soInsns(spec *btf.Spec, m btf.Member, release string) (asm.Instructions, error) {
	if release == "" {
		return asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}, nil
	}
	f, err := funcByName(spec, release)
	if err != nil {
		return nil, fmt.Errorf("kfunc %s: %w", release, err)
	}
	id, err := spec.TypeID(f)
	if err != nil {
		return nil, err
	}
	p := btf.UnderlyingType(m.Type).(*btf.Pointer)
	last := len(btf.UnderlyingType(p.Target).(*btf.FuncProto).Params) - 1
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R1, asm.R6, 0, asm.DWord),
		asm.LoadMem(asm.R2, asm.R6, int16(8*last), asm.DWord),
		{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call), Src: asm.PseudoKfuncCall, Constant: int64(id)},
		asm.Mov.Imm(asm.R0, 1),
		asm.Return(),
	}, nil
}

// loadStructOps loads a BPF_PROG_TYPE_STRUCT_OPS program for member index idx of the ops
// struct opsID (attach_btf_id; expected_attach_type is the member's index), returning the
// verifier log of a refusal.
func loadStructOps(insns asm.Instructions, opsID uint32, idx int, sleepable bool, member string) (*ebpf.Program, string, error) {
	var code bytes.Buffer
	if err := insns.Marshal(&code, binary.LittleEndian); err != nil {
		return nil, "", err
	}
	license := []byte("GPL\x00")
	attr := progLoadAttr{
		ProgType: unix.BPF_PROG_TYPE_STRUCT_OPS, InsnCnt: uint32(code.Len() / asm.InstructionSize),
		Insns: uint64(uintptr(unsafe.Pointer(&code.Bytes()[0]))), License: uint64(uintptr(unsafe.Pointer(&license[0]))),
		ExpectedAttachType: uint32(idx), AttachBTFID: opsID, ProgName: objName("tj_" + member),
	}
	if sleepable {
		attr.ProgFlags |= bpfFSleepable
	}
	var buf []byte
	l, err := loadWithLog(&attr, 1, defaultLogLimit, &buf, code.Bytes(), license)
	runtime.KeepAlive(code.Bytes())
	if err != nil {
		log := strings.TrimSpace(string(bytes.TrimRight(l.log, "\x00")))
		if i := bytes.IndexByte(l.log, 0); i >= 0 {
			log = strings.TrimSpace(string(l.log[:i]))
		}
		return nil, log, &loadError{errno: err, log: log}
	}
	p, err := ebpf.NewProgramFromFD(l.fd)
	return p, "", err
}

// mapElem is BPF_MAP_UPDATE_ELEM (key 0, value) or BPF_MAP_DELETE_ELEM (key 0).
func mapElem(cmd int, fd int, value []byte) error {
	key := uint32(0)
	e := mapElemAttr{MapFD: uint32(fd), Key: uint64(uintptr(unsafe.Pointer(&key)))}
	if value != nil {
		e.Value = uint64(uintptr(unsafe.Pointer(&value[0])))
	}
	_, _, errno := unix.Syscall(unix.SYS_BPF, uintptr(cmd), uintptr(unsafe.Pointer(&e)), unsafe.Sizeof(e))
	runtime.KeepAlive(&key)
	runtime.KeepAlive(value)
	if errno != 0 {
		return kernelErrno{errno}
	}
	return nil
}
