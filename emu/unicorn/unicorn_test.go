//go:build cgo

package unicorn

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestRegistersAndMemory(t *testing.T) {
	for _, s := range allSnippets {
		t.Run(s.arch.String(), func(t *testing.T) {
			e := setup(t, s.arch, s.arith)
			haltAfter(t, e, s.arith)
			must(t, e.WriteRegs(s.a[:], []uint64{40, 2, dataBase + 8}))
			x, err := e.Run(codeBase, 0)
			must(t, err)
			if x.Reason != ReasonSentinel || x.Sentinel != codeBase+uint64(len(s.arith)-len(SentinelBytes(s.arch, SentinelHalt))) {
				t.Errorf("exit %+v", x)
			}
			if got := reg(t, e, s.res); got != 126 {
				t.Errorf("result = %d, want 126", got)
			}
			if got, err := e.ReadU64(dataBase + 8); err != nil || got != 42 {
				t.Errorf("memory = %d, %v; want 42", got, err)
			}
			// The engine is reused: a second run with other inputs.
			must(t, e.WriteRegs(s.a[:], []uint64{1, 1, dataBase}))
			_, err = e.Run(codeBase, 0)
			must(t, err)
			if got := reg(t, e, s.res); got != 6 {
				t.Errorf("second run result = %d, want 6", got)
			}
			// The fused form: registers in, run, registers out.
			out := make([]uint64, 2)
			x, err = e.RunRegs(codeBase, 0, s.a[:], []uint64{10, 20, dataBase}, []Reg{s.res, s.sp()}, out)
			must(t, err)
			if x.Reason != ReasonSentinel || out[0] != 90 || out[1] != stackTop-0x100 {
				t.Errorf("RunRegs: %+v, out %d", x, out)
			}
		})
	}
}

func TestGPRsRoundTrip(t *testing.T) {
	for _, c := range []struct {
		arch Arch
		regs []Reg
	}{{X86_64, X86GPRs[:]}, {ARM64, append(ARM64GPRs[:], SP, NZCV)}} {
		e := setup(t, c.arch, nil)
		want := make([]uint64, len(c.regs))
		for i := range want {
			want[i] = 0x1111111111111111 * uint64(i+1)
		}
		if c.arch == ARM64 {
			want[len(want)-1] = 0x60000000 // nzcv keeps only its flag bits
		}
		must(t, e.WriteRegs(c.regs, want))
		got := make([]uint64, len(c.regs))
		must(t, e.ReadRegs(c.regs, got))
		if !slices.Equal(got, want) {
			t.Errorf("%v batch round trip: got %#x want %#x", c.arch, got, want)
		}
		for i, r := range c.regs {
			if v := reg(t, e, r); v != want[i] {
				t.Errorf("%v reg %d = %#x, want %#x", c.arch, r, v, want[i])
			}
		}
	}
	if X(31) != SP || X(30) != X30 || X(0) != X0 {
		t.Error("X(n) mapping")
	}
}

func TestInvalidAccessReported(t *testing.T) {
	for _, s := range allSnippets {
		n := uint64(len(SentinelBytes(s.arch, SentinelHalt)))
		insn := uint64(4)
		if s.arch == X86_64 {
			insn = 3
		}
		cases := []struct {
			name   string
			a      [3]uint64 // load from, store to, call
			code   Code
			kind   Access
			addr   uint64
			pc     uint64
			size   int
			reason Reason
		}{
			{"read-unmapped", [3]uint64{unmapped + 8, dataBase, 0}, ErrReadUnmapped, ReadUnmapped, unmapped + 8, codeBase, 8, ReasonFault},
			{"write-unmapped", [3]uint64{dataBase, unmapped + 16, 0}, ErrWriteUnmapped, WriteUnmapped, unmapped + 16, codeBase + insn, 8, ReasonFault},
			{"write-readonly", [3]uint64{dataBase, roBase, 0}, ErrWriteProt, WriteProt, roBase, codeBase + insn, 8, ReasonFault},
			{"fetch-unmapped", [3]uint64{dataBase, dataBase, unmapped}, ErrFetchUnmapped, FetchUnmapped, unmapped, unmapped, 0, ReasonFault},
			{"fetch-noexec", [3]uint64{dataBase, dataBase, dataBase}, ErrFetchProt, FetchProt, dataBase, dataBase, 0, ReasonFault},
		}
		for _, c := range cases {
			t.Run(s.arch.String()+"/"+c.name, func(t *testing.T) {
				e := setup(t, s.arch, s.bad)
				must(t, e.SetPreciseFaults(true))
				must(t, e.AddSentinel(codeBase+uint64(len(s.bad))-n, SentinelHalt))
				must(t, e.WriteRegs(s.a[:], c.a[:]))
				x, err := e.Run(codeBase, 0)
				var ue *Error
				if !errors.As(err, &ue) || !errors.Is(err, c.code) {
					t.Fatalf("err = %v, want %v", err, c.code)
				}
				if x.Reason != c.reason {
					t.Errorf("reason %v, want %v", x.Reason, c.reason)
				}
				f := ue.Fault
				if f == nil {
					t.Fatalf("no fault in %v", err)
				}
				if f.Kind != c.kind || f.Addr != c.addr {
					t.Errorf("fault %v at %#x, want %v at %#x", f.Kind, f.Addr, c.kind, c.addr)
				}
				// Fetch faults report size 1 on x86 and 4 on arm64: not checked.
				if c.size != 0 && f.Size != c.size {
					t.Errorf("fault size %d, want %d", f.Size, c.size)
				}
				if f.PC != c.pc {
					t.Errorf("fault pc %#x, want %#x", f.PC, c.pc)
				}
				t.Log(err)
				// Without precise mode the pc may be the block's start.
				must(t, e.SetPreciseFaults(false))
				_, err = e.Run(codeBase, 0)
				if !errors.As(err, &ue) || ue.Fault == nil || ue.Fault.PC > c.pc || ue.Fault.PC < min(c.pc, codeBase) {
					t.Errorf("imprecise fault: %v", err)
				}
			})
		}
	}
}

func TestSentinels(t *testing.T) {
	for _, s := range allSnippets {
		for _, k := range []SentinelKind{SentinelHalt, SentinelTrap, SentinelHook} {
			t.Run(s.arch.String()+"/"+k.String(), func(t *testing.T) {
				// The loop snippet with its final halt replaced by sentinel k.
				code := slices.Clone(s.loop)
				at := codeBase + s.stubOff - uint64(len(SentinelBytes(s.arch, SentinelHalt)))
				e := setup(t, s.arch, code)
				if k == SentinelHook {
					// must never execute
					must(t, e.Write(at, SentinelBytes(s.arch, SentinelTrap)))
				}
				must(t, e.AddSentinel(at, k))
				must(t, e.WriteRegs([]Reg{s.res, s.loopCounter()}, []uint64{0, 5}))
				x, err := e.Run(codeBase, 0)
				must(t, err)
				if x.Reason != ReasonSentinel || x.Sentinel != at || x.PC != stopPC(s.arch, k, at) {
					t.Errorf("exit %+v, want sentinel %#x", x, at)
				}
				if got := reg(t, e, s.res); got != 5 {
					t.Errorf("stub ran %d times, want 5", got)
				}
			})
		}
		t.Run(s.arch.String()+"/not-a-sentinel", func(t *testing.T) {
			e := setup(t, s.arch, s.loop)
			must(t, e.WriteRegs([]Reg{s.res, s.loopCounter()}, []uint64{0, 1}))
			x, err := e.Run(codeBase, 0)
			if err == nil || x.Reason != ReasonHalt {
				t.Errorf("halt outside a sentinel: %+v, %v", x, err)
			}
			must(t, e.Write(codeBase, SentinelBytes(s.arch, SentinelTrap)))
			x, err = e.Run(codeBase, 0)
			var ue *Error
			if !errors.As(err, &ue) || ue.Intr == nil || x.Reason != ReasonIntr {
				t.Fatalf("trap outside a sentinel: %+v, %v", x, err)
			}
			want := uint32(3) // x86 #BP
			if s.arch == ARM64 {
				want = 7 // EXCP_BKPT
			}
			if ue.Intr.No != want {
				t.Errorf("intno %d, want %d", ue.Intr.No, want)
			}
		})
	}
}

func TestBudget(t *testing.T) {
	for _, s := range allSnippets {
		e := setup(t, s.arch, s.spin)
		x, err := e.Run(codeBase, 1000)
		if err == nil || x.Reason != ReasonBudget || x.PC != codeBase {
			t.Errorf("%v count: %+v, %v", s.arch, x, err)
		}
		x, err = e.Start(codeBase, 0, 2*time.Millisecond, 0)
		if err != nil || x.Reason != ReasonBudget {
			t.Errorf("%v timeout: %+v, %v", s.arch, x, err)
		}
		// until stops before the instruction at it.
		e2 := setup(t, s.arch, s.arith)
		must(t, e2.WriteRegs(s.a[:], []uint64{1, 2, dataBase}))
		x, err = e2.Start(codeBase, codeBase+uint64(len(s.arith))-uint64(len(SentinelBytes(s.arch, SentinelHalt))), 0, 0)
		if err != nil || x.Reason != ReasonUntil {
			t.Errorf("%v until: %+v, %v", s.arch, x, err)
		}
	}
}

// TestTimeoutRunEndsFirst: a run that ends long before its timeout returns when it ends,
// not at its deadline (the watchdog waited out the deadline before, a second a run in
// BenchmarkStartStop/*/halt+timeout).
func TestTimeoutRunEndsFirst(t *testing.T) {
	for _, s := range allSnippets {
		e := setup(t, s.arch, s.arith)
		must(t, e.AddSentinel(sentinelAt(s, s.arith), SentinelHalt))
		must(t, e.WriteRegs(s.a[:], []uint64{1, 2, dataBase}))
		done := make(chan error, 1)
		go func() {
			_, err := e.Start(codeBase, 0, time.Hour, 0)
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%v: %v", s.arch, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%v: a halting run with an hour's timeout has not returned after 30 s", s.arch)
		}
	}
}

func TestContextRoundTrip(t *testing.T) {
	for _, s := range allSnippets {
		e := setup(t, s.arch, s.arith)
		haltAfter(t, e, s.arith)
		must(t, e.WriteRegs(s.a[:], []uint64{7, 8, dataBase}))
		ctx, err := e.NewContext()
		must(t, err)
		if v, err := ctx.Reg(s.a[0]); err != nil || v != 7 {
			t.Errorf("%v saved a0 = %d, %v", s.arch, v, err)
		}
		_, err = e.Run(codeBase, 0)
		must(t, err)
		if got := reg(t, e, s.res); got != 45 {
			t.Fatalf("%v run result %d", s.arch, got)
		}
		must(t, ctx.Restore())
		got := make([]uint64, 3)
		must(t, e.ReadRegs(s.a[:], got))
		if !slices.Equal(got, []uint64{7, 8, dataBase}) {
			t.Errorf("%v restored %v", s.arch, got)
		}
		if sp := reg(t, e, s.sp()); sp != stackTop-0x100 {
			t.Errorf("%v restored sp %#x", s.arch, sp)
		}
		// Editing the saved state, then rerunning from it.
		must(t, ctx.SetReg(s.a[1], 1))
		must(t, ctx.Restore())
		_, err = e.Run(codeBase, 0)
		must(t, err)
		if got := reg(t, e, s.res); got != 24 {
			t.Errorf("%v run from edited context: %d", s.arch, got)
		}
		must(t, ctx.Free())
		if err := ctx.Restore(); !errors.Is(err, ErrClosed) {
			t.Errorf("restore after free: %v", err)
		}
	}
}

func TestCodeHookAddresses(t *testing.T) {
	for _, s := range allSnippets {
		e := setup(t, s.arch, s.loop)
		haltAfter(t, e, s.loop[:s.stubOff])
		stub := codeBase + s.stubOff
		var seen []uint64
		h, err := e.HookCode(stub, stub+s.stubLen-1, func(addr uint64, size uint32) {
			seen = append(seen, addr)
		})
		must(t, err)
		must(t, e.WriteRegs([]Reg{s.res, s.loopCounter()}, []uint64{0, 3}))
		_, err = e.Run(codeBase, 0)
		must(t, err)
		second := stub + 4 // both stubs are add (4 bytes) then ret
		want := []uint64{stub, second, stub, second, stub, second}
		if !slices.Equal(seen, want) {
			t.Errorf("%v hook saw %#x, want %#x", s.arch, seen, want)
		}
		must(t, e.Unhook(h))
		seen = nil
		must(t, e.WriteRegs([]Reg{s.res, s.loopCounter()}, []uint64{0, 3}))
		_, err = e.Run(codeBase, 0)
		must(t, err)
		if len(seen) != 0 {
			t.Errorf("%v removed hook still called: %#x", s.arch, seen)
		}
	}
}

func TestCountInsns(t *testing.T) {
	for _, s := range allSnippets {
		e := setup(t, s.arch, s.loop)
		haltAfter(t, e, s.loop[:s.stubOff])
		_, err := e.CountInsns(codeBase, codeBase+0xfff)
		must(t, err)
		must(t, e.WriteRegs([]Reg{s.res, s.loopCounter()}, []uint64{0, 10}))
		x, err := e.Run(codeBase, 0)
		must(t, err)
		// 5 instructions per iteration (call, add, ret, dec/subs, jnz) plus
		// the halt.
		if x.Count != 51 {
			t.Errorf("%v counted %d instructions, want 51", s.arch, x.Count)
		}
	}
}

func TestMemHooks(t *testing.T) {
	for _, s := range allSnippets {
		e := setup(t, s.arch, s.arith)
		haltAfter(t, e, s.arith)
		var writes []MemAccess
		_, err := e.HookMem(HookWrite, dataBase, dataBase+0xfff, func(m MemAccess) { writes = append(writes, m) })
		must(t, err)
		// Map the target page on demand from an invalid-access hook.
		_, err = e.HookMemInvalid(1, 0, func(m MemAccess) bool {
			return m.Kind == WriteUnmapped && e.Map(m.Addr&^(PageSize-1), PageSize, ProtRead|ProtWrite) == nil
		})
		must(t, err)
		must(t, e.WriteRegs(s.a[:], []uint64{3, 4, dataBase + 0x10}))
		_, err = e.Run(codeBase, 0)
		must(t, err)
		want := []MemAccess{{Kind: Write, Addr: dataBase + 0x10, Size: 8, Value: 7}}
		if !slices.Equal(writes, want) {
			t.Errorf("%v writes %+v, want %+v", s.arch, writes, want)
		}
		must(t, e.WriteRegs(s.a[:], []uint64{3, 4, unmapped}))
		_, err = e.Run(codeBase, 0)
		must(t, err)
		if v, err := e.ReadU64(unmapped); err != nil || v != 7 {
			t.Errorf("%v on-demand page holds %d, %v", s.arch, v, err)
		}
	}
}

func TestIntrHook(t *testing.T) {
	for _, s := range allSnippets {
		e := setup(t, s.arch, SentinelBytes(s.arch, SentinelTrap))
		var got []uint32
		h, err := e.HookIntr(func(intno uint32) {
			got = append(got, intno)
			e.Stop()
		})
		must(t, err)
		x, err := e.Run(codeBase, 0)
		if err != nil || x.Reason != ReasonStopped || len(got) != 1 {
			t.Errorf("%v: %+v %v %v", s.arch, x, err, got)
		}
		must(t, e.Unhook(h))
		if _, err := e.Run(codeBase, 0); !errors.Is(err, ErrException) {
			t.Errorf("%v after unhook: %v", s.arch, err)
		}
	}
}

func TestHookPanicIsReported(t *testing.T) {
	for _, s := range allSnippets {
		e := setup(t, s.arch, s.arith)
		haltAfter(t, e, s.arith)
		h, err := e.HookCode(codeBase, codeBase, func(uint64, uint32) { panic("boom") })
		must(t, err)
		must(t, e.SetReg(s.a[2], dataBase))
		x, err := e.Run(codeBase, 0)
		var p *PanicError
		if !errors.As(err, &p) || p.Value != "boom" || x.Reason != ReasonPanic {
			t.Fatalf("%v: %+v, %v", s.arch, x, err)
		}
		// The engine stays usable.
		must(t, e.Unhook(h))
		_, err = e.Run(codeBase, 0)
		must(t, err)
		// A hook that removes itself, then panics, is still reported.
		var self Hook
		self, err = e.HookCode(codeBase, codeBase, func(uint64, uint32) {
			e.Unhook(self)
			panic("after unhook")
		})
		must(t, err)
		if _, err = e.Run(codeBase, 0); !errors.As(err, &p) || p.Value != "after unhook" {
			t.Errorf("%v: self-unhooking panic: %v", s.arch, err)
		}
		// A panic in an invalid-memory hook declines the access.
		_, err = e.HookMemInvalid(1, 0, func(MemAccess) bool { panic("mem") })
		must(t, err)
		must(t, e.SetReg(s.a[2], unmapped))
		if _, err = e.Run(codeBase, 0); !errors.As(err, &p) || p.Value != "mem" {
			t.Errorf("%v: mem hook panic: %v", s.arch, err)
		}
		must(t, e.SetReg(s.a[2], dataBase))
	}
}

func TestMapHostAndRegions(t *testing.T) {
	for _, s := range allSnippets {
		e := setup(t, s.arch, s.arith)
		haltAfter(t, e, s.arith)
		buf, err := e.MapHost(0x60000, 0x2000, ProtRead|ProtWrite)
		must(t, err)
		must(t, e.WriteRegs(s.a[:], []uint64{5, 6, 0x61008}))
		_, err = e.Run(codeBase, 0)
		must(t, err)
		if v := binary.LittleEndian.Uint64(buf[0x1008:]); v != 11 {
			t.Errorf("%v host view holds %d", s.arch, v)
		}
		regs, err := e.Regions()
		must(t, err)
		if !slices.Contains(regs, Region{0x60000, 0x61fff, ProtRead | ProtWrite}) || !slices.Contains(regs, Region{roBase, roBase + 0xfff, ProtRead}) {
			t.Errorf("%v regions %+v", s.arch, regs)
		}
		if err := e.Unmap(0x60000, 0x1000); err == nil {
			t.Error("partial unmap of a host region accepted")
		}
		must(t, e.Unmap(0x60000, 0x2000))
		// A page made read-only by Protect faults on the store.
		must(t, e.Protect(dataBase, 0x1000, ProtRead))
		must(t, e.WriteRegs(s.a[:], []uint64{1, 2, dataBase}))
		if _, err := e.Run(codeBase, 0); !errors.Is(err, ErrWriteProt) {
			t.Errorf("%v store to protected page: %v", s.arch, err)
		}
	}
}

func TestOpenModel(t *testing.T) {
	for _, c := range []struct {
		arch  Arch
		model int
	}{{X86_64, X86Haswell}, {ARM64, ARM64CortexA72}, {ARM64, ARM64Max}} {
		e, err := OpenModel(c.arch, c.model)
		must(t, err)
		s := x86Snippets
		if c.arch == ARM64 {
			s = arm64Snippets
		}
		must(t, e.Map(codeBase, 0x1000, ProtAll))
		must(t, e.Write(codeBase, s.arith))
		must(t, e.AddSentinel(codeBase+uint64(len(s.arith)-len(SentinelBytes(c.arch, SentinelHalt))), SentinelHalt))
		must(t, e.WriteRegs(s.a[:], []uint64{1, 2, codeBase + 0x800}))
		_, err = e.Run(codeBase, 0)
		must(t, err)
		if c.arch == ARM64 {
			// EL1 (PSTATE.EL, bits 3:2), as in the kernel.
			if ps := reg(t, e, PSTATE); ps>>2&3 != 1 {
				t.Errorf("model %d: pstate %#x, not EL1", c.model, ps)
			}
		}
		must(t, e.Close())
	}
	if _, err := OpenModel(ARM64, 1000); !errors.Is(err, ErrArg) {
		t.Errorf("bad model: %v", err)
	}
	if v := Version(); v[:2] != "2." {
		t.Errorf("version %s", v)
	}
}

// TestHintsAreNops checks the default CPUs run CET/BTI/PAC hints as NOPs,
// as kernel images on non-CET, non-PAC machines expect.
func TestHintsAreNops(t *testing.T) {
	x86 := []byte{
		0xf3, 0x0f, 0x1e, 0xfa, // endbr64
		0x48, 0x89, 0xf8, // mov rax, rdi
		0xf4, // hlt
	}
	arm := a64(
		0xd503245f, // bti c
		0xd503233f, // paciasp
		0xaa1e03e9, // mov x9, x30
		0xd50323bf, // autiasp
		0xd503207f, // wfi
	)
	e := setup(t, X86_64, x86)
	haltAfter(t, e, x86)
	must(t, e.SetReg(RDI, 77))
	_, err := e.Run(codeBase, 0)
	must(t, err)
	if v := reg(t, e, RAX); v != 77 {
		t.Errorf("x86 rax %d", v)
	}
	e = setup(t, ARM64, arm)
	haltAfter(t, e, arm)
	must(t, e.SetReg(X30, 0x1234))
	_, err = e.Run(codeBase, 0)
	must(t, err)
	if x9, lr := reg(t, e, X9), reg(t, e, X30); x9 != 0x1234 || lr != 0x1234 {
		t.Errorf("arm64 x9 %#x lr %#x, want 0x1234 (PAC must be off)", x9, lr)
	}
}

func TestErrorsAndClose(t *testing.T) {
	e := setup(t, X86_64, nil)
	err := e.Map(0x1234, 0x1000, ProtAll)
	var ue *Error
	if !errors.As(err, &ue) || ue.Op != "mem_map" || !errors.Is(err, ErrArg) {
		t.Errorf("unaligned map: %v", err)
	}
	t.Log(err)
	if err := e.Map(codeBase, 0x1000, ProtAll); !errors.Is(err, ErrMap) {
		t.Errorf("overlapping map: %v", err)
	}
	_, err = e.HookCode(1, 0, func(uint64, uint32) {})
	must(t, err)
	_, err = e.NewContext()
	must(t, err)
	_, err = e.MapHost(0x70000, 0x1000, ProtRead)
	must(t, err)
	must(t, e.Close())
	if len(e.hooks) != 0 || len(e.contexts) != 0 || len(e.host) != 0 || e.st != nil {
		t.Error("Close left hooks, contexts, host maps or C state behind")
	}
	must(t, e.Close())
	if _, err := e.Reg(RAX); !errors.Is(err, ErrClosed) {
		t.Errorf("use after close: %v", err)
	}
	if _, err := e.Run(codeBase, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("run after close: %v", err)
	}
}
