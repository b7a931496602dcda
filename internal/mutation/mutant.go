package mutation

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strconv"
	"strings"
)

// Mutant is one change to one file: the bytes [Start, End) of the source become Text.
type Mutant struct {
	File   string // path as given to Generate
	Line   int
	Col    int
	Kind   string // "cmp", "arith", "const", "negate", "delete", "bool"
	Desc   string // "< -> <=", "delete return", ...
	Start  int
	End    int
	Text   string
	Suffix *edit // a second edit (the closing parenthesis of a negation)
}

type edit struct {
	at   int
	text string
}

// ID names a mutant the way reports and the equivalents list do: file:line:col: desc.
func (m Mutant) ID() string {
	return fmt.Sprintf("%s:%d:%d: %s", m.File, m.Line, m.Col, m.Desc)
}

// Apply returns the mutated source.
func (m Mutant) Apply(src []byte) []byte {
	var b strings.Builder
	b.Write(src[:m.Start])
	b.WriteString(m.Text)
	if m.Suffix != nil {
		b.Write(src[m.End:m.Suffix.at])
		b.WriteString(m.Suffix.text)
		b.Write(src[m.Suffix.at:])
	} else {
		b.Write(src[m.End:])
	}
	return []byte(b.String())
}

var cmpFlip = map[token.Token]token.Token{
	token.LSS: token.LEQ, token.LEQ: token.LSS, token.GTR: token.GEQ, token.GEQ: token.GTR,
	token.EQL: token.NEQ, token.NEQ: token.EQL,
}

var arithSwap = map[token.Token]token.Token{
	token.ADD: token.SUB, token.SUB: token.ADD, token.ADD_ASSIGN: token.SUB_ASSIGN,
	token.SUB_ASSIGN: token.ADD_ASSIGN, token.INC: token.DEC, token.DEC: token.INC,
}

// Generate lists the mutants of one Go source file, in source order.
func Generate(name string, src []byte) ([]Mutant, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	g := &gen{fset: fset, file: fset.File(f.Pos()), name: name, src: src}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
			g.walk(fd.Body)
			continue
		}
		g.walk(d)
	}
	sort.SliceStable(g.out, func(i, j int) bool { return g.out[i].Start < g.out[j].Start })
	return g.out, nil
}

type gen struct {
	fset *token.FileSet
	file *token.File
	name string
	src  []byte
	out  []Mutant
}

func (g *gen) add(kind, desc string, start, end int, text string, suffix *edit) {
	p := g.file.Position(g.file.Pos(start))
	g.out = append(g.out, Mutant{File: g.name, Line: p.Line, Col: p.Column, Kind: kind, Desc: desc,
		Start: start, End: end, Text: text, Suffix: suffix})
}

func (g *gen) off(p token.Pos) int { return g.fset.Position(p).Offset }

func (g *gen) walk(root ast.Node) {
	ast.Inspect(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if messageCall(n) {
				return false
			}
		case *ast.BinaryExpr:
			if to, ok := cmpFlip[n.Op]; ok {
				g.op("cmp", n.OpPos, n.Op, to)
			}
			if to, ok := arithSwap[n.Op]; ok {
				g.op("arith", n.OpPos, n.Op, to)
			}
		case *ast.AssignStmt:
			if to, ok := arithSwap[n.Tok]; ok {
				g.op("arith", n.TokPos, n.Tok, to)
			}
		case *ast.IncDecStmt:
			g.op("arith", n.TokPos, n.Tok, arithSwap[n.Tok])
		case *ast.BasicLit:
			if n.Kind == token.INT {
				g.intConst(n)
			}
		case *ast.Ident:
			if n.Name == "true" || n.Name == "false" {
				to := map[string]string{"true": "false", "false": "true"}[n.Name]
				s := g.off(n.Pos())
				g.add("bool", n.Name+" -> "+to, s, s+len(n.Name), to, nil)
			}
		case *ast.IfStmt:
			g.negate(n.Cond)
		case *ast.ForStmt:
			if n.Cond != nil {
				g.negate(n.Cond)
			}
		case *ast.BlockStmt:
			for _, st := range n.List {
				g.deleteStmt(st)
			}
		case *ast.CaseClause:
			for _, st := range n.Body {
				g.deleteStmt(st)
			}
		}
		return true
	})
}

func (g *gen) op(kind string, pos token.Pos, from, to token.Token) {
	s := g.off(pos)
	g.add(kind, from.String()+" -> "+to.String(), s, s+len(from.String()), to.String(), nil)
}

func (g *gen) intConst(n *ast.BasicLit) {
	v, err := strconv.ParseUint(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
	if err != nil {
		return
	}
	s, e := g.off(n.Pos()), g.off(n.End())
	hex := strings.HasPrefix(strings.ToLower(n.Value), "0x")
	format := func(x uint64) string {
		if hex {
			return fmt.Sprintf("0x%x", x)
		}
		return strconv.FormatUint(x, 10)
	}
	if v < 1<<63 {
		g.add("const", n.Value+" -> "+format(v+1), s, e, format(v+1), nil)
	}
	if v > 0 {
		g.add("const", n.Value+" -> "+format(v-1), s, e, format(v-1), nil)
	}
}

func (g *gen) negate(cond ast.Expr) {
	s, e := g.off(cond.Pos()), g.off(cond.End())
	g.add("negate", "negate "+clip(string(g.src[s:e])), s, s, "!(", &edit{at: e, text: ")"})
}

// deleteStmt removes statements whose absence still compiles often: calls, assignments to
// existing variables, increments, and returns, breaks and continues that are not a block's
// only way out of a function (a deleted final return does not compile and is dropped).
func (g *gen) deleteStmt(st ast.Stmt) {
	var what string
	switch s := st.(type) {
	case *ast.ExprStmt:
		if _, ok := s.X.(*ast.CallExpr); !ok {
			return
		}
		what = "call"
	case *ast.AssignStmt:
		if s.Tok == token.DEFINE {
			return
		}
		what = "assignment"
	case *ast.IncDecStmt:
		what = "increment"
	case *ast.ReturnStmt:
		what = "return"
	case *ast.BranchStmt:
		if s.Tok != token.BREAK && s.Tok != token.CONTINUE {
			return
		}
		what = s.Tok.String()
	default:
		return
	}
	s, e := g.off(st.Pos()), g.off(st.End())
	g.add("delete", "delete "+what+" "+clip(string(g.src[s:e])), s, e, "", nil)
}

// messageCall reports calls whose arguments only build text.
func messageCall(c *ast.CallExpr) bool {
	switch fn := c.Fun.(type) {
	case *ast.SelectorExpr:
		if x, ok := fn.X.(*ast.Ident); ok {
			if x.Name == "fmt" || x.Name == "errors" {
				return true
			}
		}
		return false
	case *ast.Ident:
		return fn.Name == "panic"
	}
	return false
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}
