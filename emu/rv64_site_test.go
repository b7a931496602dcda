package emu

import (
	"encoding/binary"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	uc "github.com/trampjit/trampjit/emu/unicorn"
	"github.com/trampjit/trampjit/jit"
)

// TestRV64SiteEntry calls the traced function's patch site and stops at the image's first
// instruction: with a direct call, through the CALL_OPS veneer (ftrace_caller's
// ld t1, -16(t0); ld t1, direct_call(t1); jr t1) and through the far veneer, the image is
// entered with t0 = the function + 8 and ra = its caller's return address (the entry
// contract of arch/riscv/kernel/mcount-dyn.S and bpf_jit_comp64.c's trampoline).
func TestRV64SiteEntry(t *testing.T) {
	const fn, caller = 0xffffffff80a1b2c0, 0x10000
	for _, c := range []struct {
		name       string
		image      uint64
		callOps    bool
		progTarget bool
	}{
		{"direct", 0xffffffff7800e000, false, false},
		{"call-ops", 0xffffffff7800e000, true, false},
		{"far", 0xffffffc000000000, false, false},
		{"bpf-prog", 0xffffffff80a1e000, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := uc.Open(uc.RISCV64)
			if err != nil {
				t.Skip(err)
			}
			defer e.Close()
			tg := rv64{}
			s := &siteSpec{fn: fn, ip: fn, image: c.image, ool: fn + 0x1000, callOps: c.callOps, progTarget: c.progTarget, retSize: 8}
			start, code, body, err := tg.site(s)
			if err != nil {
				t.Fatal(err)
			}
			if body != fn+8 {
				t.Errorf("body at %#x", body)
			}
			ps := []piece{{addr: start, code: code}, {addr: s.ool, code: tg.outOfLine(s)}, {addr: caller, code: rvasm(nil).li(rvT1, fn).w(rvJalr(rvRA, rvT1, 0), rvWfi)}}
			if at, data := tg.sitePrefix(s); len(data) > 0 {
				ps = append(ps, piece{addr: at, code: data})
			} else if c.callOps {
				t.Fatal("no ops pointer before the function")
			}
			ps = append(ps, piece{addr: c.image, code: rvasm(nil).w(rvWfi)})
			for _, r := range pageRuns(ps) {
				if err := e.Map(r[0], r[1], uc.ProtRead|uc.ProtExec); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range ps {
				if err := e.Write(p.addr, p.code); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.AddSentinel(c.image, uc.SentinelHalt); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Run(caller, 100); err != nil {
				t.Fatal(err)
			}
			t0, _ := e.Reg(uc.RVT0)
			ra, _ := e.Reg(uc.RVRA)
			if t0 != fn+8 || ra != caller+36 {
				t.Errorf("image entered with t0 %#x, ra %#x; want %#x, %#x", t0, ra, uint64(fn+8), uint64(caller+36))
			}
		})
	}
}

// TestRV64CallOpsLayout: a 7.2 kernel function gets the ftrace_ops pointer before it and a
// site that calls the ftrace_caller stand-in; 6.12's and a BPF program's call the image.
func TestRV64CallOpsLayout(t *testing.T) {
	h, err := NewHarness(btfmodel.RISCV64)
	if err != nil {
		t.Skip(err)
	}
	defer h.Close()
	for _, c := range []struct {
		kernel btfmodel.Kernel
		target string
		ops    bool
	}{{btfmodel.Kernel72, "", true}, {btfmodel.Kernel612, "", false}, {btfmodel.Kernel72, "bpf", false}} {
		req := &jit.Request{Arch: btfmodel.RISCV64, Kernel: c.kernel, Proto: "int f(int a)", Target: c.target,
			Progs: []jit.Prog{{Kind: jit.Fentry}}}
		m, err := req.Model()
		if err != nil {
			t.Fatal(err)
		}
		a := Addrs(req)
		_, pr, err := h.prepare(req, m, a, make([]byte, 64), Options{Trace: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var ops, site *piece
		for i := range pr.pieces {
			switch pr.pieces[i].name {
			case "ftrace_ops pointer":
				ops = &pr.pieces[i]
			case "traced function":
				site = &pr.pieces[i]
			}
		}
		if (ops != nil) != c.ops || ops != nil && ops.addr != uint64(a.Func)-8 {
			t.Errorf("%s %q: ops pointer %+v", c.kernel, c.target, ops)
		}
		// jalr t0's target: image, or the out-of-line veneer.
		hi := int64(int32(binary.LittleEndian.Uint32(site.code) & 0xfffff000))
		lo := int64(int32(binary.LittleEndian.Uint32(site.code[4:])) >> 20)
		if to := uint64(int64(site.addr) + hi + lo); (to == uint64(a.Image)) == c.ops {
			t.Errorf("%s %q: the site calls %#x (image %#x)", c.kernel, c.target, to, uint64(a.Image))
		}
	}
}
