package arm64_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/arm64"
	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/kernel/wire"
)

// soRequest is a struct_ops request for ops.member on kernel k's corpus BTF, at the synthetic
// addresses.
func soRequest(k btfmodel.Kernel, ops, member string) *jit.Request {
	return &jit.Request{Arch: btfmodel.ARM64, Kernel: k, BTF: "../testdata/kernel/" + string(k) + "-arm64/vmlinux.btf.xz",
		StructOps: &jit.StructOps{Ops: ops, Member: member}, Progs: []jit.Prog{{Kind: jit.StructOpsProg}}}
}

// soExpect writes the instruction sequence prepare_trampoline emits for a struct_ops link, read
// from arch/arm64/net/bpf_jit_comp.c (is_struct_ops_tramp's one frame and ret x30; Debian's 6.1
// has it too, as its capture shows, with 6.1's indirect calls; 7.2: orr moves, the W-form count,
// the program block's leading NOP), one GNU as statement per line.
// "bl FUNC" lines are resolved by asmWords to the pc-relative offset of their line.
func soExpect(k btfmodel.Kernel, tr *jit.Tramp, nargs int, saveRet bool) string {
	var b strings.Builder
	line := func(f string, a ...any) { fmt.Fprintf(&b, f+"\n", a...) }
	v72, v61 := k == btfmodel.Kernel72, k == btfmodel.Kernel61
	mov := func(d, n string) { // A64_MOV: orr on 7.2 unless sp is involved
		if v72 && d != "sp" && n != "sp" {
			line("orr %s, xzr, %s", d, n)
		} else {
			line("add %s, %s, #0", d, n)
		}
	}
	addr := func(reg string, v uint64) { // emit_addr_mov_i64
		line("movn %s, #%#x", reg, ^uint16(v))
		line("movk %s, #%#x, lsl #16", reg, uint16(v>>16))
		line("movk %s, #%#x, lsl #32", reg, uint16(v>>32))
	}
	call := func(v uint64) { // emit_call: bl in reach on 6.12+, else through x10
		if !v61 {
			if off := int64(v - tr.Image); off > -(128<<20) && off < 128<<20 {
				line("bl %#x", v)
				return
			}
		}
		addr("x10", v)
		line("blr x10")
	}
	args, retval := 24, 24+8*nargs
	regs := retval
	if saveRet {
		regs += 8
	}
	stack := (regs + 16 + 15) &^ 15
	if tr.Features.CFI == jit.CFIKCFI && v72 {
		line(".word %#x", tr.Features.CFIHash)
	}
	if tr.Features.IBT {
		line("bti jc")
	}
	line("stp x29, x30, [sp, #-16]!")
	mov("x29", "sp")
	line("sub sp, sp, #%d", stack)
	if v72 {
		line("movz w10, #%d", nargs)
	} else {
		line("movz x10, #%d", nargs)
	}
	line("str x10, [sp, #16]")
	for i := 0; i < nargs; i++ {
		line("str x%d, [sp, #%d]", i, args+8*i)
	}
	line("str x19, [sp, #%d]", regs)
	line("str x20, [sp, #%d]", regs+8)
	pr := tr.Fentry[0]
	enter, exit := jit.EnterExit(k, pr.Prog)
	if v72 {
		line("nop")
	}
	line("str xzr, [sp, #0]")
	addr("x19", pr.Addr)
	mov("x0", "x19")
	mov("x1", "sp")
	call(tr.Helpers[enter])
	mov("x20", "x0")
	line("cbz x0, 1f")
	line("add x0, sp, #%d", args)
	call(pr.BPFFunc)
	if saveRet {
		line("str x0, [sp, #%d]", retval)
	}
	b.WriteString("1:\n")
	mov("x0", "x19")
	mov("x1", "x20")
	mov("x2", "sp")
	call(tr.Helpers[exit])
	line("ldr x19, [sp, #%d]", regs)
	line("ldr x20, [sp, #%d]", regs+8)
	if saveRet {
		line("ldr x0, [sp, #%d]", retval)
	}
	mov("sp", "x29")
	line("ldp x29, x30, [sp], #16")
	line("ret x30")
	return b.String()
}

// asmWords assembles src with GNU as at base: "bl ADDR" becomes "bl .+(ADDR-pc)" by counting
// the statements before it (one word each; labels take none).
func asmWords(t *testing.T, src string, base uint64) []uint32 {
	t.Helper()
	var out []string
	pc := base
	for _, l := range strings.Split(strings.TrimSpace(src), "\n") {
		if strings.HasSuffix(l, ":") {
			out = append(out, l)
			continue
		}
		var target uint64
		if n, _ := fmt.Sscanf(l, "bl %v", &target); n == 1 {
			l = fmt.Sprintf("bl .%+d", int64(target-pc))
		}
		out = append(out, l)
		pc += 4
	}
	return arm64.GNUAs(t, strings.Join(out, "\n"))
}

func words(code []byte) []uint32 {
	w := make([]uint32, len(code)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(code[4*i:])
	}
	return w
}

// TestStructOpsGNUAs: every profile's struct_ops image for a non-void (RET_FENTRY_RET) and a
// void member, with and without the landing sequence, equals the kernel's sequence as GNU as
// encodes it.
func TestStructOpsGNUAs(t *testing.T) {
	for _, c := range []struct {
		k         btfmodel.Kernel
		ops, mem  string
		nargs     int
		ret       bool
		ibt, kcfi bool
	}{
		{btfmodel.Kernel61, "tcp_congestion_ops", "ssthresh", 1, true, false, false},
		{btfmodel.Kernel61, "tcp_congestion_ops", "cong_avoid", 3, false, false, false},
		{btfmodel.Kernel61, "tcp_congestion_ops", "pkts_acked", 2, false, true, false},
		{btfmodel.Kernel612, "tcp_congestion_ops", "ssthresh", 1, true, false, false},
		{btfmodel.Kernel612, "tcp_congestion_ops", "cong_avoid", 3, false, false, false},
		{btfmodel.Kernel612, "tcp_congestion_ops", "cong_avoid", 3, false, true, true}, // no kCFI word before 6.18
		{btfmodel.Kernel72, "tcp_congestion_ops", "ssthresh", 1, true, false, false},
		{btfmodel.Kernel72, "tcp_congestion_ops", "cong_avoid", 3, false, true, true},
		{btfmodel.Kernel72, "sched_ext_ops", "enqueue", 2, false, false, true},
		{btfmodel.Kernel72, "sched_ext_ops", "select_cpu", 3, true, true, false},
	} {
		name := fmt.Sprintf("%s-%s.%s-ibt=%v-kcfi=%v", c.k, c.ops, c.mem, c.ibt, c.kcfi)
		t.Run(name, func(t *testing.T) {
			req := soRequest(c.k, c.ops, c.mem)
			req.Features.IBT = c.ibt
			if c.kcfi {
				req.Features.CFI, req.Features.CFIHash = jit.CFIKCFI, 0x3b9aca07
			}
			tr, img, err := jit.Generate(req)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Model.NrArgs() != c.nargs || (tr.Model.RetSize > 0) != c.ret {
				t.Fatalf("model %s: %d args, ret %d; the test expects %d args, ret %v", tr.Model.Prototype(), tr.Model.NrArgs(), tr.Model.RetSize, c.nargs, c.ret)
			}
			want := asmWords(t, soExpect(c.k, tr, c.nargs, c.ret), tr.Image)
			got := words(img.Code)
			for i := 0; i < max(len(got), len(want)); i++ {
				var g, w uint32
				if i < len(got) {
					g = got[i]
				}
				if i < len(want) {
					w = want[i]
				}
				if g != w {
					t.Fatalf("word %d (offset %#x): model %08x, GNU as %08x (model %d words, as %d)\n%s", i, 4*i, g, w, len(got), len(want), soExpect(c.k, tr, c.nargs, c.ret))
				}
			}
		})
	}
}

// TestStructOpsKCFI: the kCFI word cannot be captured here (Debian builds arm64 with GCC, no
// CONFIG_CFI_CLANG), so it is checked against the source: emit_kcfi writes the hash as the
// image's first word, before bti jc, only for INDIRECT images and only from the release that
// added it (btfmodel.CapArm64KCFI); cfi_get_offset() = 4 moves the ops table's pointer past it.
func TestStructOpsKCFI(t *testing.T) {
	const hash = 0xd4202000 // AARCH64_BREAK_FAULT: validate_code refuses an image holding it
	req := soRequest(btfmodel.Kernel72, "tcp_congestion_ops", "cong_avoid")
	plain, err := packOf(req)
	if err != nil {
		t.Fatal(err)
	}
	req.Features.CFI, req.Features.CFIHash = jit.CFIKCFI, 0x87654321
	withCFI, err := packOf(req)
	if err != nil {
		t.Fatal(err)
	}
	if withCFI.pk.Len != plain.pk.Len+4 || withCFI.pk.Size != plain.pk.Size+4 || withCFI.pk.Entry != 4 || plain.pk.Entry != 0 {
		t.Errorf("kCFI packing %+v, without %+v: want 4 more bytes, entry 4", withCFI.pk, plain.pk)
	}
	if got := withCFI.img.Code[:4]; string(got) != "\x21\x43\x65\x87" {
		t.Errorf("first word % x, want the hash little-endian", got)
	}
	if s := withCFI.img.Sections[0]; s.Name != arm64.SecCFI || s.Start != 0 || s.End != 4 || !s.Data {
		t.Errorf("first section %+v, want the cfi data word", s)
	}
	// The rest is the image without kCFI, 4 bytes later: bl offsets are pc-relative, and a call
	// that stays in reach encodes the same.
	if a, b := withCFI.img.Code[4:], plain.img.Code; len(a) != len(b) {
		t.Errorf("%d bytes after the word, %d without kCFI", len(a), len(b))
	}
	req.Features.CFIHash = hash
	if _, _, err := jit.Generate(req); !isErrno(err, jit.EINVAL) {
		t.Errorf("hash %#x: %v, want validate_code's EINVAL", hash, err)
	}
	for _, k := range []btfmodel.Kernel{btfmodel.Kernel61, btfmodel.Kernel612} {
		req := soRequest(k, "tcp_congestion_ops", "cong_avoid")
		req.Features.CFI, req.Features.CFIHash = jit.CFIKCFI, 0x87654321
		pk, err := packOf(req)
		if err != nil {
			t.Fatal(err)
		}
		if pk.pk.Entry != 0 || string(pk.img.Code[:4]) == "\x21\x43\x65\x87" {
			t.Errorf("%s has no arm64 emit_kcfi, got entry %d, first word % x", k, pk.pk.Entry, pk.img.Code[:4])
		}
	}
}

type packed struct {
	pk  arm64.Packing
	img *jit.Image
}

func packOf(req *jit.Request) (packed, error) {
	m, err := req.Model()
	if err != nil {
		return packed{}, err
	}
	tr, err := jit.Resolve(req, m)
	if err != nil {
		return packed{}, err
	}
	pk, img, err := arm64.Backend{}.Pack(tr)
	return packed{pk, img}, err
}

func isErrno(err error, e jit.Errno) bool { return errors.Is(err, e) }

// soTramp is a hand-built struct_ops Tramp for a member with n u64 arguments and a u64 return:
// no table the corpora hold has a member with more than eight argument slots.
func soTramp(t *testing.T, k btfmodel.Kernel, n int) *jit.Tramp {
	t.Helper()
	params := make([]string, n)
	for i := range params {
		params[i] = fmt.Sprintf("u64 a%d", i)
	}
	req := jit.Request{Arch: btfmodel.ARM64, Kernel: k, Proto: "u64 member(" + strings.Join(params, ", ") + ")", Progs: []jit.Prog{{Kind: jit.Fentry}}}
	m, err := req.Model()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := jit.Resolve(&req, m)
	if err != nil {
		t.Fatal(err)
	}
	tr.StructOps = &jit.StructOps{Ops: "test_ops", Member: "member"}
	tr.Flags = jit.Flags(btfmodel.StructOpsFlags(m, k))
	tr.Fentry[0].Prog.Kind = jit.StructOpsProg
	tr.Func, tr.IP, tr.IM = 0, 0, 0
	return tr
}

// TestStructOpsStackArgs: a member with more than eight argument slots. 6.12's JIT refuses it
// as it refuses a tracing target (-ENOTSUPP); 7.2's save_args copies the stack arguments from
// x29+16, above the one frame record (tracing: x29+32, above two).
func TestStructOpsStackArgs(t *testing.T) {
	if _, err := (arm64.Backend{}).Generate(soTramp(t, btfmodel.Kernel612, 9)); !isErrno(err, jit.ENOTSUPP) {
		t.Errorf("6.12, 9 slots: %v, want ENOTSUPP", err)
	}
	if _, err := (arm64.Backend{}).Generate(soTramp(t, btfmodel.Kernel61, 9)); !isErrno(err, jit.ENOTSUPP) {
		t.Errorf("6.1, 9 slots: %v, want ENOTSUPP", err)
	}
	tr := soTramp(t, btfmodel.Kernel72, 11)
	img, err := arm64.Backend{}.Generate(tr)
	if err != nil {
		t.Fatal(err)
	}
	// After the eight register stores: ldr x10, [x29, #16+8k]; str x10, [sp, #args+8(8+k)].
	want := arm64.GNUAs(t, "ldr x10, [x29, #16]\nstr x10, [sp, #88]\nldr x10, [x29, #24]\nstr x10, [sp, #96]\nldr x10, [x29, #32]\nstr x10, [sp, #104]\nstr x19, [sp, #120]")
	got := words(img.Code)
	at := -1
	for i := range got {
		if got[i] == want[0] {
			at = i
			break
		}
	}
	if at < 0 || at+len(want) > len(got) {
		t.Fatalf("no ldr x10, [x29, #16] in the image")
	}
	for i, w := range want {
		if got[at+i] != w {
			t.Errorf("stack-argument copy word %d: %08x, GNU as %08x", i, got[at+i], w)
		}
	}
}

// TestStructOpsPackTable lays a whole tcp_congestion_ops table out as the kernel packs it: each
// member's image starts where the previous one's code ended (not at its sizing-pass size), a
// member whose sizing pass does not fit in the rest of the page starts the next page (6.12+), and
// 6.1's single page refuses with -EFBIG.
func TestStructOpsPackTable(t *testing.T) {
	members := []string{"ssthresh", "cong_avoid", "set_state", "cwnd_event", "in_ack_event", "pkts_acked", "min_tso_segs", "cong_control", "undo_cwnd", "sndbuf_expand", "init", "release"}
	build := func(k btfmodel.Kernel, copies int) []*jit.Tramp {
		var ts []*jit.Tramp
		for c := 0; c < copies; c++ {
			for _, mem := range members {
				req := soRequest(k, "tcp_congestion_ops", mem)
				m, err := req.Model()
				if err != nil {
					t.Fatal(err)
				}
				tr, err := jit.Resolve(req, m)
				if err != nil {
					t.Fatal(err)
				}
				ts = append(ts, tr)
			}
		}
		return ts
	}
	pages := []uint64{0xffff800080010000, 0xffff800080020000, 0xffff800080030000}
	ts := build(btfmodel.Kernel612, 4) // 48 images: more than a page
	pks, imgs, err := arm64.Backend{}.PackTable(pages, ts)
	if err != nil {
		t.Fatal(err)
	}
	off, page, newPages := 0, 0, 0
	for i, tr := range ts {
		if pks[i].Len != len(imgs[i].Code) || pks[i].Size < pks[i].Len || pks[i].Entry != 0 {
			t.Errorf("%d %s: packing %+v, code %d bytes", i, tr.StructOps, pks[i], len(imgs[i].Code))
		}
		if pks[i].Size > arm64.PageSize-off {
			page, off = page+1, 0
			newPages++
		}
		if want := pages[page] + uint64(off); tr.Image != want || imgs[i].Base != want {
			t.Fatalf("%d %s at %#x, want %#x", i, tr.StructOps, tr.Image, want)
		}
		off += pks[i].Len
	}
	if newPages != 1 {
		t.Errorf("48 images took %d new pages, want 1", newPages)
	}
	// The bl to bpf_func is one word, where the sizing pass reserved four.
	if pks[0].Size-pks[0].Len != 12 {
		t.Errorf("ssthresh: sizing %d, emitted %d: want the 3 words bl saves", pks[0].Size, pks[0].Len)
	}
	if _, _, err := (arm64.Backend{}).PackTable(pages[:1], build(btfmodel.Kernel612, 4)); !isErrno(err, jit.E2BIG) {
		t.Errorf("48 images in one page on 6.12: %v, want E2BIG", err)
	}
	if _, _, err := (arm64.Backend{}).PackTable(pages, build(btfmodel.Kernel61, 4)); !isErrno(err, jit.EFBIG) {
		t.Errorf("48 images on 6.1: %v, want EFBIG (one page per map)", err)
	}
	if _, _, err := (arm64.Backend{}).PackTable(pages[:1], build(btfmodel.Kernel61, 1)); err != nil {
		t.Errorf("a whole table on 6.1: %v", err)
	}
}

// soCaptures is a directory of new struct_ops captures (one <kernel>-<arch>/ each, corpus
// format) to check before they are merged into testdata/kernel: $TRAMPJIT_STRUCT_OPS_CAPTURES,
// or none.
var soCaptures = os.Getenv("TRAMPJIT_STRUCT_OPS_CAPTURES")

// soCorpus reads a corpus; a capture directory without its own BTF is read with the BTF of the
// same kernel build in testdata/kernel (kernel.json must agree).
func soCorpus(t *testing.T, dir string, k btfmodel.Kernel) ([]kernel.CorpusCase, error) {
	cases, err := kernel.ReadCorpus(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "vmlinux.btf.xz")); err == nil {
		return cases, nil
	}
	repo := filepath.Join("..", "testdata", "kernel", string(k)+"-arm64")
	a, errA := os.ReadFile(filepath.Join(dir, "kernel.json"))
	b, errB := os.ReadFile(filepath.Join(repo, "kernel.json"))
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		return nil, fmt.Errorf("%s has no vmlinux.btf.xz and its kernel.json is not %s's", dir, repo)
	}
	for i := range cases {
		if cases[i].Request != nil {
			cases[i].Request.SetDir(repo)
		}
	}
	return cases, nil
}

// notJITRefusal reports a refusal the arm64 JIT did not make: at program load (the verifier's
// member checks), or EOPNOTSUPP from the map update (the table's init_member runs before any
// image is built; the JIT's own refusals are ENOTSUPP, E2BIG, EFBIG and EINVAL).
func notJITRefusal(c *kernel.CorpusCase) bool {
	return c.Image == "" && (c.Stage == "load" || (c.Errno == "ENOTSUP" || c.Errno == "EOPNOTSUPP") && strings.Contains(c.Error, "update the struct_ops map"))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// TestStructOpsCorpus regenerates every struct_ops case of the arm64 corpora and of the
// struct_ops captures byte for byte (a refusal: the kernel's reason), at the kernel's addresses.
func TestStructOpsCorpus(t *testing.T) {
	for _, k := range btfmodel.Kernels {
		for _, dir := range soDirs(k) {
			if _, err := os.Stat(filepath.Join(dir, "cases.jsonl")); err != nil {
				continue
			}
			t.Run(dir, func(t *testing.T) {
				cases, err := soCorpus(t, dir, k)
				if err != nil {
					t.Fatal(err)
				}
				n, images, same, tableRefusals := 0, 0, 0, 0
				for i := range cases {
					c := &cases[i]
					if c.Request == nil || c.Request.StructOps == nil {
						continue
					}
					n++
					if c.Image != "" {
						images++
					}
					d := kernel.Diff(c)
					if d.Verdict == kernel.Match {
						same++
						continue
					}
					if notJITRefusal(c) {
						tableRefusals++
						t.Logf("%s: the kernel refused at %s (%s %s), the model says %s (%s): not an arm64 JIT decision", c.ID, c.Stage, c.Errno, firstLine(c.Error), d.Verdict, d.Note)
						continue
					}
					t.Errorf("%s: %s at %#x: model %s, kernel %s %s", c.ID, d.Verdict, d.Offset, d.Model, d.Kernel, d.Note)
				}
				packed := checkPackTable(t, cases)
				t.Logf("%s: %d struct_ops cases (%d images): %d/%d regenerated, %d refused before the JIT (load, or the table's init_member) where the model disagrees; %d images placed by PackTable where the kernel put them", dir, n, images, same, n, tableRefusals, packed)
			})
		}
	}
}

// goldenSODir holds the annotated listings and frame diagrams of struct_ops images.
const goldenSODir = "testdata/golden-structops"

var goldenSO = []struct {
	k         btfmodel.Kernel
	ops, mem  string
	ibt, kcfi bool
	sleepable bool
}{
	{k: btfmodel.Kernel61, ops: "tcp_congestion_ops", mem: "ssthresh"},
	{k: btfmodel.Kernel61, ops: "tcp_congestion_ops", mem: "cong_avoid"},
	{k: btfmodel.Kernel612, ops: "tcp_congestion_ops", mem: "ssthresh"},
	{k: btfmodel.Kernel612, ops: "tcp_congestion_ops", mem: "cong_avoid"},
	{k: btfmodel.Kernel72, ops: "tcp_congestion_ops", mem: "ssthresh"},
	{k: btfmodel.Kernel72, ops: "tcp_congestion_ops", mem: "cong_avoid"},
	{k: btfmodel.Kernel72, ops: "sched_ext_ops", mem: "select_cpu"},
	{k: btfmodel.Kernel72, ops: "sched_ext_ops", mem: "init_task", sleepable: true},
	{k: btfmodel.Kernel72, ops: "Qdisc_ops", mem: "enqueue"},
	{k: btfmodel.Kernel72, ops: "tcp_congestion_ops", mem: "cong_avoid", ibt: true, kcfi: true},
}

// TestGoldenStructOps keeps the listings (-update rewrites them). Each image is also the
// kernel's sequence as GNU as encodes it, and, where a capture of the member exists, the
// captured image modulo addresses.
func TestGoldenStructOps(t *testing.T) {
	captured := map[string]*kernel.CorpusCase{} // kernel/ops.member -> a captured image
	for _, k := range btfmodel.Kernels {
		for _, dir := range soDirs(k) {
			cases, err := soCorpus(t, dir, k)
			if err != nil {
				continue
			}
			for i := range cases {
				if c := &cases[i]; c.Request != nil && c.Request.StructOps != nil && c.Image != "" {
					captured[string(k)+"/"+c.Request.StructOps.String()] = c
				}
			}
		}
	}
	for _, g := range goldenSO {
		name := fmt.Sprintf("%s-%s.%s", g.k, g.ops, g.mem)
		if g.ibt {
			name += "-bti"
		}
		if g.kcfi {
			name += "-kcfi"
		}
		t.Run(name, func(t *testing.T) {
			req := soRequest(g.k, g.ops, g.mem)
			req.Progs[0].Sleepable = g.sleepable
			req.Features.IBT = g.ibt
			if g.kcfi {
				req.Features.CFI, req.Features.CFIHash = jit.CFIKCFI, 0x3b9aca07
			}
			tr, img, err := jit.Generate(req)
			if err != nil {
				t.Fatal(err)
			}
			want := asmWords(t, soExpect(g.k, tr, tr.Model.NrArgs(), tr.Model.RetSize > 0), tr.Image)
			if got := words(img.Code); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("differs from GNU as's encoding of the kernel's sequence")
			}
			if c := captured[string(g.k)+"/"+req.StructOps.String()]; c != nil && !g.ibt && !g.kcfi {
				kimg, _ := hex.DecodeString(c.Image)
				if c.Request.Progs[0].Sleepable != g.sleepable {
					t.Errorf("the captured %s is sleepable=%v", c.ID, c.Request.Progs[0].Sleepable)
				}
				if err := kernel.SameModuloAddresses(string(btfmodel.ARM64), img.Code, kimg); err != nil {
					t.Errorf("differs from the captured %s: %v", c.ID, err)
				}
				t.Logf("the kernel's %s modulo addresses", c.ID)
			}
			checkObjdump(t, img)
			p, err := arm64.ProfileFor(g.k)
			if err != nil {
				t.Fatal(err)
			}
			l, err := arm64.Layout(p, tr.Model, tr.Flags, 0)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := jit.WriteImage(&buf, tr, img, arm64.Disassembler{}, jit.Palette{}); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&buf, "\n# frame\n%s", l.Diagram(arm64.StructOpsOneFrame))
			path := filepath.Join(goldenSODir, name+".txt")
			if updating() {
				if err := os.MkdirAll(goldenSODir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, buf.Bytes()) {
				t.Errorf("%s differs from the generated listing (%v); if intended, rerun with -update and review\n%s", path, err, buf.String())
			}
		})
	}
}

// TestStructOpsEntryAndImageSize: the ops table's pointer and the packing advance agree with
// Pack: 4 past a kCFI word on 7.2 (none on 6.12, whose JIT has no emit_kcfi), and the emitted
// code, which is shorter than the sizing pass when a call became bl.
func TestStructOpsEntryAndImageSize(t *testing.T) {
	for _, c := range []struct {
		k     btfmodel.Kernel
		entry int
	}{{btfmodel.Kernel612, 0}, {btfmodel.Kernel72, 4}} {
		req := soRequest(c.k, "tcp_congestion_ops", "ssthresh")
		req.Features.CFI, req.Features.CFIHash = jit.CFIKCFI, 0x3b9aca07
		tr, img, err := jit.Generate(req)
		if err != nil {
			t.Fatal(err)
		}
		b := arm64.Backend{}
		if e, err := b.EntryOffset(tr); err != nil || e != c.entry {
			t.Errorf("%s: EntryOffset %d, %v; want %d", c.k, e, err, c.entry)
		}
		if n, err := b.ImageSize(tr, img); err != nil || n != len(img.Code) {
			t.Errorf("%s: ImageSize %d, %v; want the %d bytes emitted", c.k, n, err, len(img.Code))
		}
		if size, err := b.Size(tr); err != nil || size <= len(img.Code) {
			t.Errorf("%s: Size %d, %v; want the sizing pass, more than the %d bytes emitted", c.k, size, err, len(img.Code))
		}
	}
}

// checkPackTable lays out each captured map's images with PackTable, from the pages the kernel
// gave it (a page's first image is its start: bpf_struct_ops_image_alloc's chunk), with each
// member's captured request, and checks every image lands where the kernel put it, with the
// code length the kernel's layout records. It returns the images checked.
func checkPackTable(t *testing.T, cases []kernel.CorpusCase) int {
	type mapCases struct {
		layout []wire.StructOpsSlot
		byIdx  map[int]*kernel.CorpusCase
	}
	maps := map[string]*mapCases{}
	for i := range cases {
		c := &cases[i]
		if c.StructOps == nil || c.Image == "" || len(c.StructOps.Layout) == 0 {
			continue
		}
		key := c.Request.StructOps.Ops + " map " + c.StructOps.Map // map names repeat across tables
		mc := maps[key]
		if mc == nil {
			mc = &mapCases{layout: c.StructOps.Layout, byIdx: map[int]*kernel.CorpusCase{}}
			maps[key] = mc
		}
		mc.byIdx[c.StructOps.Index] = c
	}
	n := 0
	for name, mc := range maps {
		var pages []uint64
		var ts []*jit.Tramp
		for _, slot := range mc.layout {
			c := mc.byIdx[slot.Index]
			if c == nil {
				t.Errorf("%s: no case for its member %s", name, slot.Member)
				return n
			}
			for len(pages) <= slot.Page {
				pages = append(pages, uint64(slot.Image))
			}
			m, err := c.Request.Model()
			if err != nil {
				t.Errorf("%s: %v", c.ID, err)
				return n
			}
			tr, err := jit.Resolve(c.Request, m)
			if err != nil {
				t.Errorf("%s: %v", c.ID, err)
				return n
			}
			ts = append(ts, tr)
		}
		pks, _, err := arm64.Backend{}.PackTable(pages, ts)
		if err != nil {
			t.Errorf("%s: PackTable: %v", name, err)
			continue
		}
		for i, slot := range mc.layout {
			// A map built with BPF_F_LINK and never registered has no table to read a pointer from.
			if ts[i].Image != uint64(slot.Image) || pks[i].Len != slot.Size || (slot.Ptr != 0 && uint64(slot.Ptr) != ts[i].Image+uint64(pks[i].Entry)) {
				t.Errorf("%s: %s at %#x, %d bytes, entry +%d; the kernel's at %#x, %d bytes, pointer %#x", name, slot.Member, ts[i].Image, pks[i].Len, pks[i].Entry, uint64(slot.Image), slot.Size, uint64(slot.Ptr))
				continue
			}
			n++
		}
	}
	return n
}

// checkObjdump disassembles img's code with GNU objdump and checks that every instruction the
// listing shows has objdump's mnemonic (data sections, the kCFI word, are not decoded).
func checkObjdump(t *testing.T, img *jit.Image) {
	t.Helper()
	tool, err := exec.LookPath("aarch64-linux-gnu-objdump")
	if err != nil {
		t.Skip("aarch64-linux-gnu-objdump not installed (binutils-aarch64-linux-gnu)")
	}
	bin := filepath.Join(t.TempDir(), "image.bin")
	if err := os.WriteFile(bin, img.Code, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "-D", "-b", "binary", "-maarch64", bin).Output()
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	theirs := map[int]string{} // offset -> mnemonic
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Split(l, "\t")
		var off int
		if len(f) < 3 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		if _, err := fmt.Sscanf(strings.TrimSpace(f[0]), "%x:", &off); err == nil {
			theirs[off] = strings.Fields(f[2])[0]
		}
	}
	lines, err := jit.BuildListing(img, arm64.Disassembler{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ln := range lines {
		if strings.HasPrefix(ln.Asm, ".word") {
			continue
		}
		if ours := strings.Fields(ln.Asm)[0]; ours != theirs[ln.Offset] {
			t.Errorf("offset %#x: listing %q, objdump %q", ln.Offset, ln.Asm, theirs[ln.Offset])
		}
		n++
	}
	if n == 0 {
		t.Error("no instruction compared with objdump")
	}
}

// soDirs are the corpus directories of profile k that may hold struct_ops cases.
func soDirs(k btfmodel.Kernel) []string {
	d := []string{filepath.Join("..", "testdata", "kernel", string(k)+"-arm64")}
	if soCaptures != "" {
		d = append(d, filepath.Join(soCaptures, string(k)+"-arm64"))
	}
	return d
}
