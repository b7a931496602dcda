package btfmodel

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// MaxFuncArgs is MAX_BPF_FUNC_ARGS: the most C parameters a traced function may have.
const MaxFuncArgs = 12

// MaxFuncRegArgs is MAX_BPF_FUNC_REG_ARGS: the fallback model's argument count.
const MaxFuncRegArgs = 5

// MaxStructArgSize is the largest struct passed by value that btf_distill_func_proto accepts.
const MaxStructArgSize = 16

// ArgFlags are the per-argument BTF_FMODEL_* flags of struct btf_func_model.
type ArgFlags uint8

const (
	// StructArg is BTF_FMODEL_STRUCT_ARG: the argument is a struct passed by value.
	StructArg ArgFlags = 1 << 0
	// SignedArg is BTF_FMODEL_SIGNED_ARG (Linux 6.3+): the argument is a signed integer.
	SignedArg ArgFlags = 1 << 1
)

func (f ArgFlags) String() string {
	var s []string
	if f&StructArg != 0 {
		s = append(s, "STRUCT_ARG")
	}
	if f&SignedArg != 0 {
		s = append(s, "SIGNED_ARG")
	}
	if rest := f &^ (StructArg | SignedArg); rest != 0 {
		s = append(s, fmt.Sprintf("0x%x", uint8(rest)))
	}
	return strings.Join(s, "|")
}

// Arg is one C parameter of the traced function, as the kernel distils it.
type Arg struct {
	Name     string   // parameter name from BTF, may be empty
	Type     btf.Type // the parameter's BTF type, qualifiers and typedefs kept
	TypeName string   // the type as C spells it, e.g. "const struct sock *"
	Size     int      // arg_size: bytes the kernel records (pointer 8, int/enum/struct size)
	Flags    ArgFlags // arg_flags
}

// Slots is how many 8-byte ctx slots (and registers) the argument takes: 1 or 2.
func (a Arg) Slots() int { return (a.Size + 7) / 8 }

// FuncModel is struct btf_func_model plus the names and types it was distilled from.
type FuncModel struct {
	Name        string   // function name
	Args        []Arg    // nr_args entries
	RetSize     int      // ret_size: 0 for void
	RetFlags    ArgFlags // ret_flags (6.3+)
	RetType     btf.Type // nil for void
	RetTypeName string   // "void", "int", ...
	// BTFID is the function's BTF id when it came from a BTF file (0 for a prototype string);
	// some of the kernel's messages print it.
	BTFID uint32
	// Conservative is set for the fallback model the kernel uses without a prototype:
	// MAX_BPF_FUNC_REG_ARGS u64 arguments and an 8-byte return.
	Conservative bool
}

// NrArgs is nr_args: the number of C parameters.
func (m *FuncModel) NrArgs() int { return len(m.Args) }

// NrRegs is the number of 8-byte register slots the arguments take (struct-expanded), which
// is also the count the trampoline stores for bpf_get_func_arg_cnt.
func (m *FuncModel) NrRegs() int {
	n := 0
	for _, a := range m.Args {
		n += a.Slots()
	}
	return n
}

// HasStructArg reports whether any argument is a struct passed by value.
func (m *FuncModel) HasStructArg() bool {
	for _, a := range m.Args {
		if a.Flags&StructArg != 0 {
			return true
		}
	}
	return false
}

// IsVoid reports whether the function returns void.
func (m *FuncModel) IsVoid() bool { return m.RetSize == 0 && !m.Conservative }

// Prototype renders the model as a C prototype.
func (m *FuncModel) Prototype() string {
	var b strings.Builder
	b.WriteString(cDecl(m.RetTypeName, m.Name))
	b.WriteString("(")
	if len(m.Args) == 0 {
		b.WriteString("void")
	}
	for i, a := range m.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(cDecl(a.TypeName, a.Name))
	}
	b.WriteString(")")
	return b.String()
}

// cDecl joins a type and a name the way C prints them ("char *p", "int x").
func cDecl(typ, name string) string {
	if name == "" {
		return typ
	}
	if strings.Contains(typ, "(*)") { // function pointer: the name goes inside
		return strings.Replace(typ, "(*)", "(*"+name+")", 1)
	}
	if strings.HasSuffix(typ, "*") {
		return typ + name
	}
	return typ + " " + name
}

// Conservative returns the model the kernel falls back to when a target's prototype is not
// reliable (btf_distill_func_proto with func == NULL).
func Conservative(name string) *FuncModel {
	m := &FuncModel{Name: name, RetSize: 8, RetTypeName: "u64", Conservative: true}
	for i := 0; i < MaxFuncRegArgs; i++ {
		m.Args = append(m.Args, Arg{Name: fmt.Sprintf("arg%d", i), TypeName: "u64", Size: 8})
	}
	return m
}
