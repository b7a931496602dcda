package btfmodel

import (
	"strings"

	"github.com/cilium/ebpf/btf"
)

// CName spells a BTF type as C would in a declaration without a name: "int",
// "const struct sock *", "char **", "struct pair". Type tags such as __user are kept.
func CName(t btf.Type) string {
	return cname(t, 0)
}

func cname(t btf.Type, depth int) string {
	if depth > 32 {
		return "..."
	}
	switch t := t.(type) {
	case nil, *btf.Void:
		return "void"
	case *btf.Int:
		return t.Name
	case *btf.Float:
		return t.Name
	case *btf.Typedef:
		return t.Name
	case *btf.Struct:
		return tagged("struct", t.Name)
	case *btf.Union:
		return tagged("union", t.Name)
	case *btf.Enum:
		return tagged("enum", t.Name)
	case *btf.Fwd:
		if t.Kind == btf.FwdUnion {
			return tagged("union", t.Name)
		}
		return tagged("struct", t.Name)
	case *btf.Const:
		return qualify("const", cname(t.Type, depth+1))
	case *btf.Volatile:
		return qualify("volatile", cname(t.Type, depth+1))
	case *btf.Restrict:
		return qualify("restrict", cname(t.Type, depth+1))
	case *btf.TypeTag:
		// Kernel style puts address-space tags after the base: "const char __user *".
		return cname(t.Type, depth+1) + " __" + t.Value
	case *btf.Pointer:
		inner := cname(t.Target, depth+1)
		if _, fp := SkipModifiers(t.Target).(*btf.FuncProto); fp {
			return inner // already "ret (*)(args)"
		}
		if strings.HasSuffix(inner, "*") {
			return inner + "*"
		}
		return inner + " *"
	case *btf.Array:
		return cname(t.Type, depth+1) + "[" + itoa(int(t.Nelems)) + "]"
	case *btf.FuncProto:
		var b strings.Builder
		b.WriteString(cname(t.Return, depth+1))
		b.WriteString(" (*)(")
		for i, p := range t.Params {
			if i > 0 {
				b.WriteString(", ")
			}
			if _, v := p.Type.(*btf.Void); v {
				b.WriteString("...")
				continue
			}
			b.WriteString(cname(p.Type, depth+1))
		}
		b.WriteString(")")
		return b.String()
	}
	return "?"
}

func tagged(kw, name string) string {
	if name == "" {
		return kw + " {...}"
	}
	return kw + " " + name
}

// qualify puts a qualifier where C reads it: before a base type, after a pointer's star.
func qualify(q, inner string) string {
	if strings.HasSuffix(inner, "*") {
		return inner + " " + q
	}
	return q + " " + inner
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
