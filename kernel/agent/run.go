package main

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel/wire"
)

// Layout of one recording slot (one per program), in u64 words.
const (
	recCount = 0  // calls seen
	recNArgs = 1  // bpf_get_func_arg_cnt
	recArgs  = 2  // 12 words of bpf_get_func_arg
	recRet   = 14 // bpf_get_func_ret (fexit, fmod_ret)
	recIP    = 15 // bpf_get_func_ip (func_ip programs)
	recWords = 16
)

// newRecordMap holds one slot per program of a case.
func newRecordMap(n int) (*ebpf.Map, error) {
	return ebpf.NewMap(&ebpf.MapSpec{Name: "tj_rec", Type: ebpf.Array, KeySize: 4, ValueSize: 8 * recWords, MaxEntries: uint32(n)})
}

// recordInsns is a program that copies what it sees through the trampoline's context
// (argument count, arguments, return value, function IP) into slot idx of rec, and returns
// 0 (for fmod_ret and LSM: do not override). The helpers it uses are inlined by the
// verifier and do not change the trampoline; bpf_get_func_ip (func_ip) does, as requested.
func recordInsns(p jit.Prog, rec *ebpf.Map, idx int) asm.Instructions {
	in := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.StoreImm(asm.RFP, -4, int64(idx), asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, rec.FD()),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.LoadMem(asm.R1, asm.R7, 8*recCount, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R7, 8*recCount, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.FnGetFuncArgCnt.Call(),
		asm.StoreMem(asm.R7, 8*recNArgs, asm.R0, asm.DWord),
	}
	for i := 0; i < 12; i++ {
		in = append(in,
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Mov.Imm(asm.R2, int32(i)),
			asm.Mov.Reg(asm.R3, asm.R7),
			asm.Add.Imm(asm.R3, int32(8*(recArgs+i))),
			asm.FnGetFuncArg.Call(),
		)
	}
	if p.Kind == jit.Fexit || p.Kind == jit.ModRet {
		in = append(in,
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Mov.Reg(asm.R2, asm.R7),
			asm.Add.Imm(asm.R2, 8*recRet),
			asm.FnGetFuncRet.Call(),
		)
	}
	if p.FuncIP {
		in = append(in,
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.FnGetFuncIp.Call(),
			asm.StoreMem(asm.R7, 8*recIP, asm.R0, asm.DWord),
		)
	}
	return append(in, asm.Mov.Imm(asm.R0, 0).WithSymbol("out"), asm.Return())
}

// trigger loads an unattached program whose BPF_PROG_TEST_RUN calls fn: the tracing test
// run (net/bpf/test_run.c, bpf_prog_test_run_tracing) calls the bpf_fentry_test* functions
// for fentry/fexit programs and bpf_modify_return_test* for fmod_ret programs.
func trigger(fn string) (*ebpf.Program, error) {
	var at ebpf.AttachType
	var to string
	switch {
	case strings.HasPrefix(fn, "bpf_fentry_test"):
		at, to = ebpf.AttachTraceFEntry, "bpf_fentry_test1"
	case strings.HasPrefix(fn, "bpf_modify_return_test"):
		at, to = ebpf.AttachModifyReturn, fn
	default:
		return nil, fmt.Errorf("%s is not called by BPF_PROG_TEST_RUN", fn)
	}
	return ebpf.NewProgram(&ebpf.ProgramSpec{Name: "tj_trigger", Type: ebpf.Tracing, AttachType: at, AttachTo: to,
		License: "GPL", Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}})
}

// runCase triggers the traced function once and reads what each recording program saw. A
// BPF-program target is its own trigger.
func runCase(cs wire.Case, rec *ebpf.Map, target *ebpf.Program) *wire.Run {
	run := &wire.Run{}
	tp, opts := target, &ebpf.RunOptions{Data: make([]byte, 64)}
	if tp == nil {
		var err error
		if tp, err = trigger(cs.Func); err != nil {
			run.Error = "trigger: " + err.Error()
			return run
		}
		defer tp.Close()
		opts = &ebpf.RunOptions{}
	}
	ret, err := tp.Run(opts)
	run.Ret = uint64(ret)
	if err != nil {
		run.Error, run.Errno = err.Error(), errnoOf(err)
	}
	for i, p := range cs.Progs {
		v := make([]byte, 8*recWords)
		if err := rec.Lookup(uint32(i), &v); err != nil {
			run.Error = fmt.Sprintf("read recording %d: %v", i+1, err)
			return run
		}
		w := func(k int) uint64 { return binary.LittleEndian.Uint64(v[8*k:]) }
		pr := wire.RunProg{Kind: p.Kind, Calls: w(recCount), NArgs: w(recNArgs)}
		for a := 0; a < int(min(pr.NArgs, 12)); a++ {
			pr.Ctx = append(pr.Ctx, w(recArgs+a))
		}
		if p.Kind == jit.Fexit || p.Kind == jit.ModRet {
			r := w(recRet)
			pr.Ret = &r
		}
		if p.FuncIP {
			pr.IP = w(recIP)
		}
		run.Progs = append(run.Progs, pr)
	}
	return run
}
