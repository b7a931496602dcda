package btfmodel

import (
	"bytes"
	"debug/elf"
	"errors"
)

// TypedKsyms prepares an object with typed __ksym variables (extern const struct rq
// runqueues __ksym;) for cilium/ebpf, which reads only typeless ones (btf.go fixupDatasec:
// a .ksyms VAR must be of type void): it returns a copy of the ELF whose .ksyms VARs are
// retyped void, and the names of those that were typed. libbpf loads a typed one as
// BPF_PSEUDO_BTF_ID with the kernel VAR's id, a typeless one as its address; the callers do
// the same with the names. An object without typed ksyms comes back as it is.
func TypedKsyms(data []byte) ([]byte, map[string]bool, error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return data, nil, nil // not an ELF: the loader reports it
	}
	sec := f.Section(".BTF")
	if sec == nil || sec.Type == elf.SHT_NOBITS || sec.Offset+sec.Size > uint64(len(data)) {
		return data, nil, nil
	}
	raw := data[sec.Offset : sec.Offset+sec.Size]
	bo := f.ByteOrder
	if len(raw) < 24 || bo.Uint16(raw) != 0xeb9f {
		return data, nil, nil
	}
	hdrLen := uint64(bo.Uint32(raw[4:]))
	typeOff, typeLen := uint64(bo.Uint32(raw[8:])), uint64(bo.Uint32(raw[12:]))
	strOff, strLen := uint64(bo.Uint32(raw[16:])), uint64(bo.Uint32(raw[20:]))
	ts, ss := hdrLen+typeOff, hdrLen+strOff
	if ts+typeLen > uint64(len(raw)) || ss+strLen > uint64(len(raw)) {
		return data, nil, errors.New(".BTF: header points outside the section")
	}
	str := func(off uint32) string {
		b := raw[ss:min(ss+strLen, uint64(len(raw)))]
		if uint64(off) >= uint64(len(b)) {
			return ""
		}
		b = b[off:]
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		return string(b)
	}
	// Walk the type records (include/uapi/linux/btf.h): id -> offset in raw.
	offs := []uint64{0} // id 0 is void
	for p := ts; p < ts+typeLen; {
		if p+12 > ts+typeLen {
			return data, nil, errors.New(".BTF: truncated type")
		}
		info := bo.Uint32(raw[p+4:])
		kind, vlen := (info>>24)&0x1f, uint64(info&0xffff)
		offs = append(offs, p)
		p += 12
		switch kind {
		case 1, 14, 17: // INT, VAR, DECL_TAG
			p += 4
		case 3: // ARRAY
			p += 12
		case 4, 5, 15, 19: // STRUCT, UNION, DATASEC, ENUM64
			p += 12 * vlen
		case 6, 13: // ENUM, FUNC_PROTO
			p += 8 * vlen
		}
	}
	typed := map[string]bool{}
	var patch []uint64
	for _, o := range offs[1:] {
		info := bo.Uint32(raw[o+4:])
		if (info>>24)&0x1f != 15 || str(bo.Uint32(raw[o:])) != ".ksyms" {
			continue
		}
		for i := uint64(0); i < uint64(info&0xffff); i++ {
			if o+12+12*(i+1) > ts+typeLen {
				return data, nil, errors.New(".BTF: truncated DATASEC")
			}
			id := uint64(bo.Uint32(raw[o+12+12*i:]))
			if id == 0 || id >= uint64(len(offs)) {
				continue
			}
			v := offs[id]
			if (bo.Uint32(raw[v+4:])>>24)&0x1f != 14 || bo.Uint32(raw[v+8:]) == 0 {
				continue // kfuncs (FUNC) and typeless variables
			}
			typed[str(bo.Uint32(raw[v:]))] = true
			patch = append(patch, sec.Offset+v+8)
		}
	}
	if len(patch) == 0 {
		return data, nil, nil
	}
	out := bytes.Clone(data)
	for _, at := range patch {
		bo.PutUint32(out[at:], 0)
	}
	return out, typed, nil
}
