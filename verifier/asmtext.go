package verifier

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/cilium/ebpf/asm"
)

// The text instruction syntax of the JSON input (see doc.go): the kernel verifier log's
// own notation (kernel/bpf/disasm.c), so that log lines can be pasted back, plus labels,
// named maps and raw hex.

var (
	reLogPrefix = regexp.MustCompile(`^\d+:\s*(\([0-9a-f]{2}\)\s*|(?:[0-9a-f]{2} ){7,15}[0-9a-f]{2}\s+)?`)
	reObjdumpTo = regexp.MustCompile(`\s*<[^>]*>$`)
	reReg       = `([rw])(\d+)`
	reMovReg    = regexp.MustCompile(`^` + reReg + `\s*=\s*(\(s(8|16|32)\))?` + reReg + `$`)
	reNeg       = regexp.MustCompile(`^` + reReg + `\s*=\s*-` + reReg + `$`)
	reEndian    = regexp.MustCompile(`^` + reReg + `\s*=\s*(be|le|bswap)(16|32|64)\s+` + reReg + `$`)
	reALU       = regexp.MustCompile(`^` + reReg + `\s*(\+|-|\*|/|%|&|\||\^|<<|>>|s>>|s/|s%)?=\s*(\S+)$`)
	reLoad      = regexp.MustCompile(`^r(\d+)\s*=\s*\*\(([us])(8|16|32|64)\s*\*\)\s*\(r(\d+)\s*([+-]\s*\d+)?\)$`)
	reStore     = regexp.MustCompile(`^\*\(u(8|16|32|64)\s*\*\)\s*\(r(\d+)\s*([+-]\s*\d+)?\)\s*=\s*(\S+)$`)
	reAtomic    = regexp.MustCompile(`^lock\s+\*\(u(32|64)\s*\*\)\s*\(r(\d+)\s*([+-]\s*\d+)?\)\s*(\+|&|\||\^)=\s*r(\d+)$`)
	reLdImm64   = regexp.MustCompile(`^r(\d+)\s*=\s*(\S+)\s+ll$`)
	reMap       = regexp.MustCompile(`^r(\d+)\s*=\s*map(_value)?\[([^\]]+)\](\s*\+\s*\d+)?$`)
	reCond      = regexp.MustCompile(`^if\s+` + reReg + `\s*(==|!=|>|>=|<|<=|s>|s>=|s<|s<=|&)\s*(\S+)\s+goto\s+(\S+)$`)
	reGoto      = regexp.MustCompile(`^goto\s+(\S+)$`)
	reCall      = regexp.MustCompile(`^call\s+([A-Za-z0-9_]+)(#\d+)?$`)
	reCallPC    = regexp.MustCompile(`^call\s+pc([+-]\d+)$`)
	reRaw       = regexp.MustCompile(`^(?:[0-9a-fA-F]{2}\s?){8}$`)
	reLabel     = regexp.MustCompile(`^([A-Za-z_.][A-Za-z0-9_.]*):$`)
)

var aluByText = map[string]asm.ALUOp{"": asm.Mov, "+": asm.Add, "-": asm.Sub, "*": asm.Mul, "/": asm.Div, "%": asm.Mod,
	"&": asm.And, "|": asm.Or, "^": asm.Xor, "<<": asm.LSh, ">>": asm.RSh, "s>>": asm.ArSh, "s/": asm.SDiv, "s%": asm.SMod}

var jmpByText = map[string]asm.JumpOp{"==": asm.JEq, "!=": asm.JNE, ">": asm.JGT, ">=": asm.JGE, "<": asm.JLT, "<=": asm.JLE,
	"s>": asm.JSGT, "s>=": asm.JSGE, "s<": asm.JSLT, "s<=": asm.JSLE, "&": asm.JSet}

var sizeByBits = map[string]asm.Size{"8": asm.Byte, "16": asm.Half, "32": asm.Word, "64": asm.DWord}

// textInsn is a parsed line whose jump target may still be a label.
type textInsn struct {
	ins   asm.Instruction
	label string // jump or call target label, resolved after all lines are read
	call  bool   // a bpf-to-bpf call: the target goes into imm, not off
	// kfunc: the call names no helper; without a label of that name it is a kfunc call
	// (BPF_PSEUDO_KFUNC_CALL) by name, resolved against the profile's BTF when checked.
	kfunc bool
}

// kfuncCallInsn calls the kfunc name: the model resolves it in the profile's BTF and the
// kernel backend sends it as a wire.KfuncRef, so a list stays portable across kernels.
func kfuncCallInsn(name string) asm.Instruction {
	ins := asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call), Src: asm.PseudoKfuncCall, Constant: -1}
	return ins.WithReference(name)
}

// ParseInstructions parses the text syntax into instructions; maps name the program's maps
// for "map[name]" references.
func ParseInstructions(lines []string, maps []Map) (asm.Instructions, error) {
	var out []textInsn
	labels := map[string]int{} // label -> raw instruction index
	raw := 0
	for n, line := range lines {
		line = strings.TrimSpace(line)
		if i := strings.Index(line, ";"); i >= 0 {
			line = strings.TrimSpace(line[:i]) // kernel log state suffix or a comment
		}
		line = reLogPrefix.ReplaceAllString(line, "") // "12: (79) " or llvm-objdump's "12: 79 12 ..."
		line = reObjdumpTo.ReplaceAllString(line, "") // llvm-objdump's "goto +1 <LBB0_2>"
		if line == "" {
			continue
		}
		if m := reLabel.FindStringSubmatch(line); m != nil {
			labels[m[1]] = raw
			continue
		}
		ti, err := parseLine(line, maps)
		if err != nil {
			return nil, fmt.Errorf("insn line %d %q: %w", n+1, line, err)
		}
		out = append(out, ti)
		raw += int(ti.ins.Size() / asm.InstructionSize)
	}
	var insns asm.Instructions
	raw = 0
	for _, ti := range out {
		if ti.label != "" {
			tgt, ok := labels[ti.label]
			if !ok && ti.kfunc {
				insns = append(insns, kfuncCallInsn(ti.label))
				raw++
				continue
			}
			if !ok {
				if ti.call {
					return nil, fmt.Errorf("call %s: no such helper, and no label %q", ti.label, ti.label)
				}
				return nil, fmt.Errorf("jump to unknown label %q", ti.label)
			}
			if ti.call {
				ti.ins.Constant = int64(tgt - raw - 1)
			} else {
				ti.ins.Offset = int16(tgt - raw - 1)
			}
		}
		insns = append(insns, ti.ins)
		raw += int(ti.ins.Size() / asm.InstructionSize)
	}
	return insns, nil
}

func regNum(s string) (asm.Register, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n > 10 {
		return 0, fmt.Errorf("bad register r%s", s)
	}
	return asm.Register(n), nil
}

func parseOff(s string) (int16, error) {
	s = strings.ReplaceAll(s, " ", "")
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 0, 16)
	return int16(v), err
}

func parseImm(s string) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	u, err := strconv.ParseUint(strings.TrimPrefix(s, "-"), 0, 64)
	if err != nil {
		return 0, fmt.Errorf("bad immediate %q", s)
	}
	if neg {
		return -int64(u), nil
	}
	return int64(u), nil
}

// jumpTarget parses "pc+N", "+N" or a label.
func jumpTarget(s string) (int16, string, error) {
	s = strings.TrimPrefix(s, "pc")
	if strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
		v, err := strconv.ParseInt(s, 10, 16)
		return int16(v), "", err
	}
	return 0, s, nil
}

func parseLine(line string, maps []Map) (textInsn, error) {
	if reRaw.MatchString(line) {
		b, err := hex.DecodeString(strings.ReplaceAll(line, " ", ""))
		if err != nil {
			return textInsn{}, err
		}
		ins := asm.Instruction{OpCode: asm.OpCode(b[0]), Dst: asm.Register(b[1] & 0xf), Src: asm.Register(b[1] >> 4),
			Offset: int16(binary.LittleEndian.Uint16(b[2:])), Constant: int64(int32(binary.LittleEndian.Uint32(b[4:])))}
		return textInsn{ins: ins}, nil
	}
	if line == "exit" {
		return textInsn{ins: asm.Return()}, nil
	}
	// A bpf-to-bpf call (BPF_PSEUDO_CALL) as the kernel log prints it, "call pc+N", or to a
	// label; imm counts raw instructions from the next one, as a jump's off does.
	pseudoCallInsn := asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call), Src: asm.PseudoCall}
	if m := reCallPC.FindStringSubmatch(line); m != nil {
		v, err := strconv.ParseInt(m[1], 10, 32)
		if err != nil {
			return textInsn{}, fmt.Errorf("call offset %s: %w", m[1], err)
		}
		pseudoCallInsn.Constant = v
		return textInsn{ins: pseudoCallInsn}, nil
	}
	if m := reCall.FindStringSubmatch(line); m != nil {
		if _, herr := helperID(m[1], ""); herr != nil && !unicode.IsDigit(rune(m[1][0])) {
			if n, _ := strconv.Atoi(strings.TrimPrefix(m[2], "#")); m[2] != "" && n >= helperIDLimit {
				// The log's "call bpf_task_acquire#BTF_ID": a kfunc, by name (the id is
				// the logging kernel's own).
				return textInsn{ins: kfuncCallInsn(m[1])}, nil
			}
			if m[2] == "" {
				// Not a helper: a subprogram's label, or else a kfunc.
				return textInsn{ins: pseudoCallInsn, label: m[1], call: true, kfunc: true}, nil
			}
		}
		id, err := helperID(m[1], m[2])
		if err != nil {
			return textInsn{}, err
		}
		return textInsn{ins: asm.BuiltinFunc(id).Call()}, nil
	}
	if m := reGoto.FindStringSubmatch(line); m != nil {
		off, lbl, err := jumpTarget(m[1])
		return textInsn{ins: asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Ja), Offset: off}, label: lbl}, err
	}
	if m := reCond.FindStringSubmatch(line); m != nil {
		dst, err := regNum(m[2])
		if err != nil {
			return textInsn{}, err
		}
		cls := asm.JumpClass
		if m[1] == "w" {
			cls = asm.Jump32Class
		}
		off, lbl, err := jumpTarget(m[5])
		if err != nil {
			return textInsn{}, err
		}
		op := asm.OpCode(cls).SetJumpOp(jmpByText[m[3]])
		ins := asm.Instruction{Dst: dst, Offset: off}
		if r := regexp.MustCompile(`^[rw](\d+)$`).FindStringSubmatch(m[4]); r != nil {
			src, err := regNum(r[1])
			if err != nil {
				return textInsn{}, err
			}
			ins.OpCode, ins.Src = op.SetSource(asm.RegSource), src
		} else {
			v, err := parseImm(m[4])
			if err != nil {
				return textInsn{}, err
			}
			ins.OpCode, ins.Constant = op.SetSource(asm.ImmSource), int64(int32(v))
		}
		return textInsn{ins: ins, label: lbl}, nil
	}
	if m := reLoad.FindStringSubmatch(line); m != nil {
		dst, err1 := regNum(m[1])
		src, err2 := regNum(m[4])
		off, err3 := parseOff(m[5])
		if err := firstErr(err1, err2, err3); err != nil {
			return textInsn{}, err
		}
		if m[2] == "s" {
			return textInsn{ins: asm.LoadMemSX(dst, src, off, sizeByBits[m[3]])}, nil
		}
		return textInsn{ins: asm.LoadMem(dst, src, off, sizeByBits[m[3]])}, nil
	}
	if m := reStore.FindStringSubmatch(line); m != nil {
		dst, err1 := regNum(m[2])
		off, err2 := parseOff(m[3])
		if err := firstErr(err1, err2); err != nil {
			return textInsn{}, err
		}
		size := sizeByBits[m[1]]
		if r := regexp.MustCompile(`^r(\d+)$`).FindStringSubmatch(m[4]); r != nil {
			src, err := regNum(r[1])
			if err != nil {
				return textInsn{}, err
			}
			return textInsn{ins: asm.StoreMem(dst, off, src, size)}, nil
		}
		v, err := parseImm(m[4])
		if err != nil {
			return textInsn{}, err
		}
		return textInsn{ins: asm.Instruction{OpCode: asm.StoreImmOp(size), Dst: dst, Offset: off, Constant: int64(int32(v))}}, nil
	}
	if m := reAtomic.FindStringSubmatch(line); m != nil {
		dst, err1 := regNum(m[2])
		off, err2 := parseOff(m[3])
		src, err3 := regNum(m[5])
		if err := firstErr(err1, err2, err3); err != nil {
			return textInsn{}, err
		}
		ops := map[string]asm.AtomicOp{"+": asm.AddAtomic, "&": asm.AndAtomic, "|": asm.OrAtomic, "^": asm.XorAtomic}
		op := asm.StoreXAddOp(sizeByBits[m[1]]).SetAtomicOp(ops[m[4]])
		return textInsn{ins: asm.Instruction{OpCode: op, Dst: dst, Src: src, Offset: off}}, nil
	}
	if m := reMap.FindStringSubmatch(line); m != nil {
		dst, err := regNum(m[1])
		if err != nil {
			return textInsn{}, err
		}
		idx := -1
		name := strings.TrimPrefix(m[3], "id:")
		for i, mp := range maps {
			if mp.Name == name {
				idx = i
			}
		}
		if n, err := strconv.Atoi(name); idx < 0 && err == nil {
			idx = n - 1 // map[id:N] as printed in logs: 1-based
		}
		if idx < 0 {
			return textInsn{}, fmt.Errorf("unknown map %q", m[3])
		}
		if m[2] != "" {
			off, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(m[4]), "+")))
			return textInsn{ins: asm.LoadMapValue(dst, idx, uint32(off))}, nil
		}
		return textInsn{ins: asm.LoadMapPtr(dst, idx)}, nil
	}
	if m := reLdImm64.FindStringSubmatch(line); m != nil {
		dst, err := regNum(m[1])
		if err != nil {
			return textInsn{}, err
		}
		v, err := parseImm(m[2])
		if err != nil {
			return textInsn{}, err
		}
		return textInsn{ins: asm.LoadImm(dst, v, asm.DWord)}, nil
	}
	if m := reNeg.FindStringSubmatch(line); m != nil {
		dst, err := regNum(m[2])
		if err != nil {
			return textInsn{}, err
		}
		cls := asm.ALU64Class
		if m[1] == "w" {
			cls = asm.ALUClass
		}
		return textInsn{ins: asm.Instruction{OpCode: asm.OpCode(cls).SetALUOp(asm.Neg), Dst: dst}}, nil
	}
	if m := reEndian.FindStringSubmatch(line); m != nil {
		dst, err := regNum(m[2])
		if err != nil {
			return textInsn{}, err
		}
		bits, _ := strconv.Atoi(m[4])
		var op asm.OpCode
		switch m[3] {
		case "le":
			op = asm.OpCode(asm.ALUClass).SetALUOp(asm.Swap).SetSource(asm.ImmSource)
		case "be":
			op = asm.OpCode(asm.ALUClass).SetALUOp(asm.Swap).SetSource(asm.RegSource)
		default:
			op = asm.OpCode(asm.ALU64Class).SetALUOp(asm.Swap)
		}
		return textInsn{ins: asm.Instruction{OpCode: op, Dst: dst, Constant: int64(bits)}}, nil
	}
	if m := reMovReg.FindStringSubmatch(line); m != nil {
		dst, err1 := regNum(m[2])
		src, err2 := regNum(m[6])
		if err := firstErr(err1, err2); err != nil {
			return textInsn{}, err
		}
		cls := asm.ALU64Class
		if m[1] == "w" {
			cls = asm.ALUClass
		}
		op := asm.Mov
		switch m[4] {
		case "8":
			op = asm.MovSX8
		case "16":
			op = asm.MovSX16
		case "32":
			op = asm.MovSX32
		}
		return textInsn{ins: asm.Instruction{OpCode: asm.OpCode(cls).SetALUOp(op).SetSource(asm.RegSource), Dst: dst, Src: src}}, nil
	}
	if m := reALU.FindStringSubmatch(line); m != nil {
		dst, err := regNum(m[2])
		if err != nil {
			return textInsn{}, err
		}
		cls := asm.ALU64Class
		if m[1] == "w" {
			cls = asm.ALUClass
		}
		op := asm.OpCode(cls).SetALUOp(aluByText[m[3]])
		if r := regexp.MustCompile(`^[rw](\d+)$`).FindStringSubmatch(m[4]); r != nil {
			src, err := regNum(r[1])
			if err != nil {
				return textInsn{}, err
			}
			return textInsn{ins: asm.Instruction{OpCode: op.SetSource(asm.RegSource), Dst: dst, Src: src}}, nil
		}
		v, err := parseImm(m[4])
		if err != nil {
			return textInsn{}, err
		}
		if v > 0x7fffffff || v < -0x80000000 {
			if m[3] == "" && m[1] == "r" {
				return textInsn{ins: asm.LoadImm(dst, v, asm.DWord)}, nil
			}
			if v > 0xffffffff {
				return textInsn{}, fmt.Errorf("immediate %d does not fit 32 bits", v)
			}
		}
		return textInsn{ins: asm.Instruction{OpCode: op.SetSource(asm.ImmSource), Dst: dst, Constant: int64(int32(v))}}, nil
	}
	return textInsn{}, fmt.Errorf("unrecognised instruction")
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// helperID resolves "bpf_map_lookup_elem", "map_lookup_elem", "bpf_x#N" or a number.
func helperID(name, num string) (int32, error) {
	if num != "" {
		n, err := strconv.Atoi(num[1:])
		return int32(n), err
	}
	if n, err := strconv.Atoi(name); err == nil {
		return int32(n), nil
	}
	want := name
	if !strings.HasPrefix(want, "bpf_") {
		want = "bpf_" + want
	}
	for id := int32(1); id < 212; id++ {
		if helperName(id) == want {
			return id, nil
		}
	}
	return 0, fmt.Errorf("unknown helper %q", name)
}

// helperIDLimit is the newest profile's __BPF_FUNC_MAX_ID (helpers.go maxFuncID): a
// "call NAME#N" with a larger N and a name no helper has is a kfunc's BTF id.
const helperIDLimit = 212
