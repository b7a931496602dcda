package verifier

import (
	"github.com/cilium/ebpf/btf"
)

// skipMods follows typedef/const/volatile/restrict/type_tag (btf_type_skip_modifiers).
func skipMods(t btf.Type) btf.Type {
	for i := 0; i < 64; i++ {
		switch m := t.(type) {
		case *btf.Typedef:
			t = m.Type
		case *btf.Const:
			t = m.Type
		case *btf.Volatile:
			t = m.Type
		case *btf.Restrict:
			t = m.Type
		case *btf.TypeTag:
			t = m.Type
		default:
			return t
		}
	}
	return t
}

// kindStr is btf_type_str.
func kindStr(t btf.Type) string {
	switch t := t.(type) {
	case nil, *btf.Void:
		return "UNKNOWN"
	case *btf.Int:
		return "INT"
	case *btf.Pointer:
		return "PTR"
	case *btf.Array:
		return "ARRAY"
	case *btf.Struct:
		return "STRUCT"
	case *btf.Union:
		return "UNION"
	case *btf.Enum:
		if t.Size == 8 {
			return "ENUM64"
		}
		return "ENUM"
	case *btf.Fwd:
		return "FWD"
	case *btf.Typedef:
		return "TYPEDEF"
	case *btf.Volatile:
		return "VOLATILE"
	case *btf.Const:
		return "CONST"
	case *btf.Restrict:
		return "RESTRICT"
	case *btf.Func:
		return "FUNC"
	case *btf.FuncProto:
		return "FUNC_PROTO"
	case *btf.Var:
		return "VAR"
	case *btf.Datasec:
		return "DATASEC"
	case *btf.Float:
		return "FLOAT"
	case *btf.TypeTag:
		return "TYPE_TAG"
	}
	return "UNKNOWN"
}

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
