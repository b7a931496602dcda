package verifier

import (
	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
)

// skipMods and kindStr are btfmodel's (btf_type_skip_modifiers, btf_type_str).
func skipMods(t btf.Type) btf.Type { return btfmodel.SkipModifiers(t) }

func kindStr(t btf.Type) string { return btfmodel.KindName(t) }

// btfName is the type's name, "(anon)" when it has none (__btf_name_by_offset).
func btfName(t btf.Type) string {
	if t == nil {
		return "(anon)"
	}
	if n := t.TypeName(); n != "" {
		return n
	}
	return "(anon)"
}

func isStructOrUnion(t btf.Type) bool {
	switch t.(type) {
	case *btf.Struct, *btf.Union:
		return true
	}
	return false
}

func members(t btf.Type) []btf.Member {
	switch t := t.(type) {
	case *btf.Struct:
		return t.Members
	case *btf.Union:
		return t.Members
	}
	return nil
}

func typeSize(t btf.Type) int {
	n, err := btf.Sizeof(t)
	if err != nil {
		return 0
	}
	return n
}

// ctxSlotSize is the 8-byte-rounded size a parameter takes in the ctx (pointers 8).
func ctxSlotSize(t btf.Type) int {
	t = skipMods(t)
	if _, ok := t.(*btf.Pointer); ok {
		return 8
	}
	return (typeSize(t) + 7) / 8 * 8
}

// typeTag returns the type_tag value directly under a pointer, if any.
func typeTag(t btf.Type) string {
	if tt, ok := t.(*btf.TypeTag); ok {
		return tt.Value
	}
	return ""
}
