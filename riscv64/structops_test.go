package riscv64

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/jit/jittest"
)

// The ops tables a riscv64 Debian kernel may register; StructOpsModel says which this one has.
var structOpsTables = []string{"tcp_congestion_ops", "bpf_dummy_ops", "sched_ext_ops", "sched_ext_ops_cid",
	"Qdisc_ops", "io_uring_bpf_ops", "hid_bpf_ops"}

func corpusBTF(k btfmodel.Kernel) string {
	return filepath.Join("..", "testdata", "kernel", string(k)+"-riscv64", "vmlinux.btf.xz")
}

// structOpsReq is a struct_ops request on the corpus kernel's BTF, on the corpora's Zbb CPU,
// at the synthetic addresses.
func structOpsReq(k btfmodel.Kernel, ops, member string) jit.Request {
	return jit.Request{Arch: btfmodel.RISCV64, Kernel: k, BTF: corpusBTF(k),
		StructOps: &jit.StructOps{Ops: ops, Member: member}, Progs: []jit.Prog{{Kind: jit.StructOpsProg}},
		Features: jit.Features{Zbb: true}}
}

// implementable lists every (ops, member) of k's BTF that BPF may implement.
func implementable(t *testing.T, k btfmodel.Kernel) [][2]string {
	t.Helper()
	spec, err := btfmodel.LoadFile(corpusBTF(k), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, ops := range structOpsTables {
		members, err := btfmodel.StructOpsMembers(spec, ops)
		if err != nil {
			continue // not in this kernel's BTF
		}
		for _, m := range members {
			so, err := btfmodel.StructOpsModel(spec, ops, m, k, btfmodel.RISCV64)
			if err != nil || !so.Verdict.OK {
				continue
			}
			out = append(out, [2]string{ops, m})
		}
	}
	return out
}

// StructOpsCases are the curated struct_ops shapes: every return width sign_extend
// distinguishes, void members, five arguments, a sleepable program, kCFI.
func StructOpsCases() []jittest.Case {
	var out []jittest.Case
	add := func(k btfmodel.Kernel, ops, member, variant string, edit func(*jit.Request)) {
		req := structOpsReq(k, ops, member)
		name := fmt.Sprintf("%s-%s-%s", k, ops, member)
		if variant != "" {
			name += "-" + variant
			edit(&req)
		}
		out = append(out, jittest.Case{Name: name, Req: req})
	}
	for _, k := range []btfmodel.Kernel{btfmodel.Kernel612, btfmodel.Kernel72} {
		add(k, "tcp_congestion_ops", "ssthresh", "", nil)   // u32 (struct sock *)
		add(k, "tcp_congestion_ops", "cong_avoid", "", nil) // void, three arguments
		add(k, "tcp_congestion_ops", "cong_control", "", nil)
		add(k, "tcp_congestion_ops", "min_tso_segs", "", nil)
		add(k, "tcp_congestion_ops", "init", "", nil) // void (struct sock *)
	}
	add(btfmodel.Kernel72, "tcp_congestion_ops", "ssthresh", "kcfi", func(r *jit.Request) {
		r.Features.CFI, r.Features.CFIHash = jit.CFIKCFI, 0x7b1c2d3e
	})
	add(btfmodel.Kernel72, "sched_ext_ops", "select_cpu", "", nil) // s32, three arguments
	add(btfmodel.Kernel72, "sched_ext_ops", "yield", "", nil)      // bool
	// s32 (*init)(void): no arguments; sleepable, as sched_ext schedulers load it
	add(btfmodel.Kernel72, "sched_ext_ops", "init", "sleepable", func(r *jit.Request) { r.Progs[0].Sleepable = true })
	add(btfmodel.Kernel72, "hid_bpf_ops", "hid_hw_request", "", nil) // riscv64's 7.2 build only: HID_BPF
	add(btfmodel.Kernel72, "Qdisc_ops", "enqueue", "", nil)
	add(btfmodel.Kernel72, "Qdisc_ops", "dequeue", "", nil) // a pointer: 8 bytes
	return out
}

// generateCase resolves and builds one request with the riscv64 backend.
func generateCase(t *testing.T, req *jit.Request) (*jit.Tramp, *jit.Image) {
	t.Helper()
	m, err := req.Model()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := jit.Resolve(req, m)
	if err != nil {
		t.Fatal(err)
	}
	img, err := Backend{}.Generate(tr)
	if err != nil {
		t.Fatal(err)
	}
	return tr, img
}

// TestGoldenStructOps keeps each curated struct_ops image's listing and frame diagram in
// testdata/golden-struct_ops. The bytes behind them are checked by TestStructOpsObjdump
// (GNU objdump) and, for the shapes the guests captured, by TestStructOpsCaptures.
func TestGoldenStructOps(t *testing.T) {
	dir := filepath.Join("testdata", "golden-struct_ops")
	for _, c := range StructOpsCases() {
		t.Run(c.Name, func(t *testing.T) {
			tr, img := generateCase(t, &c.Req)
			var buf bytes.Buffer
			if err := jit.WriteImage(&buf, tr, img, Disassembler{}, jit.Palette{}); err != nil {
				t.Fatal(err)
			}
			size, err := Backend{}.Size(tr)
			if err != nil {
				t.Fatal(err)
			}
			entry, err := Backend{}.EntryOffset(tr)
			if err != nil {
				t.Fatal(err)
			}
			p, _ := ProfileFor(tr.Kernel)
			l, err := Layout(p, tr.Model, tr.Flags, tr.CookieSlots)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&buf, "# ops pointer image+%d; arch_prepare_bpf_trampoline returns %d (the next member's image starts there)\n", entry, size)
			fmt.Fprintf(&buf, "# frame:\n%s", l.Diagram())
			path := filepath.Join(dir, c.Name+".txt")
			if *update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want, err := os.ReadFile(path); err != nil || !bytes.Equal(want, buf.Bytes()) {
				t.Errorf("%s differs from the generated listing (%v); if intended, rerun with -update and review\n%s", path, err, buf.String())
			}
		})
	}
}

// TestStructOpsObjdump builds every member BPF may implement in each corpus kernel's BTF
// and decodes the image with GNU objdump: one frame of the layout's size pushed with ra,
// the caller's s0 below it, every argument slot stored, the one program called between its
// enter and exit helpers (each address load computing its symbol), no bpf_tramp_image, no
// __bpf_tramp_enter/exit, no original, a0 derived from a5 by the member's return type, and
// jr ra back to the caller.
func TestStructOpsObjdump(t *testing.T) {
	for _, k := range []btfmodel.Kernel{btfmodel.Kernel612, btfmodel.Kernel72} {
		members := implementable(t, k)
		if len(members) < 12 { // 6.12: tcp_congestion_ops' 12 (bpf_dummy_ops is refused at map update)
			t.Fatalf("%s: only %d implementable members", k, len(members))
		}
		n := 0
		for _, om := range members {
			req := structOpsReq(k, om[0], om[1])
			tr, img := generateCase(t, &req)
			name := fmt.Sprintf("%s %s.%s", k, om[0], om[1])
			checkStructOpsImage(t, name, tr, img)
			n++
		}
		t.Logf("%s: %d struct_ops images read as intended by objdump", k, n)
	}
	for _, c := range StructOpsCases() {
		tr, img := generateCase(t, &c.Req)
		checkStructOpsImage(t, c.Name, tr, img)
	}
}

func checkStructOpsImage(t *testing.T, name string, tr *jit.Tramp, img *jit.Image) {
	t.Helper()
	entry := 0
	if tr.Features.CFI == jit.CFIKCFI {
		entry = KCFIWord
		if got := uint32(img.Code[0]) | uint32(img.Code[1])<<8 | uint32(img.Code[2])<<16 | uint32(img.Code[3])<<24; got != tr.Features.CFIHash {
			t.Errorf("%s: image starts with %#x, want the kCFI hash %#x", name, got, tr.Features.CFIHash)
		}
	}
	ins := gnuDecode(t, img.Code[entry:], img.Base+uint64(entry))
	at := map[int]int{}
	for i := range ins {
		ins[i].off += entry
		at[ins[i].off] = i
		if strings.HasPrefix(ins[i].op, ".") || ins[i].op == "unknown" {
			t.Fatalf("%s +%#x: objdump cannot decode: %s %v", name, ins[i].off, ins[i].op, ins[i].args)
		}
	}
	text := func(i int) string { return ins[i].op + " " + strings.Join(ins[i].args, ",") }
	p, _ := ProfileFor(tr.Kernel)
	l, err := Layout(p, tr.Model, tr.Flags, tr.CookieSlots)
	if err != nil {
		t.Fatal(err)
	}
	S := l.StackSize
	head := []string{fmt.Sprintf("sp,-%d", S), fmt.Sprintf("ra,%d(sp)", S-8), fmt.Sprintf("s0,%d(sp)", S-16), fmt.Sprintf("s0,sp,%d", S)}
	for i, w := range head {
		got := strings.Join(ins[i].args, ",")
		if i == 0 && ins[i].op == "addi" { // the 32-bit form names sp twice
			got = strings.Replace(got, "sp,sp,", "sp,", 1)
		}
		if got != w {
			t.Errorf("%s: prologue %d is %q, want %s", name, i, text(i), w)
		}
	}
	nIns := len(ins)
	tail := []string{"ra," + fmt.Sprint(S-8) + "(sp)", "s0," + fmt.Sprint(S-16) + "(sp)", fmt.Sprintf("sp,%d", S), "ra"}
	for i, w := range tail {
		j := nIns - len(tail) + i
		if got := strings.Join(ins[j].args, ","); got != w || (i == 3 && ins[j].op != "c.jr") {
			t.Errorf("%s: epilogue %d is %q, want %s", name, i, text(j), w)
		}
	}
	stores := 0
	for i := range ins {
		for s := 0; s < min(l.NArgs, MaxRegArgs); s++ {
			if text(i) == fmt.Sprintf("sd a%d,%d(s0)", s, -l.ArgOff(s)) {
				stores++
			}
		}
	}
	if stores != min(l.NArgs, MaxRegArgs) {
		t.Errorf("%s: %d of %d register argument slots stored", name, stores, min(l.NArgs, MaxRegArgs))
	}
	enter, exit := jit.EnterExit(tr.Kernel, tr.Fentry[0].Prog)
	calls := map[string]int{}
	for _, r := range img.Relocs {
		calls[r.Symbol]++
		want, ok := symAddr(tr, r.Symbol)
		if !ok {
			t.Fatalf("%s: reloc symbol %q unknown", name, r.Symbol)
		}
		i, ok := at[r.Offset]
		if !ok {
			t.Fatalf("%s: reloc %s at +%#x is not an instruction boundary", name, r.Symbol, r.Offset)
		}
		var got uint64
		switch in := ins[i]; {
		case r.Kind == jit.RelocImm64:
			got, _ = gnuImm(t, ins, i)
		case in.op == "jal" && in.args[0] == "ra":
			got = uint64(gnuNum(t, in.args[1]))
		case in.op == "auipc" && i+1 < len(ins) && ins[i+1].op == "jalr":
			lo := gnuNum(t, strings.TrimSuffix(ins[i+1].args[1], "(t1)"))
			got = img.Base + uint64(r.Offset) + uint64(gnuNum(t, in.args[1])<<12) + uint64(lo)
		default:
			t.Fatalf("%s +%#x: call to %s is %s", name, r.Offset, r.Symbol, text(i))
		}
		if got != want {
			t.Errorf("%s +%#x: %s reaches %#x, want %#x", name, r.Offset, r.Symbol, got, want)
		}
	}
	if len(calls) != 4 || calls[enter] != 1 || calls[exit] != 1 || calls["prog#1"] != 2 || calls["bpf_func#1"] != 1 {
		t.Errorf("%s: relocations %v, want %s, %s, prog#1 twice and bpf_func#1", name, calls, enter, exit)
	}
	// The return: ld a5 from its slot, then a0 from a5 (sign_extend) for a non-void member;
	// nothing for a void one.
	var ret []string
	for i := range ins {
		if text(i) == fmt.Sprintf("ld a5,%d(s0)", -(l.RetvalOff-8)) {
			for j := i + 1; j < nIns && ins[j].op != "ld"; j++ {
				ret = append(ret, text(j))
			}
		}
	}
	m := tr.Model
	var want []string
	switch signed := m.RetFlags&btfmodel.SignedArg != 0; {
	case m.RetSize == 0:
	case m.RetSize == 4:
		want = []string{"addiw a0,a5,0"}
	case m.RetSize == 8 || !signed:
		want = []string{"c.mv a0,a5"}
	case m.RetSize == 1:
		want = []string{".4byte " + gnuWord(t, "sext.b a0,a5")}
	case m.RetSize == 2:
		want = []string{".4byte " + gnuWord(t, "sext.h a0,a5")}
	}
	if strings.Join(ret, "; ") != strings.Join(want, "; ") {
		t.Errorf("%s (%d-byte return): a0 from a5 by %q, want %q", name, m.RetSize, ret, want)
	}
}

// TestStructOpsSize: what arch_prepare_bpf_trampoline returns for a struct_ops image, and
// so where bpf_struct_ops packs the next member, is the sizing pass's length: every call
// auipc+jalr. The real pass is shorter by 4 bytes for each call objdump reads as a jal
// (a target within 1 MiB); the kCFI word counts in both.
func TestStructOpsSize(t *testing.T) {
	for _, c := range StructOpsCases() {
		tr, img := generateCase(t, &c.Req)
		size, err := Backend{}.Size(tr)
		if err != nil {
			t.Fatal(err)
		}
		entry := 0
		if tr.Features.CFI == jit.CFIKCFI {
			entry = KCFIWord
		}
		jals := 0
		for _, in := range gnuDecode(t, img.Code[entry:], img.Base+uint64(entry)) {
			if in.op == "jal" {
				jals++
			}
		}
		if size != len(img.Code)+4*jals || size%2 != 0 {
			t.Errorf("%s: size %d, code %d bytes with %d jal", c.Name, size, len(img.Code), jals)
		}
		if got, err := (Backend{}).ImageSize(tr, img); err != nil || got != size {
			t.Errorf("%s: ImageSize %d (%v), Size %d", c.Name, got, err, size)
		}
		if got, err := (Backend{}).EntryOffset(tr); err != nil || got != entry {
			t.Errorf("%s: ops pointer at image+%d (%v), want +%d", c.Name, got, err, entry)
		}
	}
}

// TestStructOpsRefusals: a struct_ops Tramp bpf_struct_ops_prepare_trampoline could not have
// built is refused; a member with more than MAX_BPF_FUNC_ARGS arguments is -ENOTSUPP, as the
// tracing path refuses it.
func TestStructOpsRefusals(t *testing.T) {
	req := structOpsReq(btfmodel.Kernel612, "tcp_congestion_ops", "ssthresh")
	m, err := req.Model()
	if err != nil {
		t.Fatal(err)
	}
	build := func(edit func(*jit.Tramp)) error {
		tr, err := jit.Resolve(&req, m)
		if err != nil {
			t.Fatal(err)
		}
		edit(tr)
		_, err = Backend{}.Generate(tr)
		return err
	}
	if err := build(func(tr *jit.Tramp) { tr.Fexit = append(tr.Fexit, tr.Fentry[0]) }); err == nil || !strings.Contains(err.Error(), "one program, not 2") {
		t.Errorf("two programs: %v", err)
	}
	if err := build(func(tr *jit.Tramp) { tr.Flags |= jit.FlagCallOrig }); err == nil || !strings.Contains(err.Error(), "calls no original") {
		t.Errorf("CALL_ORIG: %v", err)
	}
	if err := build(func(tr *jit.Tramp) { tr.Features.CFI = jit.CFIFineIBT }); err == nil || !strings.Contains(err.Error(), "x86_64 only") {
		t.Errorf("fineibt: %v", err)
	}
	err = build(func(tr *jit.Tramp) {
		mm := *tr.Model
		mm.Args = append([]btfmodel.Arg(nil), u64Args(13)...)
		tr.Model = &mm
	})
	if !errors.Is(err, jit.ENOTSUPP) || !strings.Contains(err.Error(), "MAX_BPF_FUNC_ARGS") {
		t.Errorf("13 arguments: %v, want -ENOTSUPP", err)
	}
}

// TestStructOpsDiagram: the one-frame form names ra and the caller's s0 and no traced
// function.
func TestStructOpsDiagram(t *testing.T) {
	l := layoutFor(9, 0, jit.FlagIndirect|jit.FlagRetFentryRet)
	d := l.Diagram()
	for _, want := range []string{
		"[s0  +16]  read as stack argument slot 8 (the caller's is at s0+0)",
		"[s0   -8]  ra: return into the ops table's caller",
		"[s0  -16]  s0: the caller's frame pointer",
		"[s0  -24]  a5 after the program (BPF R0): the member's return value",
		"[s0 -104]  argument slot 0, ctx[0]",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("diagram lacks %q:\n%s", want, d)
		}
	}
	if strings.Contains(d, "traced function") {
		t.Errorf("struct_ops diagram mentions a traced function:\n%s", d)
	}
}
