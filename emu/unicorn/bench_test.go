//go:build cgo

package unicorn

import (
	"testing"
	"time"
)

// Run with: go test -run '^$' -bench . ./emu/unicorn/
// The short snippet is arith (4 instructions plus the sentinel).

func sentinelAt(s snippets, code []byte) uint64 {
	return codeBase + uint64(len(code)-len(SentinelBytes(s.arch, SentinelHalt)))
}

// BenchmarkStartStop is one bare run of the short snippet per op, for each
// way of ending it.
func BenchmarkStartStop(b *testing.B) {
	for _, s := range allSnippets {
		for _, k := range []SentinelKind{SentinelHalt, SentinelTrap, SentinelHook} {
			b.Run(s.arch.String()+"/"+k.String(), func(b *testing.B) {
				e := setup(b, s.arch, s.arith)
				at := sentinelAt(s, s.arith)
				must(b, e.AddSentinel(at, k))
				must(b, e.WriteRegs(s.a[:], []uint64{1, 2, dataBase}))
				for b.Loop() {
					if _, err := e.Run(codeBase, 0); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		// The alternatives the package doc warns about.
		b.Run(s.arch.String()+"/until", func(b *testing.B) {
			e := setup(b, s.arch, s.arith)
			must(b, e.WriteRegs(s.a[:], []uint64{1, 2, dataBase}))
			until := sentinelAt(s, s.arith)
			for b.Loop() {
				if x, err := e.Start(codeBase, until, 0, 0); err != nil || x.Reason != ReasonUntil {
					b.Fatal(x, err)
				}
			}
		})
		b.Run(s.arch.String()+"/halt+count", func(b *testing.B) {
			e := setup(b, s.arch, s.arith)
			must(b, e.AddSentinel(sentinelAt(s, s.arith), SentinelHalt))
			must(b, e.WriteRegs(s.a[:], []uint64{1, 2, dataBase}))
			for b.Loop() {
				if _, err := e.Run(codeBase, 1000); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(s.arch.String()+"/halt+timeout", func(b *testing.B) {
			e := setup(b, s.arch, s.arith)
			must(b, e.AddSentinel(sentinelAt(s, s.arith), SentinelHalt))
			must(b, e.WriteRegs(s.a[:], []uint64{1, 2, dataBase}))
			for b.Loop() {
				if _, err := e.Start(codeBase, 0, time.Second, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPerCall is what a per-call harness does around each run: write
// the arguments, run, read the result.
func BenchmarkPerCall(b *testing.B) {
	for _, s := range allSnippets {
		b.Run(s.arch.String()+"/separate", func(b *testing.B) {
			e := setup(b, s.arch, s.arith)
			must(b, e.AddSentinel(sentinelAt(s, s.arith), SentinelHalt))
			args := []uint64{1, 2, dataBase}
			res := []Reg{s.res, s.sp()}
			out := make([]uint64, 2)
			for b.Loop() {
				must(b, e.WriteRegs(s.a[:], args))
				if _, err := e.Run(codeBase, 0); err != nil {
					b.Fatal(err)
				}
				must(b, e.ReadRegs(res, out))
			}
		})
		b.Run(s.arch.String()+"/fused", func(b *testing.B) {
			e := setup(b, s.arch, s.arith)
			must(b, e.AddSentinel(sentinelAt(s, s.arith), SentinelHalt))
			args := []uint64{1, 2, dataBase}
			res := []Reg{s.res, s.sp()}
			out := make([]uint64, 2)
			for b.Loop() {
				if _, err := e.RunRegs(codeBase, 0, s.a[:], args, res, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoop runs the loop snippet: emulated code calls a stub n times
// per run, as a batch-mode harness would call a trampoline.
func BenchmarkLoop(b *testing.B) {
	const n = 100000
	for _, s := range allSnippets {
		for _, mode := range []string{"plain", "precise-faults", "count-hook", "go-code-hook"} {
			b.Run(s.arch.String()+"/"+mode, func(b *testing.B) {
				e := setup(b, s.arch, s.loop)
				must(b, e.AddSentinel(sentinelAt(s, s.loop[:s.stubOff]), SentinelHalt))
				stub := codeBase + s.stubOff
				hits := 0
				switch mode {
				case "precise-faults":
					must(b, e.SetPreciseFaults(true))
				case "count-hook":
					_, err := e.CountInsns(stub, stub)
					must(b, err)
				case "go-code-hook":
					_, err := e.HookCode(stub, stub, func(uint64, uint32) { hits++ })
					must(b, err)
				}
				b.ResetTimer()
				for b.Loop() {
					must(b, e.WriteRegs([]Reg{s.res, s.loopCounter()}, []uint64{0, n}))
					if _, err := e.Run(codeBase, 0); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "hits/s")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(n)*float64(b.N)), "ns/hit")
			})
		}
	}
}

// BenchmarkState covers the per-run state operations.
func BenchmarkState(b *testing.B) {
	for _, s := range allSnippets {
		e := setup(b, s.arch, s.arith)
		regs := s.a[:]
		vals := make([]uint64, len(regs))
		b.Run(s.arch.String()+"/context-save", func(b *testing.B) {
			c, err := e.NewContext()
			must(b, err)
			for b.Loop() {
				must(b, c.Save())
			}
		})
		b.Run(s.arch.String()+"/context-restore", func(b *testing.B) {
			c, err := e.NewContext()
			must(b, err)
			for b.Loop() {
				must(b, c.Restore())
			}
		})
		b.Run(s.arch.String()+"/reg-read-x3", func(b *testing.B) {
			for b.Loop() {
				for _, r := range regs {
					_, err := e.Reg(r)
					must(b, err)
				}
			}
		})
		b.Run(s.arch.String()+"/reg-read-batch3", func(b *testing.B) {
			for b.Loop() {
				must(b, e.ReadRegs(regs, vals))
			}
		})
		b.Run(s.arch.String()+"/write-64B", func(b *testing.B) {
			buf := make([]byte, 64)
			for b.Loop() {
				must(b, e.Write(dataBase, buf))
			}
		})
		b.Run(s.arch.String()+"/read-64B", func(b *testing.B) {
			buf := make([]byte, 64)
			for b.Loop() {
				must(b, e.Read(dataBase, buf))
			}
		})
	}
}

// BenchmarkMemAccess times one guest load or store per loop iteration
// (plus a decrement and a branch). Stores are ~30x slower than loads on
// libunicorn 2.0.x: every store takes the notdirty slow path (fixed
// upstream in 2.1.0, commit d0103576).
func BenchmarkMemAccess(b *testing.B) {
	const n = 100000
	for _, c := range []struct {
		name     string
		arch     Arch
		code     []byte
		ptr, cnt Reg
	}{
		// mov rax, [rdx]; dec rcx; jnz .-8; hlt
		{"x86_64/load", X86_64, []byte{0x48, 0x8b, 0x02, 0x48, 0xff, 0xc9, 0x75, 0xf8, 0xf4}, RDX, RCX},
		// mov [rdx], rax; dec rcx; jnz .-8; hlt
		{"x86_64/store", X86_64, []byte{0x48, 0x89, 0x02, 0x48, 0xff, 0xc9, 0x75, 0xf8, 0xf4}, RDX, RCX},
		// ldr x3, [x2]; subs x1, x1, #1; b.ne .-8; wfi
		{"arm64/load", ARM64, a64(0xf9400043, 0xf1000421, 0x54ffffc1, 0xd503207f), X2, X1},
		// str x3, [x2]; subs x1, x1, #1; b.ne .-8; wfi
		{"arm64/store", ARM64, a64(0xf9000043, 0xf1000421, 0x54ffffc1, 0xd503207f), X2, X1},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := setup(b, c.arch, c.code)
			haltAfter(b, e, c.code)
			must(b, e.SetReg(c.ptr, dataBase))
			for b.Loop() {
				must(b, e.SetReg(c.cnt, n))
				if _, err := e.Run(codeBase, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(n)*float64(b.N)), "ns/access")
		})
	}
}

// BenchmarkOpenClose is the cost the harness avoids by reusing one engine.
func BenchmarkOpenClose(b *testing.B) {
	for _, a := range []Arch{X86_64, ARM64} {
		b.Run(a.String(), func(b *testing.B) {
			for b.Loop() {
				e, err := Open(a)
				must(b, err)
				must(b, e.Map(codeBase, 0x1000, ProtAll)) // forces Unicorn's lazy init
				must(b, e.Close())
			}
		})
	}
}

// BenchmarkTrampShape loops over an x86_64 function shaped like a
// 2-program fentry trampoline: frame setup, argument saves, and per program
// calls to enter, the program and exit stubs: 33 instructions per hit, 12
// of them stores. It estimates batch-mode hits/s before the real images
// exist: stores dominate on libunicorn 2.0.x.
func BenchmarkTrampShape(b *testing.B) {
	const n = 100000
	code := []byte{
		0xe8, 0x06, 0x00, 0x00, 0x00, // loop: call tramp
		0x48, 0xff, 0xc9, // dec rcx
		0x75, 0xf6, // jnz loop
		0xf4,             // hlt
		0x55,             // tramp: push rbp
		0x48, 0x89, 0xe5, // mov rbp, rsp
		0x48, 0x83, 0xec, 0x30, // sub rsp, 0x30
		0x53,                   // push rbx
		0x48, 0x89, 0x7d, 0xf0, // mov [rbp-0x10], rdi
		0x48, 0x89, 0x75, 0xe8, // mov [rbp-0x18], rsi
		0x48, 0xc7, 0x45, 0xf8, 0x02, 0x00, 0x00, 0x00, // mov qword [rbp-8], 2
		0xe8, 0x2c, 0x00, 0x00, 0x00, // call enter
		0x48, 0x8d, 0x7d, 0xe8, // lea rdi, [rbp-0x18]
		0xe8, 0x29, 0x00, 0x00, 0x00, // call prog
		0xe8, 0x28, 0x00, 0x00, 0x00, // call exit
		0xe8, 0x19, 0x00, 0x00, 0x00, // call enter
		0x48, 0x8d, 0x7d, 0xe8, // lea rdi, [rbp-0x18]
		0xe8, 0x16, 0x00, 0x00, 0x00, // call prog
		0xe8, 0x15, 0x00, 0x00, 0x00, // call exit
		0x48, 0x8b, 0x7d, 0xf0, // mov rdi, [rbp-0x10]
		0x48, 0x8b, 0x75, 0xe8, // mov rsi, [rbp-0x18]
		0x5b,                         // pop rbx
		0xc9,                         // leave
		0xc3,                         // ret
		0xb8, 0x01, 0x00, 0x00, 0x00, // enter: mov eax, 1
		0xc3,             // ret
		0x48, 0x8b, 0x07, // prog: mov rax, [rdi]
		0xc3, // ret
		0xc3, // exit: ret
	}
	e := setup(b, X86_64, code)
	must(b, e.AddSentinel(codeBase+10, SentinelHalt))
	for b.Loop() {
		must(b, e.SetReg(RCX, n))
		if _, err := e.Run(codeBase, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "hits/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(n)*float64(b.N)), "ns/hit")
}
