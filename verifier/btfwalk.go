package verifier

import (
	"fmt"

	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// PTR_TO_BTF_ID dereferences: check_ptr_to_btf_access (kernel/bpf/verifier.c),
// btf_struct_access and btf_struct_walk (kernel/bpf/btf.c).

type walkRes int

const (
	walkScalar walkRes = iota
	walkPtr
	walkStruct
	walkMem // a pointer to a non-struct, on profiles that load it as untrusted memory
)

// Fields whose pointer keeps (or gains) trust when read from a trusted or RCU base
// (BTF_TYPE_SAFE_TRUSTED / _OR_NULL / BTF_TYPE_SAFE_RCU / _OR_NULL, 6.12), by "struct.field".
var (
	safeTrusted       = map[string]bool{"linux_binprm.file": true, "file.f_inode": true, "bpf_iter_meta.seq": true, "bpf_iter__task.meta": true, "bpf_iter__task.task": true, "dentry.d_inode": true}
	safeTrustedOrNull = map[string]bool{"socket.sk": true, "vm_area_struct.vm_mm": true, "vm_area_struct.vm_file": true}
	safeRCU           = map[string]bool{"task_struct.cpus_ptr": true, "task_struct.cgroups": true, "task_struct.real_parent": true, "task_struct.group_leader": true, "cgroup.kn": true, "css_set.dfl_cgrp": true, "cgroup_subsys_state.cgroup": true}
	safeRCUOrNull     = map[string]bool{"mm_struct.exe_file": true, "mm_struct.owner": true, "sk_buff.sk": true, "request_sock.sk": true}
)

func (c *checker) btfAccess(regno uint8, r *reg, off, size int, write bool, value int) error {
	k := c.env.Kernel
	tname := btfName(r.btfType)
	if k.Has(btfmodel.CapVerifierBTFNeedsGPL) && !gplCompatible(c.prog.License) {
		c.logf("Cannot access kernel 'struct %s' from non-GPL compatible program", tname)
		return reject("EINVAL")
	}
	if off < 0 {
		c.logf("R%d is ptr_%s invalid negative access: off=%d", regno, tname, off)
		return reject("EACCES")
	}
	if !r.v.isConst() || r.v.val() != 0 {
		vt, voff := c.varOffMsg(r, off)
		c.logf("R%d is ptr_%s invalid variable offset: off=%d, var_off=%s", regno, tname, voff, vt)
		return reject("EACCES")
	}
	if r.flags&flagUser != 0 {
		c.logf("R%d is ptr_%s access user memory: off=%d", regno, tname, off)
		return reject("EACCES")
	}
	if r.flags&flagPercpu != 0 {
		c.logf("R%d is ptr_%s access percpu memory: off=%d", regno, tname, off)
		return reject("EACCES")
	}
	if write && c.so != nil {
		return c.structOpsWrite(regno, r, off, size)
	}
	if write {
		c.logf("only read is supported")
		return reject("EACCES")
	}
	// btf_struct_access: walk, diving into nested structs at offset 0.
	t := r.btfType
	var flags typeFlag
	path, field, parent := "", "", ""
	var next btf.Type
	mem := false
	for {
		res, nt, p, err := c.structWalk(t, off, size, &flags)
		if err != nil {
			return err
		}
		if path != "" && p != "" {
			path += "."
		}
		path += p
		if res == walkStruct {
			t, off = nt, 0
			continue
		}
		if res == walkMem {
			mem = true
			break
		}
		if res == walkPtr {
			// BTF_TYPE_SAFE_* lists are keyed by the base register's struct and the
			// pointer member's name (type_is_trusted and friends).
			next = nt
			parent = tname
			field = lastField(p)
		}
		break
	}
	base := r.path
	if base == "" {
		base = fmt.Sprintf("((struct %s *)r%d)", tname, regno)
	}
	expr := base + "->" + path
	sz := sizeNames[size]
	if value < 0 {
		return nil
	}
	if mem {
		c.setReg(uint8(value), reg{typ: ptrToMem, flags: flagRdonly | flagUntrusted, v: constScalar(0)})
		c.explain(fmt.Sprintf("r%d = *(%s *)(r%d %+d) -> %s (PTR_TO_MEM rdonly, untrusted)", value, sz, regno, c.insns[c.idx].off, expr))
		return nil
	}
	if next == nil {
		c.setReg(uint8(value), mkScalar(unknownScalar()))
		c.explain(fmt.Sprintf("r%d = *(%s *)(r%d %+d) -> %s", value, sz, regno, c.insns[c.idx].off, expr))
		return nil
	}
	flags = c.loadedPtrFlags(r, flags, parent+"."+field)
	nr := reg{typ: ptrToBTFID, flags: flags, btfType: skipMods(next), v: constScalar(0), path: expr}
	if flags&flagMaybeNull != 0 {
		nr.id = c.newID()
	}
	c.setReg(uint8(value), nr)
	kind := "PTR_TO_BTF_ID " + btfName(nr.btfType)
	if f := flagWords(flags); f != "" {
		kind += " " + f
	}
	c.explain(fmt.Sprintf("r%d = *(%s *)(r%d %+d) -> %s (%s)", value, sz, regno, c.insns[c.idx].off, expr, kind))
	return nil
}

func lastField(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '.' {
			return p[i+1:]
		}
	}
	return p
}

// loadedPtrFlags is the flag logic after btf_struct_access in check_ptr_to_btf_access.
func (c *checker) loadedPtrFlags(base *reg, flags typeFlag, field string) typeFlag {
	if !c.has(btfmodel.CapVerifierRCUPtr) {
		flags &^= flagRCU
		if base.flags&flagUntrusted != 0 {
			flags |= flagUntrusted
		}
		return flags
	}
	switch {
	case base.flags&flagUntrusted != 0:
		return flagUntrusted
	case base.isTrusted() || base.flags&flagRCU != 0:
		switch {
		case safeTrusted[field]:
			return flags | flagTrusted
		case safeTrustedOrNull[field]:
			return flags | flagTrusted | flagMaybeNull
		case c.inRCUCS() && base.flags&flagMaybeNull == 0: // in_rcu_cs (kfunc.go)
			switch {
			case safeRCU[field]:
				return flags&^flagRCU | flagRCU
			case flags&flagRCU != 0 || safeRCUOrNull[field]:
				f := flags | flagRCU | flagMaybeNull
				if safeRCUOrNull[field] {
					f &^= flagUntrusted
				}
				return f
			case flags&(flagUser|flagPercpu) != 0:
				return flags
			}
			return flags &^ (flagTrusted | flagRCU)
		}
		return flagUntrusted
	}
	return flags &^ (flagTrusted | flagRCU)
}

// resolveSize is __btf_resolve_size: arrays flattened to element x count.
func resolveSize(t btf.Type) (mtype btf.Type, size int, elem btf.Type, nelems int, ok bool) {
	nelems = 1
	var arr btf.Type
	for i := 0; i < 32; i++ {
		switch tt := t.(type) {
		case *btf.Int, *btf.Struct, *btf.Union, *btf.Enum, *btf.Float:
			size = typeSize(tt)
		case *btf.Pointer:
			size = 8
		case *btf.Typedef, *btf.Volatile, *btf.Const, *btf.Restrict, *btf.TypeTag:
			t = skipOne(tt)
			continue
		case *btf.Array:
			if arr == nil {
				arr = tt
			}
			nelems *= int(tt.Nelems)
			t = tt.Type
			continue
		default:
			return nil, 0, nil, 0, false
		}
		if arr != nil {
			return arr, size * nelems, t, nelems, true
		}
		return t, size, t, nelems, true
	}
	return nil, 0, nil, 0, false
}

func skipOne(t btf.Type) btf.Type {
	switch m := t.(type) {
	case *btf.Typedef:
		return m.Type
	case *btf.Volatile:
		return m.Type
	case *btf.Const:
		return m.Type
	case *btf.Restrict:
		return m.Type
	case *btf.TypeTag:
		return m.Type
	}
	return t
}

// structWalk is btf_struct_walk over one struct level; the path names the members crossed.
func (c *checker) structWalk(t btf.Type, off, size int, flags *typeFlag) (walkRes, btf.Type, string, error) {
	k := c.env.Kernel
	path := ""
again:
	t = skipMods(t)
	tname := btfName(t)
	if !isStructOrUnion(t) {
		c.logf("Type '%s' is not a struct", tname)
		return 0, nil, "", reject("EINVAL")
	}
	ms := members(t)
	if u, ok := t.(*btf.Union); ok && k.Has(btfmodel.CapVerifierUnionUntrusted) && len(u.Members) != 1 {
		*flags |= flagUntrusted
	}
	if off+size > typeSize(t) {
		beyond := func() (walkRes, btf.Type, string, error) {
			c.logf("access beyond struct %s at off %d size %d", tname, uint32(off), size)
			return 0, nil, "", reject("EACCES")
		}
		if len(ms) == 0 {
			return beyond()
		}
		last := ms[len(ms)-1]
		arr, ok := skipMods(last.Type).(*btf.Array)
		if !ok || arr.Nelems != 0 {
			return beyond()
		}
		moff := int(last.Offset / 8)
		if off < moff {
			return beyond()
		}
		et := skipMods(arr.Type)
		if _, isInt := et.(*btf.Int); isInt && k.Has(btfmodel.CapVerifierIntArrayScalar) {
			return walkScalar, nil, path + sep(path) + last.Name + "[]", nil
		}
		if !isStructOrUnion(et) || typeSize(et) == 0 {
			return beyond()
		}
		path += sep(path) + fmt.Sprintf("%s[%d]", last.Name, (off-moff)/typeSize(et))
		off = (off - moff) % typeSize(et)
		t = et
		goto again
	}
	for _, m := range ms {
		moff := int(m.Offset / 8)
		if off+size <= moff {
			break
		}
		if m.BitfieldSize != 0 {
			endBit := int(m.Offset) + int(m.BitfieldSize)
			if off <= moff && (endBit+7)/8 <= off+size {
				return walkScalar, nil, path + sep(path) + m.Name, nil
			}
			continue
		}
		if off < moff {
			break
		}
		mtype, msize, elem, nelems, ok := resolveSize(m.Type)
		if !ok {
			c.logf("field %s doesn't have size", m.Name)
			return 0, nil, "", reject("EFAULT")
		}
		mtrueEnd := moff + msize
		if off >= mtrueEnd {
			continue
		}
		name := m.Name
		if _, isArr := mtype.(*btf.Array); isArr {
			if moff == mtrueEnd {
				continue
			}
			msize /= nelems
			idx := (off - moff) / msize
			moff += idx * msize
			mtype = elem
			name = fmt.Sprintf("%s[%d]", m.Name, idx)
		}
		if isStructOrUnion(mtype) {
			path += sep(path) + name
			if off == moff {
				return walkStruct, mtype, path, nil
			}
			off -= moff
			t = mtype
			goto again
		}
		if p, isPtr := mtype.(*btf.Pointer); isPtr {
			if msize != size || off != moff {
				c.logf("cannot access ptr member %s with moff %d in struct %s with off %d size %d", m.Name, moff, tname, off, size)
				return 0, nil, "", reject("EACCES")
			}
			var tag typeFlag
			switch typeTag(p.Target) {
			case "user":
				tag = flagUser
			case "percpu":
				tag = flagPercpu
			case "rcu":
				if k.Has(btfmodel.CapVerifierRCUPtr) {
					tag = flagRCU
				}
			}
			if st := skipMods(p.Target); isStructOrUnion(st) {
				*flags |= tag
				return walkPtr, st, path + sep(path) + name, nil
			}
			if k.Has(btfmodel.CapVerifierNonStructPtrMem) {
				return walkMem, nil, path + sep(path) + name, nil
			}
		}
		if off+size > mtrueEnd && *flags&flagUntrusted == 0 {
			c.logf("access beyond the end of member %s (mend:%d) in struct %s with off %d size %d", m.Name, mtrueEnd, tname, off, size)
			return 0, nil, "", reject("EACCES")
		}
		return walkScalar, nil, path + sep(path) + name, nil
	}
	c.logf("struct %s doesn't have field at offset %d", tname, off)
	return 0, nil, "", reject("EINVAL")
}

func sep(path string) string {
	if path == "" {
		return ""
	}
	return "."
}
