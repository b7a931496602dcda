package btfmodel

import (
	"fmt"

	"github.com/cilium/ebpf/btf"
)

// tagged parses "struct|union|enum [name] [{ ... }]" and returns the type, laying out
// definitions as the SysV ABI does on both x86_64 and arm64 (natural alignment).
func (p *parser) tagged() (btf.Type, error) {
	kw := p.next()
	nameTok := p.peek()
	name := ""
	if nameTok.kind == tIdent {
		name = p.next().text
	}
	key := kw.text + " " + name
	if !(p.peek().kind == tPunct && p.peek().text == "{") {
		if name == "" {
			return nil, p.errAt(nameTok, "expected a name or '{' after '%s'", kw.text)
		}
		if t, ok := p.sc.structs[key]; ok {
			return t, nil
		}
		// An opaque reference: fine behind a pointer, an error by value (see complete).
		var t btf.Type
		switch kw.text {
		case "union":
			t = &btf.Fwd{Name: name, Kind: btf.FwdUnion}
		case "enum":
			t = &btf.Enum{Name: name, Size: 4} // the kernel's enums are int-sized
		default:
			t = &btf.Fwd{Name: name, Kind: btf.FwdStruct}
		}
		p.sc.structs[key] = t
		return t, nil
	}
	open := p.next()
	if name != "" {
		if t, ok := p.sc.structs[key]; ok {
			if _, fwd := t.(*btf.Fwd); !fwd {
				return nil, p.errAt(nameTok, "redefinition of '%s'", key)
			}
		}
	}
	var t btf.Type
	var err error
	if kw.text == "enum" {
		t, err = p.enumBody(name)
	} else {
		t, err = p.recordBody(kw.text == "union", name, open)
	}
	if err != nil {
		return nil, err
	}
	if name != "" {
		p.sc.structs[key] = t
	}
	return t, nil
}

func (p *parser) enumBody(name string) (btf.Type, error) {
	e := &btf.Enum{Name: name, Size: 4}
	next := int64(0)
	for !p.accept("}") {
		id := p.peek()
		if id.kind != tIdent {
			return nil, p.errAt(id, "expected an enumerator name, found %s", id)
		}
		p.next()
		if p.accept("=") {
			neg := p.accept("-")
			n := p.peek()
			if n.kind != tNum {
				return nil, p.errAt(n, "expected a number, found %s", n)
			}
			p.next()
			next = n.num
			if neg {
				next = -next
			}
		}
		if next < 0 {
			e.Signed = true
		}
		if next > 0xffffffff || next < -0x80000000 {
			e.Size = 8
		}
		e.Values = append(e.Values, btf.EnumValue{Name: id.text, Value: uint64(next)})
		next++
		if !p.accept(",") {
			if err := p.expect("}"); err != nil {
				return nil, err
			}
			break
		}
	}
	return e, nil
}

// recordBody parses the members of a struct or union after '{' and lays them out.
func (p *parser) recordBody(isUnion bool, name string, open token) (btf.Type, error) {
	var members []btf.Member
	var bitOff, maxSize, align uint64 = 0, 0, 1
	seen := map[string]bool{}
	for !p.accept("}") {
		if p.peek().kind == tEOF {
			return nil, p.errAt(open, "unterminated definition")
		}
		base, err := p.specifiers()
		if err != nil {
			return nil, err
		}
		for {
			nameTok := p.peek()
			mname, mtype, err := p.declarator(base)
			if err != nil {
				return nil, err
			}
			if _, fn := mtype.(*btf.FuncProto); fn {
				return nil, p.errAt(nameTok, "member '%s' declared as a function", mname)
			}
			size, malign, err := sizeAlign(mtype)
			if err != nil {
				return nil, p.errAt(nameTok, "member '%s': %v", mname, err)
			}
			if mname != "" && seen[mname] {
				return nil, p.errAt(nameTok, "duplicate member '%s'", mname)
			}
			seen[mname] = true
			m := btf.Member{Name: mname, Type: mtype}
			if p.accept(":") {
				w := p.peek()
				if w.kind != tNum {
					return nil, p.errAt(w, "expected a bit-field width, found %s", w)
				}
				p.next()
				if !isIntegral(mtype) || w.num <= 0 || uint64(w.num) > size*8 {
					return nil, p.errAt(w, "invalid bit-field width %d for '%s'", w.num, mname)
				}
				unit := size * 8
				if isUnion {
					bitOff = 0
				} else if bitOff%unit+uint64(w.num) > unit {
					bitOff = roundUp(bitOff, unit)
				}
				m.Offset, m.BitfieldSize = btf.Bits(bitOff), btf.Bits(w.num)
				if !isUnion {
					bitOff += uint64(w.num)
				} else {
					maxSize = max(maxSize, size)
				}
			} else {
				if isUnion {
					maxSize = max(maxSize, size)
				} else {
					bitOff = roundUp(bitOff, malign*8)
					m.Offset = btf.Bits(bitOff)
					bitOff += size * 8
				}
			}
			align = max(align, malign)
			members = append(members, m)
			if !p.accept(",") {
				break
			}
		}
		if err := p.expect(";"); err != nil {
			return nil, err
		}
	}
	if isUnion {
		return &btf.Union{Name: name, Size: uint32(roundUp(maxSize, align)), Members: members}, nil
	}
	size := roundUp(roundUp(bitOff, 8)/8, align)
	return &btf.Struct{Name: name, Size: uint32(size), Members: members}, nil
}

func roundUp(x, to uint64) uint64 { return (x + to - 1) / to * to }

func isIntegral(t btf.Type) bool {
	switch SkipModifiers(t).(type) {
	case *btf.Int, *btf.Enum:
		return true
	}
	return false
}

// sizeAlign gives a complete type's size and alignment; incomplete types are an error.
func sizeAlign(t btf.Type) (uint64, uint64, error) {
	switch x := SkipModifiers(t).(type) {
	case *btf.Int:
		return uint64(x.Size), uint64(x.Size), nil
	case *btf.Enum:
		return uint64(x.Size), uint64(x.Size), nil
	case *btf.Float:
		return uint64(x.Size), uint64(x.Size), nil
	case *btf.Pointer:
		return 8, 8, nil
	case *btf.Array:
		s, a, err := sizeAlign(x.Type)
		return s * uint64(x.Nelems), a, err
	case *btf.Struct:
		return uint64(x.Size), recordAlign(x.Members), nil
	case *btf.Union:
		return uint64(x.Size), recordAlign(x.Members), nil
	case *btf.Fwd:
		return 0, 0, fmt.Errorf("incomplete type '%s'", CName(x))
	case *btf.Void:
		return 0, 0, fmt.Errorf("incomplete type 'void'")
	}
	return 0, 0, fmt.Errorf("type %s has no size", CName(t))
}

func recordAlign(ms []btf.Member) uint64 {
	a := uint64(1)
	for _, m := range ms {
		if _, ma, err := sizeAlign(m.Type); err == nil {
			a = max(a, ma)
		}
	}
	return a
}
