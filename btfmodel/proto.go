package btfmodel

import (
	"fmt"

	"github.com/cilium/ebpf/btf"
)

// ParseProto reads a C declaration list ending in a function prototype and returns the
// function as BTF, so that it can be distilled like a vmlinux function. Struct, union and
// enum definitions and typedefs may precede it:
//
//	struct pair { u64 a; u32 b; }; int f(struct pair p, int x)
//
// Kernel integer typedefs (u8..u64, s8..s64, __u*, __s*, size_t, loff_t, ...) and a few
// kernel structs (kuid_t, kgid_t, sockptr_t, struct timespec64) are predefined. Errors are
// *ProtoError, naming the 1-based line and column.
func ParseProto(src string) (*btf.Func, error) {
	fn, err := parseProto(src)
	if pe, ok := err.(*ProtoError); ok {
		pe.locate(src)
	}
	return fn, err
}

func parseProto(src string) (*btf.Func, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, sc: newScope()}
	var fn *btf.Func
	for p.peek().kind != tEOF {
		if p.accept(";") {
			continue
		}
		if fn != nil {
			return nil, p.errAt(p.peek(), "unexpected %s after the function prototype", p.peek())
		}
		f, err := p.declaration()
		if err != nil {
			return nil, err
		}
		fn = f
	}
	if fn == nil {
		return nil, &ProtoError{off: len(src) + 1, Msg: "no function prototype found"}
	}
	return fn, nil
}

type parser struct {
	toks []token
	pos  int
	sc   *scope
	anon int
}

func (p *parser) peek() token { return p.toks[p.pos] }
func (p *parser) peekN(n int) token {
	if p.pos+n < len(p.toks) {
		return p.toks[p.pos+n]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func (p *parser) accept(punct string) bool {
	if t := p.peek(); t.kind == tPunct && t.text == punct {
		p.pos++
		return true
	}
	return false
}

func (p *parser) expect(punct string) error {
	if !p.accept(punct) {
		return p.errAt(p.peek(), "expected '%s', found %s", punct, p.peek())
	}
	return nil
}

func (p *parser) errAt(t token, format string, args ...any) error {
	return &ProtoError{off: t.col, Msg: fmt.Sprintf(format, args...)}
}

// declaration parses one top-level declaration: a typedef, a struct/union/enum definition,
// or the function prototype (which it returns).
func (p *parser) declaration() (*btf.Func, error) {
	start := p.peek()
	isTypedef := false
	if start.kind == tIdent && start.text == "typedef" {
		p.next()
		isTypedef = true
	}
	base, err := p.specifiers()
	if err != nil {
		return nil, err
	}
	if !isTypedef && p.peek().kind == tPunct && p.peek().text == ";" {
		return nil, nil // a bare struct/union/enum definition
	}
	nameTok := p.peek()
	name, typ, err := p.declarator(base)
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, p.errAt(nameTok, "expected a name in the declaration")
	}
	if isTypedef {
		if _, dup := p.sc.typedefs[name]; dup {
			return nil, p.errAt(nameTok, "redefinition of typedef '%s'", name)
		}
		p.sc.typedefs[name] = &btf.Typedef{Name: name, Type: typ}
		return nil, nil
	}
	proto, ok := typ.(*btf.FuncProto)
	if !ok {
		return nil, p.errAt(nameTok, "'%s' is not a function (variables are not traced)", name)
	}
	return &btf.Func{Name: name, Type: proto, Linkage: btf.GlobalFunc}, nil
}

// specifiers parses the type specifiers and qualifiers before a declarator.
func (p *parser) specifiers() (btf.Type, error) {
	var words []string
	var firstWord token
	var base btf.Type
	var quals []string
	for {
		t := p.peek()
		if t.kind != tIdent {
			break
		}
		switch {
		case specifiers[t.text]:
			p.next()
			continue
		case t.text == "__attribute__":
			if err := p.skipAttribute(); err != nil {
				return nil, err
			}
			continue
		}
		if q, ok := qualifiers[t.text]; ok {
			p.next()
			if q != "" {
				quals = append(quals, q)
			}
			continue
		}
		if intWords[t.text] {
			if base != nil {
				return nil, p.errAt(t, "two types in one declaration: '%s' after %s", t.text, CName(base))
			}
			if len(words) == 0 {
				firstWord = t
			}
			words = append(words, p.next().text)
			continue
		}
		if base != nil || len(words) > 0 {
			break // the declarator's name
		}
		switch t.text {
		case "struct", "union", "enum":
			b, err := p.tagged()
			if err != nil {
				return nil, err
			}
			base = b
			continue
		case "void":
			p.next()
			base = &btf.Void{}
			continue
		}
		if td, ok := p.sc.typedefs[t.text]; ok {
			p.next()
			base = td
			continue
		}
		return nil, p.errAt(t, "unknown type name '%s'", t.text)
	}
	if len(words) > 0 {
		b, ok := p.sc.baseInt(words)
		if !ok {
			return nil, p.errAt(firstWord, "invalid combination of type specifiers")
		}
		base = b
	}
	if base == nil {
		return nil, p.errAt(p.peek(), "expected a type, found %s", p.peek())
	}
	return applyQuals(base, quals), nil
}

func applyQuals(t btf.Type, quals []string) btf.Type {
	for _, q := range quals {
		switch q {
		case "const":
			t = &btf.Const{Type: t}
		case "volatile":
			t = &btf.Volatile{Type: t}
		case "restrict":
			t = &btf.Restrict{Type: t}
		default: // __user and friends are BTF type tags on the pointee
			t = &btf.TypeTag{Value: q, Type: t}
		}
	}
	return t
}

func (p *parser) skipAttribute() error {
	p.next()
	open := p.peek()
	if err := p.expect("("); err != nil {
		return err
	}
	for depth := 1; depth > 0; {
		t := p.next()
		switch {
		case t.kind == tEOF:
			return p.errAt(open, "unterminated __attribute__")
		case t.kind == tPunct && t.text == "(":
			depth++
		case t.kind == tPunct && t.text == ")":
			depth--
		}
	}
	return nil
}

// declarator parses pointers, an optional name, a parameter list or array suffixes, and a
// parenthesised inner declarator for function pointers: "*const *name", "(*cb)(int)", "a[4]".
func (p *parser) declarator(base btf.Type) (string, btf.Type, error) {
	t := base
	for p.accept("*") {
		t = &btf.Pointer{Target: t}
		var quals []string
		for p.peek().kind == tIdent {
			q, ok := qualifiers[p.peek().text]
			if !ok {
				break
			}
			p.next()
			if q != "" {
				quals = append(quals, q)
			}
		}
		t = applyQuals(t, quals)
	}
	// A parenthesised declarator ("(*fn)") binds tighter than the suffixes that follow it, so
	// parse it against a placeholder and substitute the suffixed type afterwards.
	if p.peek().kind == tPunct && p.peek().text == "(" && p.peekN(1).kind == tPunct && p.peekN(1).text == "*" {
		p.next()
		hole := &btf.Typedef{Name: "\x00hole"}
		name, inner, err := p.declarator(hole)
		if err != nil {
			return "", nil, err
		}
		if err := p.expect(")"); err != nil {
			return "", nil, err
		}
		outer, err := p.suffixes(t)
		if err != nil {
			return "", nil, err
		}
		hole.Type = outer
		return name, fillHole(inner, hole), nil
	}
	name := ""
	if tk := p.peek(); tk.kind == tIdent {
		if _, isQual := qualifiers[tk.text]; !isQual {
			name = p.next().text
		}
	}
	typ, err := p.suffixes(t)
	return name, typ, err
}

// fillHole replaces the placeholder typedef by the type it stands for.
func fillHole(t btf.Type, hole *btf.Typedef) btf.Type {
	switch x := t.(type) {
	case *btf.Typedef:
		if x == hole {
			return hole.Type
		}
	case *btf.Pointer:
		x.Target = fillHole(x.Target, hole)
	case *btf.Const:
		x.Type = fillHole(x.Type, hole)
	case *btf.Volatile:
		x.Type = fillHole(x.Type, hole)
	case *btf.Restrict:
		x.Type = fillHole(x.Type, hole)
	case *btf.TypeTag:
		x.Type = fillHole(x.Type, hole)
	case *btf.Array:
		x.Type = fillHole(x.Type, hole)
	}
	return t
}

func (p *parser) suffixes(t btf.Type) (btf.Type, error) {
	if p.accept("(") {
		proto, err := p.params(t)
		if err != nil {
			return nil, err
		}
		return proto, nil
	}
	var dims []uint32
	for p.peek().kind == tPunct && p.peek().text == "[" {
		p.next()
		n := p.peek()
		if n.kind != tNum {
			return nil, p.errAt(n, "expected an array size, found %s", n)
		}
		p.next()
		if n.num <= 0 || n.num > 1<<20 {
			return nil, p.errAt(n, "array size %d out of range", n.num)
		}
		dims = append(dims, uint32(n.num))
		if err := p.expect("]"); err != nil {
			return nil, err
		}
	}
	for i := len(dims) - 1; i >= 0; i-- {
		t = &btf.Array{Index: p.sc.ints["unsigned int"], Type: t, Nelems: dims[i]}
	}
	return t, nil
}

// params parses a parameter list after '(' and returns the prototype.
func (p *parser) params(ret btf.Type) (*btf.FuncProto, error) {
	if _, isArr := ret.(*btf.Array); isArr {
		return nil, p.errAt(p.peek(), "function cannot return an array")
	}
	proto := &btf.FuncProto{Return: ret}
	if p.accept(")") {
		return proto, nil // f() is f(void) in the kernel's C
	}
	if t := p.peek(); t.kind == tIdent && t.text == "void" && p.peekN(1).kind == tPunct && p.peekN(1).text == ")" {
		p.next()
		p.next()
		return proto, nil
	}
	for {
		if p.accept("...") {
			proto.Params = append(proto.Params, btf.FuncParam{Type: &btf.Void{}})
			return proto, p.expect(")")
		}
		startTok := p.peek()
		base, err := p.specifiers()
		if err != nil {
			return nil, err
		}
		name, typ, err := p.declarator(base)
		if err != nil {
			return nil, err
		}
		// Arrays and functions as parameters decay to pointers, as in C.
		switch x := typ.(type) {
		case *btf.Array:
			typ = &btf.Pointer{Target: x.Type}
		case *btf.FuncProto:
			typ = &btf.Pointer{Target: x}
		case *btf.Void:
			return nil, p.errAt(startTok, "'void' must be the only parameter")
		}
		if fwd, ok := SkipModifiers(typ).(*btf.Fwd); ok {
			return nil, p.errAt(startTok, "parameter has incomplete type '%s'", CName(fwd))
		}
		proto.Params = append(proto.Params, btf.FuncParam{Name: name, Type: typ})
		if p.accept(")") {
			return proto, nil
		}
		if err := p.expect(","); err != nil {
			return nil, err
		}
	}
}
