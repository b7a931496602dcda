package emu

import (
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/jit/jittest"
	"github.com/trampjit/trampjit/kernel"
)

// x86Test2Frame is the frame of amd64's 7.2-fentry-fexit-test2 golden image, written by
// hand from its listing (testdata/golden/amd64, checked against the kernel corpus) and the
// layout arch_prepare_bpf_trampoline documents: the checker's fixed point, independent of
// any backend's Frame.
func x86Test2Frame() *jit.Frame {
	return &jit.Frame{Arch: "amd64", Base: "rbp", Size: 0x38, SPBase: 0x38, Slots: []jit.Slot{
		{Name: jit.SlotRetAddr, Off: 8, Size: 8, Readers: []int{0xdf}},
		{Name: jit.SlotSavedFP, Off: 0, Size: 8, Writers: []int{0x0}, Readers: []int{0xde}},
		{Name: jit.SlotRetval, Off: -0x8, Size: 8, Writers: []int{0x7e}, Readers: []int{0xd6}},
		{Name: "ctx[1] b", Off: -0x10, Size: 8, Writers: []int{0x19}, Readers: []int{0x75}},
		{Name: "ctx[0] a", Off: -0x18, Size: 8, Writers: []int{0x15}, Readers: []int{0x52, 0x71, 0xa8}},
		{Name: jit.SlotNrArgs, Off: -0x20, Size: 8, Writers: []int{0x11}},
		{Name: "saved rbx", Off: -0x28, Size: 8, Writers: []int{0x8}, Readers: []int{0xda}},
		{Name: jit.SlotRunCtxSaved, Off: -0x30, Size: 8, Note: "written by __bpf_prog_enter"},
		{Name: jit.SlotRunCtxCook, Off: -0x38, Size: 8, Writers: []int{0x33, 0x89}, Readers: []int{0x41, 0x68, 0x97, 0xbe}},
	}}
}

func x86Test2(t *testing.T) (*jit.Request, []byte, *FrameObservation) {
	t.Helper()
	for _, c := range jittest.Cases(btfmodel.AMD64) {
		if c.Name != "7.2-fentry-fexit-test2" {
			continue
		}
		req := c.Req
		img, _, err := Generate(&req)
		if err != nil {
			t.Fatal(err)
		}
		o, err := ObserveFrame(&req, img.Code, "rbp", Options{Clobber: true})
		if err != nil {
			t.Fatal(err)
		}
		return &req, img.Code, o
	}
	t.Fatal("jittest has no 7.2-fentry-fexit-test2 for amd64")
	return nil, nil, nil
}

// TestCheckFrameHandWritten: the hand-written frame agrees with the emulator, and every
// kind of error in it is caught.
func TestCheckFrameHandWritten(t *testing.T) {
	_, _, o := x86Test2(t)
	c := CheckFrame(x86Test2Frame(), o)
	if len(c.Mismatches) > 0 {
		t.Fatalf("the hand-written frame disagrees with the emulator: %v", c.Mismatches)
	}
	// 14 loads and stores of the image in its frame (the listing's rbp operands, push
	// rbp, leave and ret) and the patch site's call pushing the return address; the
	// image's 9 calls push theirs below its sp.
	if c.Accesses != 15 || c.Caller != 0 || o.Pushes != 9 || len(o.Accesses) != 14 {
		t.Errorf("accesses %d (%d the image's), caller %d, pushes %d; the listing has 14+1, 0 and 9 calls", c.Accesses, len(o.Accesses), c.Caller, o.Pushes)
	}
	slot := func(f *jit.Frame, name string) *jit.Slot {
		for i := range f.Slots {
			if f.Slots[i].Name == name {
				return &f.Slots[i]
			}
		}
		t.Fatalf("no slot %s", name)
		return nil
	}
	for _, m := range []struct {
		name, kind string
		mut        func(f *jit.Frame)
	}{
		{"ctx moved up", "pointer", func(f *jit.Frame) { slot(f, "ctx[0] a").Off = -0x20; slot(f, jit.SlotNrArgs).Off = -0x18 }},
		{"retval one slot off", "pointer", func(f *jit.Frame) { slot(f, jit.SlotRetval).Off = -0x40 }},
		{"run_ctx swapped", "pointer", func(f *jit.Frame) {
			slot(f, jit.SlotRunCtxCook).Off, slot(f, jit.SlotRunCtxSaved).Off = -0x30, -0x38
		}},
		{"a writer missing", "writers", func(f *jit.Frame) { slot(f, "ctx[1] b").Writers = nil }},
		{"a reader missing", "readers", func(f *jit.Frame) { slot(f, jit.SlotRetval).Readers = nil }},
		{"a writer that stores elsewhere", "declared", func(f *jit.Frame) {
			s := slot(f, jit.SlotNrArgs)
			s.Writers = append(s.Writers, 0x15)
		}},
		{"a 4-byte slot", "outside", func(f *jit.Frame) { slot(f, jit.SlotRetval).Size = 4 }},
		{"a 16-byte slot over two", "pointer", func(f *jit.Frame) {
			slot(f, "ctx[0] a").Size = 16
			f.Slots = append(f.Slots[:3], f.Slots[4:]...) // ctx[1] b
		}},
		{"a slot missing", "outside", func(f *jit.Frame) {
			f.Slots = f.Slots[:len(f.Slots)-1]
		}},
		{"sp_base off by 8", "sp_base", func(f *jit.Frame) { f.SPBase = 0x40 }},
		{"an unused slot without a note", "untouched", func(f *jit.Frame) {
			f.Slots = append(f.Slots, jit.Slot{Name: "cookie[0]", Off: -0x48, Size: 8})
		}},
	} {
		f := x86Test2Frame()
		m.mut(f)
		got := CheckFrame(f, o)
		found := false
		for _, x := range got.Mismatches {
			found = found || x.Kind == m.kind
		}
		if !found {
			t.Errorf("%s: no %q mismatch (got %v)", m.name, m.kind, got.Mismatches)
		}
	}
}

var frameBase = map[btfmodel.Arch]string{btfmodel.AMD64: "rbp", btfmodel.ARM64: "x29", btfmodel.RISCV64: "s0"}

// frameTally counts a frame check run per architecture.
type frameTally struct {
	cases, accesses, pointers, slots, narrow, mismatches, noFramer int
}

func checkImageFrame(t *testing.T, name string, req *jit.Request, code []byte, tr *jit.Tramp, img *jit.Image, n *frameTally) {
	t.Helper()
	f, err := jit.FrameOf(tr, img)
	if err != nil {
		t.Errorf("%s: Frame: %v", name, err)
		return
	}
	if f == nil {
		n.noFramer++
		return
	}
	// The plain call, then the other paths through the image: every fmod_ret program
	// returning non-zero (the original and the later fmod_ret skipped), the first program
	// missed for recursion (its call skipped). Only the plain call must touch every slot.
	m, err := req.Model()
	if err != nil {
		t.Fatal(err)
	}
	var ones []uint64
	for _, p := range req.Progs {
		if req.StructOps != nil || listOf(p.Kind, m) == jit.ModRet {
			ones = append(ones, 1)
		}
	}
	variants := []Options{{Clobber: true}, {Clobber: true, Miss: []int{0}}}
	if len(ones) > 0 {
		variants = append(variants, Options{Clobber: true, RetValues: ones})
	}
	n.cases++
	n.slots += len(f.Slots)
	for k, opts := range variants {
		o, err := ObserveFrame(req, code, f.Base, opts)
		if err != nil {
			t.Errorf("%s (%+v): %v", name, opts, err)
			return
		}
		c := CheckFrame(f, o)
		n.accesses += c.Accesses
		n.pointers += c.Pointers
		n.narrow += c.Narrow
		for _, m := range c.Mismatches {
			if k > 0 && m.Kind == "untouched" {
				continue
			}
			n.mismatches++
			t.Errorf("%s (%+v): %s", name, opts, m)
		}
	}
}

func (n *frameTally) log(t *testing.T, what string) {
	t.Helper()
	if n.noFramer > 0 && n.cases == 0 {
		t.Logf("%s: the backend describes no frames yet (not a jit.Framer): %d images not checked", what, n.noFramer)
		return
	}
	t.Logf("%s: %d images, %d slots, %d accesses (%d to part of a slot) and %d stub pointers checked, %d mismatches",
		what, n.cases, n.slots, n.accesses, n.narrow, n.pointers, n.mismatches)
}

// TestFrameGolden: for every golden case (jittest.Cases, testdata/golden/<arch>) of every
// architecture, the frame diagram's slots are where the image's loads and stores and the
// stubs' pointers land under the emulator.
func TestFrameGolden(t *testing.T) {
	for _, arch := range btfmodel.Arches {
		var n frameTally
		for _, c := range jittest.Cases(arch) {
			req := c.Req
			tr, img, err := jit.Generate(&req)
			if err != nil {
				t.Errorf("%s/%s: %v", arch, c.Name, err)
				continue
			}
			checkImageFrame(t, string(arch)+"/"+c.Name, &req, img.Code, tr, img, &n)
		}
		n.log(t, string(arch)+" golden")
	}
}

// TestFrameCorpus: the same over every captured image of every profile (tracing and
// struct_ops) that trampjit's image equals byte for byte, run as the kernel's bytes at the
// kernel's addresses; the model's frame is then the kernel's.
func TestFrameCorpus(t *testing.T) {
	dirs, _ := filepath.Glob("../testdata/kernel/*/cases.jsonl")
	if len(dirs) == 0 {
		t.Fatal("no corpus in testdata/kernel")
	}
	for _, d := range dirs {
		dir := filepath.Dir(d)
		cases, err := kernel.ReadCorpus(dir)
		if err != nil {
			t.Fatal(err)
		}
		var n frameTally
		differ, structOps := 0, 0
		for _, c := range cases {
			if c.Image == "" {
				continue
			}
			if c.Request.StructOps != nil {
				structOps++
			}
			c.Request.SetDir(dir)
			tr, img, err := jit.Generate(c.Request)
			if err != nil || hex.EncodeToString(img.Code) != strings.ToLower(c.Image) {
				differ++
				continue
			}
			checkImageFrame(t, filepath.Base(dir)+"/"+c.ID, c.Request, img.Code, tr, img, &n)
		}
		n.log(t, fmt.Sprintf("%s (%d of them struct_ops)", filepath.Base(dir), structOps))
		if differ > 0 {
			t.Logf("%s: %d images not byte-identical to trampjit's (or not generated): not checked here", filepath.Base(dir), differ)
		}
	}
}

// riscv64Golden72 mirrors riscv64's Cases72 (the requests of riscv64/testdata/golden-7.2,
// kept in that package's tests): the 7.2 shapes jittest keeps for x86_64 only.
func riscv64Golden72() []jittest.Case {
	s, sc := jit.Prog{Kind: jit.Fsession}, jit.Prog{Kind: jit.Fsession, SessionCookie: true}
	test2, modRet := "int bpf_fentry_test2(int a, u64 b)", "int bpf_modify_return_test(int a, int *b)"
	args12 := "int f(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f, u64 g, u64 h, u64 i, u64 j, u64 k, u64 l)"
	var out []jittest.Case
	add := func(name, proto string, progs ...jit.Prog) {
		out = append(out, jittest.Case{Name: "7.2-" + name, Req: jit.Request{Arch: btfmodel.RISCV64, Kernel: btfmodel.Kernel72, Proto: proto, Progs: progs}})
	}
	add("fsession-cookie-test2", test2, sc)
	add("fsession4-cookie3-test2", test2, sc, s, sc, sc)
	add("fsession-cookie-func-ip", test2, jit.Prog{Kind: jit.Fsession, SessionCookie: true, FuncIP: true}, jit.Prog{Kind: jit.Fentry})
	add("fsession-cookie-fmod_ret-fexit", modRet, sc, jit.Prog{Kind: jit.ModRet}, jit.Prog{Kind: jit.Fexit})
	add("fsession-cookie-args-12", args12, sc)
	add("args-12-fmod_ret-fexit", args12, jit.Prog{Kind: jit.ModRet}, jit.Prog{Kind: jit.Fexit})
	add("struct-straddle-stack", "struct pair { u64 a; u64 b; }; int f(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f, u64 g, struct pair p, u64 h)",
		jit.Prog{Kind: jit.Fentry}, jit.Prog{Kind: jit.Fexit})
	return out
}

// TestFrameGoldenRISCV64At72: the riscv64 7.2 goldens; the list must name every file there.
func TestFrameGoldenRISCV64At72(t *testing.T) {
	files, _ := filepath.Glob("../riscv64/testdata/golden-7.2/*.txt")
	cases := riscv64Golden72()
	names := map[string]bool{}
	for _, c := range cases {
		names[c.Name+".txt"] = true
	}
	for _, f := range files {
		if !names[filepath.Base(f)] {
			t.Errorf("%s has no request here: add it to riscv64Golden72", f)
		}
	}
	if len(files) != len(cases) {
		t.Errorf("%d golden files, %d requests", len(files), len(cases))
	}
	var n frameTally
	for _, c := range cases {
		req := c.Req
		tr, img, err := jit.Generate(&req)
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		checkImageFrame(t, "riscv64/"+c.Name, &req, img.Code, tr, img, &n)
	}
	n.log(t, "riscv64 golden-7.2")
}

// TestCheckFrameCatchesMovedSlots: on every architecture's golden images, moving any slot
// the image touches by one word, or dropping it, is a mismatch: the agreement above is not
// for want of looking.
func TestCheckFrameCatchesMovedSlots(t *testing.T) {
	for _, arch := range btfmodel.Arches {
		tried, caught := 0, 0
		for _, c := range jittest.Cases(arch) {
			req := c.Req
			tr, img, err := jit.Generate(&req)
			if err != nil {
				t.Fatal(err)
			}
			f, err := jit.FrameOf(tr, img)
			if err != nil || f == nil {
				break // logged by TestFrameGolden
			}
			o, err := ObserveFrame(&req, img.Code, f.Base, Options{Clobber: true})
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range f.Slots {
				if len(s.Writers) == 0 && len(s.Readers) == 0 {
					continue // touched by a stub alone, or a pad its Note explains
				}
				for k, mut := range []func(g *jit.Frame){
					func(g *jit.Frame) { g.Slots[i].Off += 8 },
					func(g *jit.Frame) { g.Slots[i].Off -= 8 },
					func(g *jit.Frame) { g.Slots = append(g.Slots[:i:i], g.Slots[i+1:]...) },
				} {
					g := *f
					g.Slots = append([]jit.Slot(nil), f.Slots...)
					mut(&g)
					tried++
					if len(CheckFrame(&g, o).Mismatches) > 0 {
						caught++
					} else {
						t.Errorf("%s/%s: slot %s %s, and nothing disagrees", arch, c.Name, s.Name, []string{"moved up", "moved down", "dropped"}[k])
					}
				}
			}
		}
		t.Logf("%s: %d of %d moved or dropped slots caught", arch, caught, tried)
	}
}

// TestFrameStructOpsGoldens: the struct_ops goldens each architecture keeps (their requests
// are in those packages' tests; the file names say them: profile, table, member and the
// variant: kcfi, fineibt, rethunk, bti, sleepable), at the synthetic addresses.
func TestFrameStructOpsGoldens(t *testing.T) {
	dirs := map[btfmodel.Arch]string{btfmodel.AMD64: "../amd64/testdata/structops", btfmodel.ARM64: "../arm64/testdata/golden-structops",
		btfmodel.RISCV64: "../riscv64/testdata/golden-struct_ops"}
	for _, arch := range btfmodel.Arches {
		files, _ := filepath.Glob(filepath.Join(dirs[arch], "*.txt"))
		if len(files) == 0 {
			t.Errorf("%s: no struct_ops goldens in %s", arch, dirs[arch])
		}
		var n frameTally
		for _, file := range files {
			name := strings.TrimSuffix(filepath.Base(file), ".txt")
			k, rest, _ := strings.Cut(name, "-")
			var ops, mem, variant string
			if arch == btfmodel.RISCV64 {
				p := strings.SplitN(rest, "-", 3)
				ops, mem = p[0], p[1]
				if len(p) > 2 {
					variant = p[2]
				}
			} else {
				var r string
				ops, r, _ = strings.Cut(rest, ".")
				mem, variant, _ = strings.Cut(r, "-")
			}
			kern, err := btfmodel.ParseKernel(k)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			req := &jit.Request{Arch: arch, Kernel: kern, BTF: filepath.Join("..", "testdata", "kernel", k+"-"+string(arch), "vmlinux.btf.xz"),
				StructOps: &jit.StructOps{Ops: ops, Member: mem}, Progs: []jit.Prog{{Kind: jit.StructOpsProg}}}
			req.Features.Zbb = arch == btfmodel.RISCV64
			for _, v := range strings.Split(variant, "-") {
				switch v {
				case "":
				case "kcfi", "fineibt":
					req.Features.CFI, req.Features.CFIHash = v, 0x9abcdef1
				case "rethunk":
					req.Features.Rethunk = true
				case "bti":
					req.Features.IBT = true
				case "sleepable":
					req.Progs[0].Sleepable = true
				case "call", "depth":
					req.Features.CallDepth = true
				default:
					t.Fatalf("%s: variant %q", file, v)
				}
			}
			if req.Features.CallDepth {
				// The synthetic struct_ops layout puts a helper at __x86_call_depth's
				// address: the per-CPU word gets a page of its own past the helpers.
				a := *Addrs(req)
				a.Helpers = map[string]jit.Addr{}
				var top jit.Addr
				for h, v := range Addrs(req).Helpers {
					a.Helpers[h] = v
					top = max(top, v)
				}
				a.Helpers["__x86_call_depth"] = (top + 0x2000) &^ 0xfff
				req.Addrs = &a
			}
			tr, img, err := jit.Generate(req)
			if err != nil {
				t.Errorf("%s: %v", file, err)
				continue
			}
			checkImageFrame(t, string(arch)+"/"+name, req, img.Code, tr, img, &n)
		}
		n.log(t, string(arch)+" struct_ops goldens")
	}
}
