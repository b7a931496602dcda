package amd64

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// soTramp is a struct_ops Tramp as jit.Resolve builds it: the one program in Fentry, the
// member's flags, no func, ip or im.
func soTramp(k btfmodel.Kernel, m *btfmodel.FuncModel, feat jit.Features) *jit.Tramp {
	tr := &jit.Tramp{Arch: btfmodel.AMD64, Kernel: k, Model: m, Image: tImage, Helpers: tHelpers,
		Features: feat, StructOps: &jit.StructOps{Ops: "tcp_congestion_ops", Member: "ssthresh"},
		Flags: jit.Flags(btfmodel.StructOpsFlags(m, k))}
	tr.Fentry = []jit.ProgRef{{Prog: jit.Prog{Kind: jit.StructOpsProg}, Index: 1,
		Addr: 0xffffc90000100000, BPFFunc: 0xffffffffc0001000, CookieSlot: -1}}
	return tr
}

// sockModel is u32 ssthresh(struct sock *sk); voidModel is void release(struct sock *sk).
func sockModel() *btfmodel.FuncModel {
	return &btfmodel.FuncModel{Name: "ssthresh", RetSize: 4, RetTypeName: "u32",
		Args: []btfmodel.Arg{{TypeName: "struct sock *", Size: 8}}}
}

func voidModel() *btfmodel.FuncModel {
	return &btfmodel.FuncModel{Name: "release", Args: []btfmodel.Arg{{TypeName: "struct sock *", Size: 8}}}
}

// TestStructOpsCFIVsGNUAs checks each landing sequence emit_cfi writes against GNU as
// assembling the instructions arch/x86/net/bpf_jit_comp.c names in its comments (emit_fineibt,
// emit_kcfi, EMIT_ENDBR; gen_endbr_poison). The kCFI and FineIBT forms cannot be captured on
// Debian's GCC-built kernels, so this is their only check.
func TestStructOpsCFIVsGNUAs(t *testing.T) {
	asPath, err := exec.LookPath("as")
	if err != nil {
		t.Skip("GNU as not found (install binutils)")
	}
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("objdump not found (install binutils)")
	}
	const hash = 0x9abcdef1
	kcfi := fmt.Sprintf("mov $%#x,%%eax\n.rept 11\nnop\n.endr", uint32(hash))
	cases := []struct {
		k      btfmodel.Kernel
		feat   jit.Features
		att    string
		offset int
	}{
		// Debian: IBT, no CFI_CLANG.
		{btfmodel.Kernel612, jit.Features{}, "endbr64", 0},
		{btfmodel.Kernel72, jit.Features{}, "endbr64", 0},
		// 6.12 FineIBT: jz over ud2, the nop and the nopw poison, to the frame.
		{btfmodel.Kernel612, jit.Features{CFI: jit.CFIFineIBT, CFIHash: hash},
			fmt.Sprintf("endbr64\nsub $%#x,%%r10d\njz 1f\nud2\nnop\nnopw (%%rax)\n1:", uint32(hash)), 16},
		// 7.2 FineIBT: hash in eax, cs jne.d32 into the UDB byte of nopl -42(%rax).
		{btfmodel.Kernel72, jit.Features{CFI: jit.CFIFineIBT, CFIHash: hash},
			fmt.Sprintf("endbr64\nsub $%#x,%%eax\n{disp32} jne,pn .+10\nnopl -42(%%rax)", uint32(hash)), 16},
		{btfmodel.Kernel612, jit.Features{CFI: jit.CFIKCFI, CFIHash: hash}, kcfi + "\nendbr64", 16},
		{btfmodel.Kernel72, jit.Features{CFI: jit.CFIKCFI, CFIHash: hash}, kcfi + "\nendbr64", 16},
		// A hash whose imm8 form exists: the kernel still emits the imm32 forms.
		{btfmodel.Kernel72, jit.Features{CFI: jit.CFIFineIBT, CFIHash: 5},
			"endbr64\n.byte 0x2d\n.long 5\n{disp32} jne,pn .+10\nnopl -42(%rax)", 16},
	}
	var src strings.Builder
	for i, c := range cases {
		fmt.Fprintf(&src, ".section .text.c%d,\"ax\"\n%s\n", i, c.att)
	}
	dir := t.TempDir()
	s, o := filepath.Join(dir, "cfi.s"), filepath.Join(dir, "cfi.o")
	if err := os.WriteFile(s, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(asPath, "--64", "-o", o, s).CombinedOutput(); err != nil {
		t.Fatalf("as: %v\n%s", err, out)
	}
	out, err := exec.Command(objdump, "-s", o).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	want := parseObjdumpSections(t, string(out))
	for i, c := range cases {
		tr := soTramp(c.k, sockModel(), c.feat)
		img := generate(t, tr)
		got := section(t, img, SecCFI)
		if w := want[fmt.Sprintf(".text.c%d", i)]; !bytes.Equal(got, w) {
			t.Errorf("%s %+v: cfi % x, as gives % x", c.k, c.feat, got, w)
		}
		// The frame follows the landing sequence.
		if rest := img.Code[len(got):]; !bytes.HasPrefix(rest, []byte{0x55, 0x48, 0x89, 0xe5}) {
			t.Errorf("%s %+v: after cfi % x, want push rbp; mov rbp,rsp", c.k, c.feat, rest[:4])
		}
		if off, err := (Backend{}).EntryOffset(tr); err != nil || off != c.offset {
			t.Errorf("%s %+v: entry offset %d (%v), want %d", c.k, c.feat, off, err, c.offset)
		}
	}
}

// TestStructOpsImage612 is the whole 6.12 image of u32 ssthresh(struct sock *) on Debian's
// build (IBT, no CFI_CLANG), laid out by hand from __arch_prepare_bpf_trampoline with
// INDIRECT|RET_FENTRY_RET: stack_size 8 (retval) + 8 (ctx) + 8 (nregs) + 8 (rbx) + 16 (run_ctx).
func TestStructOpsImage612(t *testing.T) {
	tr := soTramp(btfmodel.Kernel612, sockModel(), jit.Features{})
	img := generate(t, tr)
	matchMask(t, img.Code, `
		f3 0f 1e fa
		55 48 89 e5
		48 83 ec 30
		48 89 5d e0
		b8 01 00 00 00
		48 89 45 e8
		48 89 7d f0
		31 ff
		48 89 7d d0
		48 bf 00 00 10 00 00 c9 ff ff
		48 8d 75 d0
		e8 .. .. .. ..
		48 89 c3 48 85 c0 74 0d
		48 8d 7d f0
		e8 .. .. .. ..
		48 89 45 f8
		48 bf 00 00 10 00 00 c9 ff ff
		48 89 de 48 8d 55 d0
		e8 .. .. .. ..
		48 8b 45 f8
		48 8b 5d e0 c9 c3 cc`)
	if size, _ := (Backend{}).ImageSize(tr, img); size != len(img.Code)+64 {
		t.Errorf("6.12 image size %d, want code %d + BPF_INSN_SAFETY", size, len(img.Code))
	}
	for _, r := range img.Relocs {
		if r.Symbol == "im" || r.Symbol == "func" || strings.HasPrefix(r.Symbol, "__bpf_tramp") {
			t.Errorf("struct_ops image refers to %s", r.Symbol)
		}
	}
	names := []string{}
	for _, s := range img.Sections {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "cfi,prologue,nr_args,arg spill,struct_ops 1,epilogue" {
		t.Errorf("sections %s", got)
	}
}

// TestStructOps61 is 6.1's form: no INDIRECT, so no landing sequence (Debian 6.1 has no IBT),
// rbx pushed below the frame, RET_FENTRY_RET for a value-returning member and flags 0 for a
// void one (no return slot, no reload), and the size the map advances by is the code alone.
func TestStructOps61(t *testing.T) {
	tr := soTramp(btfmodel.Kernel61, sockModel(), jit.Features{CFI: jit.CFIKCFI, CFIHash: 1})
	if tr.Flags != jit.FlagRetFentryRet {
		t.Fatalf("6.1 flags %v", tr.Flags)
	}
	img := generate(t, tr)
	if !bytes.HasPrefix(img.Code, mustHex("55 48 89 e5 48 83 ec 28 53")) || !bytes.HasSuffix(img.Code, mustHex("48 8b 45 f8 5b c9 c3 cc")) {
		t.Errorf("6.1 ssthresh: % x", img.Code)
	}
	if size, _ := (Backend{}).ImageSize(tr, img); size != len(img.Code) {
		t.Errorf("6.1 image size %d, want the code's %d", size, len(img.Code))
	}
	if off, _ := (Backend{}).EntryOffset(tr); off != 0 {
		t.Errorf("6.1 entry offset %d", off)
	}
	v := soTramp(btfmodel.Kernel61, voidModel(), jit.Features{})
	if v.Flags != 0 {
		t.Fatalf("6.1 void flags %v", v.Flags)
	}
	img = generate(t, v)
	// stack_size 8 (ctx) + 8 (nregs) + 16 (run_ctx); no store of rax after the program.
	if !bytes.HasPrefix(img.Code, mustHex("55 48 89 e5 48 83 ec 20 53")) || !bytes.HasSuffix(img.Code, mustHex("5b c9 c3 cc")) ||
		bytes.Contains(img.Code, mustHex("48 89 45 f8")) || bytes.Contains(img.Code, mustHex("48 8b 45 f8")) {
		t.Errorf("6.1 void member: % x", img.Code)
	}
}

// TestStructOpsStackArgs: a member with more than six argument slots reads the caller's
// stack arguments at rbp+24 on 6.12 (save_args always adds 0x18) and at rbp+16 on 7.2
// (stack_args_off is 16 for INDIRECT). No Debian table has such a member; the bytes are the
// emit_ldx of save_args.
func TestStructOpsStackArgs(t *testing.T) {
	for _, c := range []struct {
		k    btfmodel.Kernel
		load string
	}{
		{btfmodel.Kernel612, "48 8b 45 18"}, {btfmodel.Kernel72, "48 8b 45 10"},
	} {
		tr := soTramp(c.k, eights(8), jit.Features{})
		img := generate(t, tr)
		spill := section(t, img, jit.SecArgSpill)
		// Six register stores, then two stack slots, each mov rax,[rbp+d]; mov [rbp-x],rax.
		if i := bytes.Index(spill, mustHex(c.load)); i != 6*4 {
			t.Errorf("%s: first stack argument load % x at %d of % x", c.k, mustHex(c.load), i, spill)
		}
		l, err := Layout(eights(8), tr.Flags, c.k)
		if err != nil {
			t.Fatal(err)
		}
		if want := int(mustHex(c.load)[3]); l.StackArgsOff != want {
			t.Errorf("%s: layout stack args at rbp+%#x, want %#x", c.k, l.StackArgsOff, want)
		}
		if !strings.Contains(l.Diagram(), "ops table's caller") {
			t.Errorf("%s: diagram:\n%s", c.k, l.Diagram())
		}
	}
}

// TestStructOpsRefused: the shapes bpf_struct_ops_prepare_trampoline never builds.
func TestStructOpsRefused(t *testing.T) {
	two := soTramp(btfmodel.Kernel612, sockModel(), jit.Features{})
	two.Fentry = append(two.Fentry, two.Fentry[0])
	orig := soTramp(btfmodel.Kernel612, sockModel(), jit.Features{})
	orig.Flags |= jit.FlagCallOrig
	for _, c := range []struct {
		tr   *jit.Tramp
		want string
	}{
		{two, "a struct_ops image has one program, not 2"},
		{orig, "INDIRECT is only compatible with RET_FENTRY_RET"},
	} {
		if _, err := (Backend{}).Generate(c.tr); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	if _, err := (Backend{}).EntryOffset(tramp(btfmodel.Kernel612, sockModel(), jit.Prog{Kind: jit.Fentry})); err == nil {
		t.Error("EntryOffset of an fentry trampoline")
	}
}

// TestStructOpsDiagram: the frame of a struct_ops image has one return address, the ops
// caller's, and the program's return value at rbp-8.
func TestStructOpsDiagram(t *testing.T) {
	l, err := Layout(sockModel(), jit.FlagIndirect|jit.FlagRetFentryRet, btfmodel.Kernel72)
	if err != nil {
		t.Fatal(err)
	}
	want := `  [rbp   +8]  return into the ops table's caller (the image was called indirectly)
  [rbp   +0]  the caller's rbp
  [rbp   -8]  the struct_ops program's return value (RET_FENTRY_RET), returned in rax
  [rbp  -16]  argument slot 0, ctx[0]
  [rbp  -24]  argument slot count (func_meta), ctx[-1]
  [rbp  -32]  saved rbx
  [rbp  -40]  bpf_tramp_run_ctx.saved_run_ctx
  [rbp  -48]  bpf_tramp_run_ctx.bpf_cookie
  rsp = rbp-48 (stack_size 48)
`
	if got := l.Diagram(); got != want {
		t.Errorf("diagram:\n%s\nwant:\n%s", got, want)
	}
}

// soGolden are the struct_ops listings kept in testdata/structops: members of every table the
// corpus kernels register, with the synthetic layout, in each CFI form the profile can boot.
var soGolden = []struct {
	k          btfmodel.Kernel
	ops, mem   string
	sleepable  bool
	feat       jit.Features
	variantTag string
}{
	{k: btfmodel.Kernel61, ops: "tcp_congestion_ops", mem: "ssthresh"},
	{k: btfmodel.Kernel61, ops: "tcp_congestion_ops", mem: "cong_avoid"},
	{k: btfmodel.Kernel612, ops: "tcp_congestion_ops", mem: "ssthresh"},
	{k: btfmodel.Kernel612, ops: "tcp_congestion_ops", mem: "cong_avoid"},
	{k: btfmodel.Kernel612, ops: "tcp_congestion_ops", mem: "cong_control"},
	{k: btfmodel.Kernel612, ops: "tcp_congestion_ops", mem: "ssthresh", feat: jit.Features{CFI: jit.CFIFineIBT, CFIHash: 0x9abcdef1}, variantTag: "fineibt"},
	{k: btfmodel.Kernel612, ops: "tcp_congestion_ops", mem: "ssthresh", feat: jit.Features{CFI: jit.CFIKCFI, CFIHash: 0x9abcdef1}, variantTag: "kcfi"},
	{k: btfmodel.Kernel612, ops: "tcp_congestion_ops", mem: "ssthresh", feat: jit.Features{Rethunk: true}, variantTag: "rethunk"},
	{k: btfmodel.Kernel612, ops: "tcp_congestion_ops", mem: "ssthresh", feat: jit.Features{CallDepth: true}, variantTag: "call-depth"},
	{k: btfmodel.Kernel72, ops: "tcp_congestion_ops", mem: "ssthresh"},
	{k: btfmodel.Kernel72, ops: "tcp_congestion_ops", mem: "cwnd_event_tx_start"},
	{k: btfmodel.Kernel72, ops: "sched_ext_ops", mem: "select_cpu"},
	{k: btfmodel.Kernel72, ops: "sched_ext_ops", mem: "init"},
	{k: btfmodel.Kernel72, ops: "sched_ext_ops", mem: "init_task", sleepable: true},
	{k: btfmodel.Kernel72, ops: "sched_ext_ops", mem: "yield"},
	{k: btfmodel.Kernel72, ops: "Qdisc_ops", mem: "enqueue"},
	{k: btfmodel.Kernel72, ops: "io_uring_bpf_ops", mem: "loop_step"},
	{k: btfmodel.Kernel72, ops: "tcp_congestion_ops", mem: "ssthresh", feat: jit.Features{CFI: jit.CFIFineIBT, CFIHash: 0x9abcdef1}, variantTag: "fineibt"},
	{k: btfmodel.Kernel72, ops: "tcp_congestion_ops", mem: "ssthresh", feat: jit.Features{CFI: jit.CFIKCFI, CFIHash: 0x9abcdef1}, variantTag: "kcfi"},
}

// soRequest is a golden struct_ops request at the synthetic addresses.
func soRequest(t *testing.T, k btfmodel.Kernel, ops, mem string, sleepable bool, feat jit.Features) *jit.Request {
	t.Helper()
	req := &jit.Request{Arch: btfmodel.AMD64, Kernel: k, Features: feat,
		BTF:       filepath.Join("..", "testdata", "kernel", string(k)+"-amd64", "vmlinux.btf.xz"),
		StructOps: &jit.StructOps{Ops: ops, Member: mem},
		Progs:     []jit.Prog{{Kind: jit.StructOpsProg, Sleepable: sleepable}},
		Addrs: &jit.Addrs{Image: jit.Addr(tImage),
			Progs:   []jit.ProgAddrs{{Prog: 0xffffc90000100000, BPFFunc: 0xffffffffc0001000}},
			Helpers: map[string]jit.Addr{}}}
	for n, a := range tHelpers {
		req.Addrs.Helpers[n] = jit.Addr(a)
	}
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	return req
}

// TestStructOpsGolden keeps an annotated listing, the entry offset, the packing size and the
// frame of each soGolden case (amd64/testdata/structops; -update rewrites them). Each image is
// also disassembled by objdump, whose instruction boundaries must be the listing's.
func TestStructOpsGolden(t *testing.T) {
	objdump, _ := exec.LookPath("objdump")
	dir := filepath.Join("testdata", "structops")
	for _, c := range soGolden {
		name := fmt.Sprintf("%s-%s.%s", c.k, c.ops, c.mem)
		if c.variantTag != "" {
			name += "-" + c.variantTag
		}
		t.Run(name, func(t *testing.T) {
			req := soRequest(t, c.k, c.ops, c.mem, c.sleepable, c.feat)
			tr, img, err := jit.Generate(req)
			if err != nil {
				t.Fatal(err)
			}
			checkImage(t, tr, img)
			entry, _ := Backend{}.EntryOffset(tr)
			size, _ := Backend{}.ImageSize(tr, img)
			l, err := Layout(tr.Model, tr.Flags, c.k)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			fmt.Fprintf(&buf, "# struct_ops %s: the ops table points at image+%#x; arch_prepare_bpf_trampoline returns %d (the next member's image starts there)\n",
				tr.StructOps, entry, size)
			if err := jit.WriteImage(&buf, tr, img, Disassembler{}, jit.Palette{}); err != nil {
				t.Fatal(err)
			}
			buf.WriteString("# frame\n")
			buf.WriteString(l.Diagram())
			path := filepath.Join(dir, name+".txt")
			if *update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			} else if want, err := os.ReadFile(path); err != nil {
				t.Fatalf("%v (go test ./amd64 -run TestStructOpsGolden -update)", err)
			} else if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s differs from the generated listing; if intended, rerun with -update and review\n--- got\n%s", path, buf.String())
			}
			if objdump != "" {
				checkBoundaries(t, objdump, img)
			}
		})
	}
}

// checkBoundaries disassembles img with objdump and compares where its instructions start
// with the listing's decoder.
func checkBoundaries(t *testing.T, objdump string, img *jit.Image) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "image.bin")
	if err := os.WriteFile(bin, img.Code, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(objdump, "-D", "--insn-width=16", "-b", "binary", "-m", "i386:x86-64", bin).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	var theirs []int
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.SplitN(strings.TrimSpace(line), ":", 2)
		if len(f) != 2 || !strings.Contains(line, "\t") {
			continue
		}
		var off int
		if _, err := fmt.Sscanf(f[0], "%x", &off); err == nil {
			theirs = append(theirs, off)
		}
	}
	var ours []int
	for off := 0; off < len(img.Code); {
		in, err := Disassembler{}.Decode(img.Code[off:], img.Base+uint64(off))
		if err != nil {
			t.Fatal(err)
		}
		ours = append(ours, off)
		off += in.Len
	}
	if fmt.Sprint(ours) != fmt.Sprint(theirs) {
		t.Errorf("instruction starts differ from objdump's:\n ours   %v\n objdump %v", ours, theirs)
	}
}

// soTables are the ops tables a Debian x86_64 kernel may register; StructOpsModel says which
// this one's BTF has and what BPF may implement.
var soTables = []string{"tcp_congestion_ops", "bpf_dummy_ops", "sched_ext_ops", "sched_ext_ops_cid",
	"Qdisc_ops", "io_uring_bpf_ops", "hid_bpf_ops"}

// TestStructOpsEveryMember generates every member BPF may implement on each profile, in each
// CFI form the profile can boot, and checks each image's invariants (checkImage), its
// instruction boundaries against objdump, its shape (the landing sequence the mode gives, no
// im, no original call, the program's value reloaded before leave exactly when the member
// returns one), and that sizes and entry offsets are the kernel's.
func TestStructOpsEveryMember(t *testing.T) {
	objdump, _ := exec.LookPath("objdump")
	count := map[btfmodel.Kernel]int{}
	for _, req := range StructOpsRequests(t) {
		tr, img, err := jit.Generate(req)
		if err != nil {
			t.Errorf("%s %s %q: %v", req.Kernel, req.StructOps, req.Features.CFI, err)
			continue
		}
		checkImage(t, tr, img)
		if objdump != "" && req.Features.CFI == jit.CFINone {
			checkBoundaries(t, objdump, img)
		}
		checkSOShape(t, tr, img)
		count[req.Kernel]++
	}
	t.Logf("struct_ops images per profile (every implementable member x CFI forms): %v", count)
	if count[btfmodel.Kernel61] < 12 || count[btfmodel.Kernel612] < 36 || count[btfmodel.Kernel72] < 273 {
		t.Errorf("too few struct_ops images: %v", count)
	}
}

// checkSOShape asserts what bpf_struct_ops_prepare_trampoline's flags make of an image.
func checkSOShape(t *testing.T, tr *jit.Tramp, img *jit.Image) {
	t.Helper()
	name := fmt.Sprintf("%s %s %q", tr.Kernel, tr.StructOps, tr.Features.CFI)
	indirect := tr.Flags&jit.FlagIndirect != 0
	if indirect != tr.Kernel.Has(btfmodel.CapStructOpsIndirect) || (tr.Flags&jit.FlagRetFentryRet != 0) != (tr.Model.RetSize > 0) {
		t.Errorf("%s: flags %v", name, tr.Flags)
	}
	for _, r := range img.Relocs {
		if r.Symbol == "im" || r.Symbol == "func" || r.Symbol == jit.HelperTrampEnter || r.Symbol == jit.HelperTrampExit {
			t.Errorf("%s: refers to %s", name, r.Symbol)
		}
	}
	start := img.Code
	switch {
	case !indirect:
		// 6.1: EMIT_ENDBR, nothing on Debian's build.
		if !bytes.HasPrefix(start, []byte{0x55}) {
			t.Errorf("%s: starts % x", name, start[:4])
		}
	case tr.Features.CFI == jit.CFINone:
		if !bytes.HasPrefix(start, append(append([]byte{}, endbr64...), 0x55)) {
			t.Errorf("%s: starts % x", name, start[:5])
		}
	default:
		if len(section(t, img, SecCFI)) != 20 || start[20] != 0x55 {
			t.Errorf("%s: cfi section % x", name, section(t, img, SecCFI))
		}
	}
	tail := []byte{0xc9, 0xc3, 0xcc} // leave; ret; int3 (SLS), never add rsp,8
	if !bytes.HasSuffix(img.Code, tail) || bytes.Contains(img.Code, mustHex("48 83 c4 08")) {
		t.Errorf("%s: ends % x", name, img.Code[len(img.Code)-8:])
	}
	reload := bytes.Contains(section(t, img, jit.SecEpilogue), mustHex("48 8b 45 f8"))
	if reload != (tr.Model.RetSize > 0) {
		t.Errorf("%s: epilogue reloads rax %v, member returns %d bytes", name, reload, tr.Model.RetSize)
	}
	size, _ := Backend{}.ImageSize(tr, img)
	if want := len(img.Code) + 64; tr.Kernel == btfmodel.Kernel61 && size != len(img.Code) || tr.Kernel != btfmodel.Kernel61 && size != want {
		t.Errorf("%s: size %d for %d bytes of code", name, size, len(img.Code))
	}
}

// StructOpsRequests are the requests of TestStructOpsEveryMember: every implementable member
// of each profile, in each CFI form the profile can boot, at the synthetic addresses.
func StructOpsRequests(t *testing.T) []*jit.Request {
	var out []*jit.Request
	for _, k := range btfmodel.Kernels {
		spec, err := btfmodel.LoadFile(filepath.Join("..", "testdata", "kernel", string(k)+"-amd64", "vmlinux.btf.xz"), nil)
		if err != nil {
			t.Fatal(err)
		}
		modes := []string{jit.CFINone}
		if k.Has(btfmodel.CapStructOpsIndirect) {
			modes = append(modes, jit.CFIKCFI, jit.CFIFineIBT)
		}
		for _, ops := range soTables {
			members, err := btfmodel.StructOpsMembers(spec, ops)
			if err != nil {
				continue
			}
			for _, mem := range members {
				so, err := btfmodel.StructOpsModel(spec, ops, mem, k, btfmodel.AMD64)
				if err != nil || !so.Verdict.OK {
					continue
				}
				for _, mode := range modes {
					feat := jit.Features{CFI: mode}
					if mode != jit.CFINone {
						feat.CFIHash = 0x6b1c2d3e
					}
					out = append(out, soRequest(t, k, ops, mem, false, feat))
				}
			}
		}
	}
	return out
}
