package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// BPF-program targets: a case with Target "bpf" traces tj_argsN (N = 0..5), a global function
// of a SchedCLS program the agent loads itself. It takes N u64 arguments and returns their
// sum plus N; the main program calls it with targetArg(0..N-1) and returns its result, so
// BPF_PROG_TEST_RUN of the target calls the traced function once.
const targetPrefix = "tj_args"

func targetArg(i int) int32 { return int32(0x11 * (i + 1)) }

// targetArity parses "tj_argsN".
func targetArity(fn string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(fn, targetPrefix))
	if !strings.HasPrefix(fn, targetPrefix) || err != nil || n < 0 || n > 5 {
		return 0, fmt.Errorf("BPF target %q: want %s0 .. %s5", fn, targetPrefix, targetPrefix)
	}
	return n, nil
}

// loadTarget loads the target program for fn and returns it with the JITed address of fn
// (the target's second function).
func loadTarget(fn string) (*ebpf.Program, uint64, error) {
	n, err := targetArity(fn)
	if err != nil {
		return nil, 0, err
	}
	u64 := &btf.Int{Name: "unsigned long long", Size: 8}
	s32 := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	var params []btf.FuncParam
	for i := 0; i < n; i++ {
		params = append(params, btf.FuncParam{Name: fmt.Sprintf("a%d", i), Type: u64})
	}
	mainFn := &btf.Func{Name: "tj_target", Linkage: btf.GlobalFunc,
		Type: &btf.FuncProto{Return: s32, Params: []btf.FuncParam{{Name: "ctx", Type: &btf.Pointer{Target: &btf.Void{}}}}}}
	subFn := &btf.Func{Name: fn, Linkage: btf.GlobalFunc, Type: &btf.FuncProto{Return: s32, Params: params}}

	var insns asm.Instructions
	for i := 0; i < n; i++ {
		insns = append(insns, asm.Mov.Imm(asm.R1+asm.Register(i), targetArg(i)))
	}
	insns = append(insns, asm.Call.Label(fn), asm.Return())
	insns[0] = btf.WithFuncMetadata(insns[0], mainFn)
	body := asm.Instructions{asm.Mov.Imm(asm.R0, int32(n))}
	for i := 0; i < n; i++ {
		body = append(body, asm.Add.Reg(asm.R0, asm.R1+asm.Register(i)))
	}
	body = append(body, asm.Return())
	body[0] = btf.WithFuncMetadata(body[0].WithSymbol(fn), subFn)
	insns = append(insns, body...)

	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "tj_target", Type: ebpf.SchedCLS, License: "GPL", Instructions: insns})
	if err != nil {
		return nil, 0, fmt.Errorf("load the target program: %w", err)
	}
	info, err := prog.Info()
	if err != nil {
		prog.Close()
		return nil, 0, err
	}
	ks, ok := info.JitedKsymAddrs()
	if !ok || len(ks) < 2 {
		prog.Close()
		return nil, 0, fmt.Errorf("target program: no JITed address for %s (%d ksyms)", fn, len(ks))
	}
	return prog, uint64(ks[1]), nil
}
