package main

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// kernelMem reads kernel memory (memReader; tests fake it).
type kernelMem interface {
	read(addr uint64, n int) ([]byte, error)
	u64(addr uint64) (uint64, error)
}

// memChunk is the most one test run reads.
const memChunk = 4096

// memReader reads kernel memory: a SchedCLS program, run with BPF_PROG_TEST_RUN, copies
// memChunk bytes at most from an address given in a map with bpf_probe_read_kernel.
type memReader struct {
	prog     *ebpf.Program
	req, buf *ebpf.Map
}

func newMemReader() (*memReader, error) {
	// req value: u64 addr, u32 len, u32 pad, s64 helper result.
	req, err := ebpf.NewMap(&ebpf.MapSpec{Name: "tj_memreq", Type: ebpf.Array, KeySize: 4, ValueSize: 24, MaxEntries: 1})
	if err != nil {
		return nil, fmt.Errorf("create request map: %w", err)
	}
	buf, err := ebpf.NewMap(&ebpf.MapSpec{Name: "tj_membuf", Type: ebpf.Array, KeySize: 4, ValueSize: memChunk, MaxEntries: 1})
	if err != nil {
		req.Close()
		return nil, fmt.Errorf("create buffer map: %w", err)
	}
	insns := asm.Instructions{
		asm.StoreImm(asm.RFP, -4, 0, asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, req.FD()),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, buf.FD()),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.LoadMem(asm.R2, asm.R7, 8, asm.Word),
		asm.JGT.Imm(asm.R2, memChunk, "out"),
		asm.LoadMem(asm.R3, asm.R7, 0, asm.DWord),
		asm.FnProbeReadKernel.Call(),
		asm.StoreMem(asm.R7, 16, asm.R0, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "tj_memread", Type: ebpf.SchedCLS, License: "GPL", Instructions: insns})
	if err != nil {
		req.Close()
		buf.Close()
		return nil, fmt.Errorf("load the memory reader (bpf_probe_read_kernel from SchedCLS): %w", err)
	}
	return &memReader{prog: prog, req: req, buf: buf}, nil
}

// read returns n bytes of kernel memory at addr.
func (m *memReader) read(addr uint64, n int) ([]byte, error) {
	out := make([]byte, 0, n)
	for len(out) < n {
		c := min(n-len(out), memChunk)
		a := addr + uint64(len(out))
		v := make([]byte, 24)
		binary.LittleEndian.PutUint64(v[0:], a)
		binary.LittleEndian.PutUint32(v[8:], uint32(c))
		binary.LittleEndian.PutUint64(v[16:], 1) // sentinel: the program did not run
		if err := m.req.Put(uint32(0), v); err != nil {
			return nil, err
		}
		if _, err := m.prog.Run(&ebpf.RunOptions{Data: make([]byte, 64)}); err != nil {
			return nil, fmt.Errorf("test run of the memory reader: %w", err)
		}
		if err := m.req.Lookup(uint32(0), &v); err != nil {
			return nil, err
		}
		if r := int64(binary.LittleEndian.Uint64(v[16:])); r != 0 {
			return nil, fmt.Errorf("bpf_probe_read_kernel(%#x, %d) = %d", a, c, r)
		}
		b := make([]byte, memChunk)
		if err := m.buf.Lookup(uint32(0), &b); err != nil {
			return nil, err
		}
		out = append(out, b[:c]...)
	}
	return out, nil
}

func (m *memReader) u64(addr uint64) (uint64, error) {
	b, err := m.read(addr, 8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (m *memReader) Close() {
	m.prog.Close()
	m.req.Close()
	m.buf.Close()
}
