package kernel

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"

	"golang.org/x/arch/x86/x86asm"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// NoSection labels the instructions of an image whose request the model refuses: without
// the model's image there is nothing to take section names from.
const NoSection = "?"

// maxAlign bounds the alignment: an LCS table of maxAlign x maxAlign instructions (images
// are under 8 KiB, so a few thousand instructions at most). Beyond it, instructions are
// paired in offset order and the result says so.
const maxAlign = 4096

// Insn is one instruction of a kernel image, labelled with the trampoline section it
// belongs to.
type Insn struct {
	Offset  int    `json:"offset"`
	Bytes   string `json:"bytes"` // hex, in memory order
	Asm     string `json:"asm"`   // disassembly, addresses named where the request knows them
	Section string `json:"section"`
	key     string // the bytes with embedded addresses masked (sameKey)
}

// String is the instruction as a listing prints it: "6c: e8 e8 b6 e5 c4  callq func+0x9".
func (in *Insn) String() string {
	if in == nil {
		return "(end of code)"
	}
	return fmt.Sprintf("%x: %s  %s", in.Offset, spacedHex(in.Bytes), in.Asm)
}

func spacedHex(h string) string {
	b := make([]byte, 0, len(h)*3/2)
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, h[i:min(i+2, len(h))]...)
	}
	return string(b)
}

// decodeImage decodes code (executing at base) into instructions, each with its address-
// masked key. Bytes the disassembler cannot decode become one pseudo-instruction to the
// end, so that every byte is in some instruction.
func decodeImage(arch btfmodel.Arch, code []byte, base uint64, syms map[uint64]string) ([]Insn, error) {
	_, dis, err := jit.Lookup(arch)
	if err != nil {
		return nil, err
	}
	lines, lerr := jit.BuildListing(&jit.Image{Base: base, Code: code}, dis, syms)
	out := make([]Insn, 0, len(lines)+1)
	end := 0
	rvKeys := rvKeys(arch, code) // riscv64: what an instruction masks depends on its neighbours
	for _, l := range lines {
		n := len(l.Bytes) / 2
		key, ok := rvKeys[l.Offset]
		if !ok {
			key = sameKey(arch, code, l.Offset, n)
		}
		out = append(out, Insn{Offset: l.Offset, Bytes: l.Bytes, Asm: l.Asm, key: key})
		end = l.Offset + n
	}
	if lerr != nil && end < len(code) {
		out = append(out, Insn{Offset: end, Bytes: hex.EncodeToString(code[end:]), Asm: "(cannot decode)", key: "bad:" + hex.EncodeToString(code[end:])})
	}
	if arch == "arm64" {
		out = joinMovRuns(out, code, syms)
	}
	return out, nil
}

// joinMovRuns makes each arm64 address load (a run of movz/movn/movk into one register)
// one instruction: the kernel's emit_a64_mov_i64 leaves out the 16-bit words that are
// zero (or all ones), so the same load of another address can be a word longer or shorter.
// Its text is the value loaded, named when the request knows it.
func joinMovRuns(insns []Insn, code []byte, syms map[uint64]string) []Insn {
	var out []Insn
	for i := 0; i < len(insns); i++ {
		in := insns[i]
		rd, ok := movWide(word(code, in.Offset))
		if !ok || !strings.HasPrefix(in.key, "movwide") {
			out = append(out, in)
			continue
		}
		j := i
		var v uint64
		for ; j < len(insns) && insns[j].key == in.key && (j == i || word(code, insns[j].Offset)&0xff800000 == 0xf2800000); j++ {
			v = movWideApply(v, word(code, insns[j].Offset))
		}
		val := fmt.Sprintf("%#x", v)
		if n, ok := syms[v]; ok {
			val = n
		}
		out = append(out, Insn{Offset: in.Offset, Bytes: hex.EncodeToString(code[in.Offset : insns[j-1].Offset+4]),
			Asm: fmt.Sprintf("mov x%d, =%s  (%d words)", rd, val, j-i), key: in.key})
		i = j - 1
	}
	return out
}

func word(code []byte, off int) uint32 { return binary.LittleEndian.Uint32(code[off:]) }

// movWideApply is what one 64-bit movz (0xd28), movn (0x928) or movk (0xf28) does to v.
func movWideApply(v uint64, w uint32) uint64 {
	sh := uint((w >> 21) & 3 * 16)
	imm := uint64((w >> 5) & 0xffff)
	switch w & 0xff800000 {
	case 0xd2800000:
		return imm << sh
	case 0x92800000:
		return ^(imm << sh)
	}
	return v&^(0xffff<<sh) | imm<<sh
}

// sameKey is the instruction at code[i:i+n] with the embedded addresses masked that
// SameModuloAddresses ignores: two instructions with equal keys differ at most in an address.
func sameKey(arch btfmodel.Arch, code []byte, i, n int) string {
	b := code[i : i+n]
	switch arch {
	case "amd64":
		in, err := x86asm.Decode(b, 64)
		if err != nil || in.Len != n {
			break
		}
		switch {
		case (in.Op == x86asm.CALL || in.Op == x86asm.JMP) && n == 5 && b[0] != 0xeb:
			return hex.EncodeToString(b[:1]) + "+rel32"
		case in.Op == x86asm.MOV && n == 10 && b[0]&0xf8 == 0x48 && b[1]&0xf8 == 0xb8:
			return hex.EncodeToString(b[:2]) + "+imm64"
		case in.Op == x86asm.MOV && n == 7 && b[0] == 0x48 && b[1] == 0xc7 && b[2]&0xf8 == 0xc0 && b[6]&0x80 != 0:
			return hex.EncodeToString(b[:3]) + "+ktext"
		}
	case "arm64":
		if n != 4 {
			break
		}
		w := binary.LittleEndian.Uint32(b)
		if w&0xfc000000 == 0x94000000 {
			return "bl"
		}
		if rd, ok := movWide(w); ok && inMovRun(code, i) {
			return fmt.Sprintf("movwide x%d", rd)
		}
	}
	return hex.EncodeToString(b)
}

// pair is one step of an alignment: indexes into two instruction lists, -1 for a gap; gap
// marks a removed instruction and an added one put side by side (zipGaps).
type pair struct {
	a, b int
	gap  bool
}

// align aligns two instruction lists by a longest common subsequence of their keys, after
// trimming the common prefix and suffix (most pairs of images differ in a few places). ok is
// false when what is left exceeds maxAlign: the rest is then paired in order.
func align(a, b []Insn) (pairs []pair, ok bool) {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre].key == b[pre].key {
		pairs = append(pairs, pair{a: pre, b: pre})
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf].key == b[len(b)-1-suf].key {
		suf++
	}
	n, m := len(a)-pre-suf, len(b)-pre-suf
	ok = n <= maxAlign && m <= maxAlign
	if ok {
		pairs = append(pairs, lcs(a[pre:pre+n], b[pre:pre+m], pre)...)
	} else {
		for i := 0; i < max(n, m); i++ {
			p := pair{-1, -1, true}
			if i < n {
				p.a = pre + i
			}
			if i < m {
				p.b = pre + i
			}
			pairs = append(pairs, p)
		}
	}
	for k := suf; k > 0; k-- {
		pairs = append(pairs, pair{a: len(a) - k, b: len(b) - k})
	}
	return pairs, ok
}

// lcs aligns a and b (both at most maxAlign long); indexes are offset by base. A gap pair
// comes out A-first, so a replaced instruction reads as "a removed, b added".
func lcs(a, b []Insn, base int) []pair {
	n, m := len(a), len(b)
	// t[i][j] is the LCS length of a[i:] and b[j:].
	t := make([]uint16, (n+1)*(m+1))
	at := func(i, j int) uint16 { return t[i*(m+1)+j] }
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			v := max(at(i+1, j), at(i, j+1))
			if a[i].key == b[j].key {
				v = at(i+1, j+1) + 1
			}
			t[i*(m+1)+j] = v
		}
	}
	var out []pair
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i].key == b[j].key:
			out = append(out, pair{a: base + i, b: base + j})
			i, j = i+1, j+1
		case j == m || (i < n && at(i+1, j) >= at(i, j+1)):
			out = append(out, pair{a: base + i, b: -1})
			i++
		default:
			out = append(out, pair{a: -1, b: base + j})
			j++
		}
	}
	return out
}

// Labelled is a kernel image decoded into instructions, each with the model's section.
type Labelled struct {
	Insns []Insn
	// Profile is the model whose sections label the image.
	Profile btfmodel.Kernel
	// Note says when the labels are not an alignment: the model refused the request (every
	// section is NoSection), or the image was too long to align (labelled by offset).
	Note string
	// Unlabelled: the model refused the request.
	Unlabelled bool
	tr         *jit.Tramp
}

// LabelSections decodes a case's kernel image and names each instruction's section: the
// model's image of the same request (generated as profile, or the request's own profile when
// profile is "") is aligned with the kernel's instructions, compared modulo embedded
// addresses. A matched instruction takes the model's section; one that replaces a model
// instruction (a gap on both sides) that instruction's; an added one the section of the
// nearest matched instruction before it (the first section if there is none).
func LabelSections(c *CorpusCase, profile btfmodel.Kernel) (*Labelled, error) {
	code, err := hex.DecodeString(c.Image)
	if err != nil {
		return nil, fmt.Errorf("case %s: image: %w", c.ID, err)
	}
	req := *c.Request
	if profile != "" {
		req.Kernel = profile
	}
	var base uint64
	if req.Addrs != nil {
		base = uint64(req.Addrs.Image)
	}
	l := &Labelled{Profile: req.Kernel}
	tr, img, gerr := jit.Generate(&req)
	var syms map[uint64]string
	if gerr == nil {
		syms = tr.Symbols()
		l.tr = tr
	}
	if l.Insns, err = decodeImage(req.Arch, code, base, syms); err != nil {
		return nil, fmt.Errorf("case %s: %w", c.ID, err)
	}
	if gerr != nil {
		for i := range l.Insns {
			l.Insns[i].Section = NoSection
		}
		l.Note = fmt.Sprintf("the %s model refuses this request (%v): no sections", req.Kernel, gerr)
		l.Unlabelled = true
		return l, nil
	}
	model, err := decodeImage(req.Arch, img.Code, img.Base, syms)
	if err != nil {
		return nil, fmt.Errorf("case %s: the model's image: %w", c.ID, err)
	}
	for i := range model {
		model[i].Section = sectionAtOffset(img, model[i].Offset)
	}
	if !labelFrom(l.Insns, model) {
		// Too long to align: take the section at the same offset of the model's image.
		for i := range l.Insns {
			l.Insns[i].Section = sectionAtOffset(img, l.Insns[i].Offset)
		}
		l.Note = fmt.Sprintf("%d and %d instructions: more than the %d the alignment takes; sections by offset", len(l.Insns), len(model), maxAlign)
	}
	return l, nil
}

// labelFrom names the sections of dst's instructions after those of the labelled src they
// align with (LabelSections). It returns false, labelling nothing, when the two are too long
// to align.
func labelFrom(dst, src []Insn) bool {
	pairs, ok := align(dst, src)
	if !ok {
		return false
	}
	last := ""
	if len(src) > 0 {
		last = src[0].Section
	}
	for _, p := range zipGaps(pairs) {
		switch {
		case p.a >= 0 && p.b >= 0 && p.gap:
			// A replaced instruction: the section of the one it replaces.
			dst[p.a].Section = src[p.b].Section
		case p.a >= 0 && p.b >= 0:
			last = src[p.b].Section
			dst[p.a].Section = last
		case p.a >= 0:
			dst[p.a].Section = last
		}
	}
	return true
}

// prototype is the traced function as the model saw it, or "" when it refused.
func (l *Labelled) prototype() string {
	if l.tr == nil {
		return ""
	}
	return l.tr.Model.Prototype()
}

func sectionAtOffset(img *jit.Image, off int) string {
	name := ""
	for _, s := range img.Sections {
		if off >= s.Start && off < s.End {
			name = s.Name
		}
	}
	return name
}
