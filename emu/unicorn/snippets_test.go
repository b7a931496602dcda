//go:build cgo

package unicorn

import (
	"encoding/binary"
	"testing"
)

// Guest layout shared by the tests and benchmarks.
const (
	codeBase  = 0x10000
	dataBase  = 0x20000
	stackBase = 0x30000
	stackTop  = 0x40000
	roBase    = 0x50000 // mapped read-only
	unmapped  = 0x90000
)

// snippets holds hand-assembled code for one arch (checked with GNU as and
// objdump). Every snippet ends on the arch's halt sentinel.
type snippets struct {
	arch Arch
	// arith: a0 = 3*(a0+a1) after storing a0+a1 at [a2].
	arith []byte
	// loop: calls stub a1 times; stub increments a0. stubOff is the offset
	// of stub inside loop, stubLen its length.
	loop             []byte
	stubOff, stubLen uint64
	// bad: load from [a0], store it at [a1], call a2.
	bad  []byte
	spin []byte // infinite loop
	// a holds the argument registers a0..a2; res the result register,
	// which is also the loop accumulator.
	a   [3]Reg
	res Reg
}

func a64(ws ...uint32) []byte {
	b := make([]byte, 4*len(ws))
	for i, w := range ws {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return b
}

var x86Snippets = snippets{
	arch: X86_64,
	arith: []byte{
		0x48, 0x89, 0xf8, // mov rax, rdi
		0x48, 0x01, 0xf0, // add rax, rsi
		0x48, 0x89, 0x02, // mov [rdx], rax
		0x48, 0x6b, 0xc0, 0x03, // imul rax, rax, 3
		0xf4, // hlt
	},
	loop: []byte{
		0xe8, 0x06, 0x00, 0x00, 0x00, // loop: call stub
		0x48, 0xff, 0xc9, // dec rcx
		0x75, 0xf6, // jnz loop
		0xf4,                   // hlt
		0x48, 0x83, 0xc0, 0x01, // stub: add rax, 1
		0xc3, // ret
	},
	stubOff: 11, stubLen: 5,
	bad: []byte{
		0x48, 0x8b, 0x07, // mov rax, [rdi]
		0x48, 0x89, 0x06, // mov [rsi], rax
		0xff, 0xd2, // call rdx
		0xf4, // hlt
	},
	spin: []byte{0xeb, 0xfe}, // jmp .
	a:    [3]Reg{RDI, RSI, RDX},
	res:  RAX,
}

var arm64Snippets = snippets{
	arch: ARM64,
	arith: a64(
		0x8b010000, // add x0, x0, x1
		0xf9000040, // str x0, [x2]
		0x8b000400, // add x0, x0, x0, lsl #1
		0xd503207f, // wfi
	),
	loop: a64(
		0x94000004, // loop: bl stub
		0xf1000421, // subs x1, x1, #1
		0x54ffffc1, // b.ne loop
		0xd503207f, // wfi
		0x91000400, // stub: add x0, x0, #1
		0xd65f03c0, // ret
	),
	stubOff: 16, stubLen: 8,
	bad: a64(
		0xf9400003, // ldr x3, [x0]
		0xf9000023, // str x3, [x1]
		0xd63f0040, // blr x2
		0xd503207f, // wfi
	),
	spin: a64(0x14000000), // b .
	a:    [3]Reg{X0, X1, X2},
	res:  X0,
}

var allSnippets = []snippets{x86Snippets, arm64Snippets}

// loopCounter and loopAcc are the loop snippet's count and accumulator.
func (s snippets) loopCounter() Reg {
	if s.arch == X86_64 {
		return RCX
	}
	return X1
}

func (s snippets) sp() Reg {
	if s.arch == X86_64 {
		return RSP
	}
	return SP
}

// setup opens an engine with the standard layout and code at codeBase.
func setup(tb testing.TB, arch Arch, code []byte) *Engine {
	tb.Helper()
	e, err := Open(arch)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	must(tb, e.Map(codeBase, 0x1000, ProtRead|ProtExec))
	must(tb, e.Map(dataBase, 0x1000, ProtRead|ProtWrite))
	must(tb, e.Map(stackBase, stackTop-stackBase, ProtRead|ProtWrite))
	must(tb, e.Map(roBase, 0x1000, ProtRead))
	must(tb, e.Write(codeBase, code))
	sp := Reg(RSP)
	if arch == ARM64 {
		sp = SP
	}
	must(tb, e.SetReg(sp, stackTop-0x100))
	return e
}

// must fails on err. Helper is only called on failure: it walks the stack
// and would dominate the benchmarks.
func must(tb testing.TB, err error) {
	if err != nil {
		tb.Helper()
		tb.Fatal(err)
	}
}

func reg(tb testing.TB, e *Engine, r Reg) uint64 {
	tb.Helper()
	v, err := e.Reg(r)
	must(tb, err)
	return v
}

// haltAfter registers the halt that ends code placed at codeBase.
func haltAfter(tb testing.TB, e *Engine, code []byte) {
	tb.Helper()
	n := len(SentinelBytes(e.Arch(), SentinelHalt))
	must(tb, e.AddSentinel(codeBase+uint64(len(code)-n), SentinelHalt))
}
