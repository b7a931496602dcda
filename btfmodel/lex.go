package btfmodel

import (
	"fmt"
	"strconv"
)

// ProtoError is a syntax or type error in a C prototype, at a 1-based line and column.
type ProtoError struct {
	Line, Col int
	Msg       string
	// off is the 1-based byte offset the lexer and parser record; locate turns it into
	// Line and Col.
	off int
}

func (e *ProtoError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

// locate sets Line and Col from the byte offset in src.
func (e *ProtoError) locate(src string) {
	e.Line, e.Col = 1, e.off
	for i := 0; i < e.off-1 && i < len(src); i++ {
		if src[i] == '\n' {
			e.Line, e.Col = e.Line+1, e.off-1-i
		}
	}
}

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tNum
	tPunct // one of ( ) { } [ ] * , ; : = ...
)

type token struct {
	kind tokKind
	text string
	num  int64
	col  int // 1-based
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tNum:
		return fmt.Sprintf("number %s", t.text)
	}
	return fmt.Sprintf("'%s'", t.text)
}

// maxProtoLen bounds the input so a pathological string cannot make the parser work hard.
const maxProtoLen = 64 << 10

// lex splits a C declaration list into tokens. Comments and preprocessor lines are not
// C prototypes' business here and are rejected rather than half-understood.
func lex(src string) ([]token, error) {
	if len(src) > maxProtoLen {
		return nil, &ProtoError{off: maxProtoLen, Msg: fmt.Sprintf("prototype longer than %d bytes", maxProtoLen)}
	}
	var toks []token
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '/' && i+1 < len(src) && (src[i+1] == '*' || src[i+1] == '/'):
			end := len(src)
			if src[i+1] == '*' {
				j := indexFrom(src, "*/", i+2)
				if j < 0 {
					return nil, &ProtoError{off: i + 1, Msg: "unterminated comment"}
				}
				end = j + 2
			} else if j := indexFrom(src, "\n", i); j >= 0 {
				end = j
			}
			i = end
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentChar(src[j]) {
				j++
			}
			toks = append(toks, token{kind: tIdent, text: src[i:j], col: i + 1})
			i = j
		case c >= '0' && c <= '9':
			j := i + 1
			for j < len(src) && (isIdentChar(src[j])) {
				j++
			}
			text := src[i:j]
			n, err := parseCInt(text)
			if err != nil {
				return nil, &ProtoError{off: i + 1, Msg: fmt.Sprintf("bad number %q", text)}
			}
			toks = append(toks, token{kind: tNum, text: text, num: n, col: i + 1})
			i = j
		case c == '.' && i+2 < len(src) && src[i+1] == '.' && src[i+2] == '.':
			toks = append(toks, token{kind: tPunct, text: "...", col: i + 1})
			i += 3
		case isPunct(c):
			toks = append(toks, token{kind: tPunct, text: string(c), col: i + 1})
			i++
		default:
			return nil, &ProtoError{off: i + 1, Msg: fmt.Sprintf("unexpected character %q", rune(c))}
		}
	}
	return append(toks, token{kind: tEOF, col: len(src) + 1}), nil
}

func indexFrom(s, sub string, from int) int {
	for i := from; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func isPunct(c byte) bool {
	switch c {
	case '(', ')', '{', '}', '[', ']', '*', ',', ';', ':', '=', '-':
		return true
	}
	return false
}

// parseCInt reads a C integer literal: decimal, 0x hex or 0 octal, with u/l suffixes.
func parseCInt(s string) (int64, error) {
	t := s
	for len(t) > 0 {
		last := t[len(t)-1]
		if last == 'u' || last == 'U' || last == 'l' || last == 'L' {
			t = t[:len(t)-1]
			continue
		}
		break
	}
	u, err := strconv.ParseUint(t, 0, 64)
	if err != nil {
		return 0, err
	}
	return int64(u), nil
}
