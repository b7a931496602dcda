package btfmodel

import (
	"fmt"

	"github.com/cilium/ebpf/btf"
)

// DistillError is a rejection by btf_distill_func_proto. Msg is the kernel's verifier log line
// (without the newline); the load fails with EINVAL.
type DistillError struct {
	Func string
	Msg  string
}

func (e *DistillError) Error() string { return e.Msg }

// Distill computes the kernel's function model for fn under profile k, as
// btf_distill_func_proto (kernel/bpf/btf.c) does, rejecting what it rejects with its words.
func Distill(fn *btf.Func, k Kernel) (*FuncModel, error) {
	proto, ok := fn.Type.(*btf.FuncProto)
	if !ok {
		// bpf_check_attach_target rejects this before distilling, without a message.
		return nil, &DistillError{Func: fn.Name, Msg: fmt.Sprintf("%s is not a function prototype", fn.Name)}
	}
	return DistillProto(fn.Name, proto, k)
}

// DistillProto is Distill for a bare prototype and a name.
func DistillProto(name string, proto *btf.FuncProto, k Kernel) (*FuncModel, error) {
	fail := func(format string, args ...any) error {
		return &DistillError{Func: name, Msg: fmt.Sprintf(format, args...)}
	}
	nargs := len(proto.Params)
	if nargs > MaxFuncArgs {
		return nil, fail("The function %s has %d arguments. Too many.", name, nargs)
	}
	m := &FuncModel{Name: name}
	size, t, err := typeSize(proto.Return)
	if err != nil || isStructOrUnion(t) {
		return nil, fail("The function %s return type %s is unsupported.", name, KindName(t))
	}
	m.RetSize = size
	if size > 0 {
		m.RetType = proto.Return
		m.RetFlags = fmodelFlags(t, k)
	}
	m.RetTypeName = CName(proto.Return)
	for i, p := range proto.Params {
		if _, void := p.Type.(*btf.Void); void && i == nargs-1 {
			return nil, fail("The function %s with variable args is unsupported.", name)
		}
		size, t, err := typeSize(p.Type)
		if u, ok := t.(*btf.Union); ok && k.Has(CapUnionArgs) {
			// Unions are passed like structs of their size (CapUnionArgs).
			size, err = int(u.Size), nil
		}
		// Structs over 16 bytes: "No support of struct argument size greater than 16 bytes".
		if err != nil || size > MaxStructArgSize {
			return nil, fail("The function %s arg%d type %s is unsupported.", name, i, KindName(t))
		}
		if size == 0 {
			return nil, fail("The function %s has malformed void argument.", name)
		}
		m.Args = append(m.Args, Arg{
			Name:     p.Name,
			Type:     p.Type,
			TypeName: CName(p.Type),
			Size:     size,
			Flags:    fmodelFlags(t, k),
		})
	}
	return m, nil
}

// typeSize is __get_type_size: modifiers and typedefs are skipped; void is 0, a pointer 8,
// an int, enum or struct its size; anything else (float, union, array, fwd, func proto) is an
// error. It returns the resolved type for the kernel's message.
func typeSize(t btf.Type) (int, btf.Type, error) {
	t = SkipModifiers(t)
	switch t := t.(type) {
	case *btf.Void:
		return 0, t, nil
	case *btf.Pointer:
		return 8, t, nil
	case *btf.Int:
		return int(t.Size), t, nil
	case *btf.Enum:
		return int(t.Size), t, nil
	case *btf.Struct:
		return int(t.Size), t, nil
	}
	return 0, t, fmt.Errorf("unsupported %s", KindName(t))
}

// SkipModifiers follows typedef, const, volatile, restrict and type tags, as
// btf_type_skip_modifiers does.
func SkipModifiers(t btf.Type) btf.Type {
	for i := 0; i < 64; i++ { // bound cycles in malformed input
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

func isStructOrUnion(t btf.Type) bool {
	switch t.(type) {
	case *btf.Struct, *btf.Union:
		return true
	}
	return false
}

// fmodelFlags is __get_type_fmodel_flags. SIGNED_ARG exists from 6.3 on (CapSignedArgFlag),
// so a 6.1 model never carries it.
func fmodelFlags(t btf.Type, k Kernel) ArgFlags {
	var f ArgFlags
	switch t := t.(type) {
	case *btf.Struct, *btf.Union: // a union only reaches here with CapUnionArgs
		f |= StructArg
	case *btf.Int:
		if t.Encoding&btf.Signed != 0 && k.Has(CapSignedArgFlag) {
			f |= SignedArg
		}
	}
	return f
}

// KindName is the kernel's btf_type_str: the BTF kind as btf_kind_str spells it.
func KindName(t btf.Type) string {
	switch t.(type) {
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
		if t.(*btf.Enum).Size == 8 {
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
