package riscv64_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/jit/jittest"
	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/riscv64"
)

// TestCuratedPassOracle runs every curated request under Unicorn against the emulator's
// oracle (derived from the request alone, emu/oracle.go): programs run in order with the
// arguments as the caller passed them (stack slots included), fmod_ret short-circuits, the
// return value and the callee-saved registers survive, fsession programs run on entry and
// on return.
func TestCuratedPassOracle(t *testing.T) {
	cases := append(jittest.Cases(btfmodel.RISCV64), riscv64.Cases72()...)
	for _, c := range cases {
		req := c.Req
		m, err := req.Model()
		if err != nil {
			t.Fatal(err)
		}
		args := make([]uint64, m.NrRegs())
		for i := range args {
			args[i] = 0x0101010101010101 * uint64(i+1) // every byte set
		}
		rep, err := emu.Run(&req, emu.Options{Clobber: true, Args: args})
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		for _, f := range rep.Failed() {
			t.Errorf("%s: %s: %s", c.Name, f.Name, f.Detail)
		}
		if len(rep.Checks) < 4 {
			t.Errorf("%s: only %d checks ran", c.Name, len(rep.Checks))
		}
	}
}

// The Debian riscv64 captures: 6.12.117 (trixie) and 7.2.13 (sid).
var corpora = map[btfmodel.Kernel]string{
	btfmodel.Kernel612: "../testdata/kernel/6.12-riscv64",
	btfmodel.Kernel72:  "../testdata/kernel/7.2-riscv64",
}

func readCorpus(t *testing.T, k btfmodel.Kernel) []kernel.CorpusCase {
	t.Helper()
	cases, err := kernel.ReadCorpus(filepath.Clean(corpora[k]))
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestCorpus regenerates every case of both riscv64 corpora: each image must be the kernel's
// byte for byte and each refusal the kernel's (kernel.Diff, as trampjit diff does). A refusal
// the model cannot predict from BTF is logged with its note; any other verdict fails.
func TestCorpus(t *testing.T) {
	for k := range corpora {
		t.Run(string(k), func(t *testing.T) {
			cases := readCorpus(t, k)
			count := map[string]int{}
			images := 0
			structOps := 0
			for i := range cases {
				c := &cases[i]
				if c.Request.Arch != btfmodel.RISCV64 || c.Request.Kernel != k {
					t.Fatalf("%s: a %s %s case in the %s riscv64 corpus", c.ID, c.Request.Kernel, c.Request.Arch, k)
				}
				if c.Request.StructOps != nil {
					structOps++ // TestStructOpsCaptures
					continue
				}
				d := kernel.Diff(c)
				count[d.Verdict]++
				if c.Image != "" {
					images++
				}
				switch d.Verdict {
				case kernel.Match:
				case kernel.Unmodelled, kernel.NotCaptured:
					t.Logf("%s: %s (%s)", c.ID, d.Verdict, d.Note)
				default:
					t.Errorf("%s: %s at %#x: model %s, kernel %s %s", c.ID, d.Verdict, d.Offset, d.Model, d.Kernel, d.Note)
				}
			}
			t.Logf("%d cases, %d images: %v; %d struct_ops cases (TestStructOpsCaptures)", len(cases), images, count, structOps)
			if images < 150 {
				t.Errorf("only %d images", images)
			}
		})
	}
}

// TestLayoutVsCaptures reads each captured image's frame set-up (addi sp,sp,-S at +8, the
// c.addi16sp or addi the kernel chose, and sd s1,-sreg_off(s0) after addi s0,sp,S) and
// compares it with Layout for the case's model and flags.
func TestLayoutVsCaptures(t *testing.T) {
	for k := range corpora {
		n := 0
		for _, c := range readCorpus(t, k) {
			if c.Image == "" || c.Request.Flags != nil {
				continue
			}
			code, _ := hex.DecodeString(c.Image)
			m, err := c.Request.Model()
			if err != nil {
				t.Fatal(err)
			}
			tr, err := jit.Resolve(c.Request, m)
			if err != nil {
				t.Fatal(err)
			}
			p, err := riscv64.ProfileFor(k)
			if err != nil {
				t.Fatal(err)
			}
			l, err := riscv64.Layout(p, m, tr.Flags, tr.CookieSlots)
			if err != nil {
				t.Fatal(err)
			}
			at := 8 // past frame 1's four compressed instructions
			if tr.Flags&jit.FlagIndirect != 0 {
				// struct_ops: the one frame first, after the kCFI word if there is one
				if at, err = (riscv64.Backend{}).EntryOffset(tr); err != nil {
					t.Fatal(err)
				}
			}
			stack, sreg, ok := frameOf(code, at)
			if !ok {
				t.Errorf("%s: no trampoline frame set-up at +%d: % x", c.ID, at, code[:min(len(code), 24)])
				continue
			}
			if stack != l.StackSize || sreg != l.SRegOff {
				t.Errorf("%s: kernel stack_size %d, s1 at s0-%d; Layout %d, s0-%d", c.ID, stack, sreg, l.StackSize, l.SRegOff)
			}
			n++
		}
		if n < 100 {
			t.Errorf("%s: only %d images checked", k, n)
		}
	}
}

// frameOf decodes the trampoline frame's set-up the kernel emits at at (+8, after frame 1's
// four compressed instructions; a struct_ops image's one frame at its entry):
// addi sp,sp,-S (c.addi16sp up to 512), two sd, addi s0,sp,S, then sd s1,-sreg(s0). It
// reads only RVC or I/S-type fields, independently of the encoder.
func frameOf(code []byte, at int) (stack, sreg int, ok bool) {
	h := func(i int) uint16 { return uint16(code[i]) | uint16(code[i+1])<<8 }
	w := func(i int) uint32 { return uint32(h(i)) | uint32(h(i+2))<<16 }
	if len(code) < 40 {
		return 0, 0, false
	}
	if x := h(at); x&3 == 1 && x>>13 == 3 && (x>>7)&31 == 2 { // c.addi16sp
		imm := int(x>>12&1)<<9 | int(x>>3&3)<<7 | int(x>>5&1)<<6 | int(x>>2&1)<<5 | int(x>>6&1)<<4
		stack = (1 << 10) - imm // the negative adjustment, 10-bit two's complement
		at += 2
	} else if x := w(at); x&0x7f == 0x13 && (x>>7)&31 == 2 && (x>>15)&31 == 2 {
		stack = -int(int32(x) >> 20)
		at += 4
	} else {
		return 0, 0, false
	}
	for k := 0; k < 3; k++ { // two stores and the s0 set-up, 2 or 4 bytes each
		if h(at)&3 == 3 {
			at += 4
		} else {
			at += 2
		}
	}
	x := w(at)
	if x&0x707f != 0x3023 || (x>>15)&31 != 8 || (x>>20)&31 != 9 { // sd s1, imm(s0)
		return 0, 0, false
	}
	return stack, -int(int32(x&0xfe000000|(x&0xf80)<<13) >> 20), true
}

// shape is what decides a trampoline's bytes apart from its addresses: argument sizes, the
// return size and signedness, flags and programs. The CPU features are the capture's (the
// curated request is generated again with them).
func shape(req *jit.Request, m *btfmodel.FuncModel) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s ret %d/%d;", req.Kernel, m.RetSize, m.RetFlags&btfmodel.SignedArg)
	for _, a := range m.Args {
		fmt.Fprintf(&b, " %d", a.Size)
	}
	fmt.Fprintf(&b, "; %v %+v %s", req.Flags != nil, req.Progs, req.Target)
	return b.String()
}

// TestGoldenShapesCaptured checks the curated golden listings (testdata/golden*) against the
// kernel: each curated request that has a captured case of the same shape is generated again
// at the captured case's addresses, and must then be the kernel's image byte for byte, so its
// listing is the kernel's code at synthetic addresses.
func TestGoldenShapesCaptured(t *testing.T) {
	byShape := map[string]*kernel.CorpusCase{}
	for k := range corpora {
		cases := readCorpus(t, k)
		for i := range cases {
			c := &cases[i]
			if c.Image == "" || c.Request.Addrs == nil {
				continue
			}
			m, err := c.Request.Model()
			if err != nil {
				t.Fatalf("%s: %v", c.ID, err)
			}
			if s := shape(c.Request, m); byShape[s] == nil {
				byShape[s] = c
			}
		}
	}
	var checked []string
	for _, gc := range append(jittest.Cases(btfmodel.RISCV64), riscv64.Cases72()...) {
		req := gc.Req
		m, err := req.Model()
		if err != nil {
			t.Fatal(err)
		}
		c := byShape[shape(&req, m)]
		if c == nil {
			continue
		}
		req.Addrs, req.Features = c.Request.Addrs, c.Request.Features
		tr, err := jit.Resolve(&req, m)
		if err != nil {
			t.Fatalf("%s: %v", gc.Name, err)
		}
		img, err := riscv64.Backend{}.Generate(tr)
		if err != nil {
			t.Fatalf("%s: %v", gc.Name, err)
		}
		if want, _ := hex.DecodeString(c.Image); !bytes.Equal(img.Code, want) {
			t.Errorf("%s at %s's addresses differs from the kernel's image", gc.Name, c.ID)
		}
		checked = append(checked, gc.Name+" = "+c.ID)
	}
	sort.Strings(checked)
	t.Logf("%d curated cases checked against captures:\n%s", len(checked), strings.Join(checked, "\n"))
	if len(checked) < 8*len(corpora) {
		t.Errorf("only %d curated cases have a captured case of their shape", len(checked))
	}
}

// findings72 are the 7.2 behaviours, each with the captured cases that show it: the generated
// image must be the kernel's byte for byte, a refusal the kernel's.
var findings72 = []struct {
	name string
	ids  []string
}{
	{"a skip NOP per program block, none after the original call", []string{"bpf_fentry_test2-fentry-fexit", "bpf_fentry_test2-fexit", "bpf-tj_args2-fentry2-fexit2"}},
	{"func_meta is the slot count (c.li t1,n), the IP stored by emit_imm", []string{"bpf_fentry_test2-fentry", "bpf-tj_args2-func-ip", "bpf-tj_args0-func-ip"}},
	{"9 to 12 arguments: stack slots copied in and out, unmasked", []string{"__bpf_sk_lookup-fexit", "__bpf_sk_lookup-fentry", "tcp_v4_send_ack-fentry2-fexit2", "tcp_v4_send_ack-fentry-fexit-func-ip", "__bpf_sk_lookup-fexit2-cookie"}},
	{"structs by value, on the stack too", []string{"aa_audit_file-fexit", "aa_audit_file-fentry", "bpf_log_attr_init-fentry-fexit-func-ip"}},
	{"38 links fit, the 39th is E2BIG", []string{"bpf_fentry_test2-links-38-fentry", "bpf_fentry_test2-links-38-mixed", "bpf_modify_return_test-links-38-fmod_ret", "bpf_fentry_test2-links-39-e2big"}},
	{"more than 12 arguments refused at load", []string{"bpf_trace_run12-fentry", "rtnl_fill_ifinfo-fexit"}},
	{"fsession: cookie slots and the retval slot zeroed before __bpf_tramp_enter, func_meta with the cookie index", []string{"bpf_fentry_test2-fsession-cookie", "bpf_fentry_test2-fsession4-cookie3", "bpf_fentry_test2-fsession-cookie-func-ip"}},
	{"fsession: is_return stored where the fmod_ret bne lands", []string{"bpf_modify_return_test-fsession-cookie-fmod_ret-fexit"}},
	{"fsession with stack arguments and plain programs; two links each", []string{"__bpf_sk_lookup-fsession-cookie", "tcp_v4_send_ack-fsession-fentry-fexit", "bpf_fentry_test2-links-18-fsession", "bpf_fentry_test2-links-19-fsession"}},
	{"BPF-program targets: orig_call past the program's two NOPs", []string{"bpf-tj_args0-fentry-fexit", "bpf-tj_args4-fexit", "bpf-tj_args2-cookies"}},
}

// findings612 are 6.12's, likewise.
var findings612 = []struct {
	name string
	ids  []string
}{
	{"the epilogue reloads a5 before a0 (the 6.12.53 sign-extension backport)", []string{"bpf_fentry_test2-fentry-fexit", "bpf_modify_return_test-fmod_ret", "bpf_fentry_test2-fexit"}},
	{"two ip_after_call NOPs after the original call; no per-program NOP", []string{"bpf_fentry_test2-fentry-fexit", "bpf-tj_args2-fentry2-fexit2"}},
	{"the count stored by emit_li (c.li t1,n), the IP by emit_imm", []string{"bpf_fentry_test2-fentry", "bpf-tj_args2-func-ip", "bpf-tj_args0-func-ip"}},
	{"9 to 12 arguments: stack slots copied in and out (12-argument support, 6.11)", []string{"__bpf_sk_lookup-fexit", "__bpf_sk_lookup-fentry", "tcp_v4_send_ack-fentry2-fexit2", "tcp_v4_send_ack-fentry-fexit-func-ip"}},
	{"38 links fit, the 39th is E2BIG", []string{"bpf_fentry_test2-links-38-fentry", "bpf_fentry_test2-links-38-mixed", "bpf_modify_return_test-links-38-fmod_ret", "bpf_fentry_test2-links-39-e2big"}},
	{"BPF-program targets", []string{"bpf-tj_args0-fentry-fexit", "bpf-tj_args4-fexit", "bpf-tj_args2-cookies"}},
}

func TestCorpusFindings(t *testing.T) {
	for k, findings := range map[btfmodel.Kernel][]struct {
		name string
		ids  []string
	}{btfmodel.Kernel612: findings612, btfmodel.Kernel72: findings72} {
		checkFindings(t, k, findings)
	}
}

func checkFindings(t *testing.T, k btfmodel.Kernel, findings []struct {
	name string
	ids  []string
}) {
	byID := map[string]*kernel.CorpusCase{}
	cases := readCorpus(t, k)
	for i := range cases {
		byID[cases[i].ID] = &cases[i]
	}
	for _, f := range findings {
		t.Run(string(k)+": "+f.name, func(t *testing.T) {
			for _, id := range f.ids {
				c := byID[id]
				if c == nil {
					t.Fatalf("%s is not in the %s corpus", id, k)
				}
				if d := kernel.Diff(c); d.Verdict != kernel.Match {
					t.Errorf("%s: %s at %#x: model %s, kernel %s %s", id, d.Verdict, d.Offset, d.Model, d.Kernel, d.Note)
				}
			}
		})
	}
}

// TestCorpusNotFtraceManaged: bpf_trace_run11 is not ftrace-managed, so the kernel falls
// back to bpf_arch_text_poke, which on riscv64 compares the entry with two NOPs and answers
// -EFAULT. BTF does not say which functions ftrace manages: the diff counts it as a refusal
// the model cannot predict.
func TestCorpusNotFtraceManaged(t *testing.T) {
	for k := range corpora {
		found := false
		for _, c := range readCorpus(t, k) {
			if c.ID != "bpf_trace_run11-fentry" {
				continue
			}
			found = true
			if c.Errno != "EFAULT" || c.Stage != "attach" {
				t.Fatalf("%s %s: %s at %s, want EFAULT at attach", k, c.ID, c.Errno, c.Stage)
			}
			if d := kernel.Diff(&c); d.Verdict != kernel.Unmodelled {
				t.Errorf("%s %s: %s (%s), want %s", k, c.ID, d.Verdict, d.Note, kernel.Unmodelled)
			}
		}
		if !found {
			t.Errorf("bpf_trace_run11-fentry is not in the %s corpus", k)
		}
	}
}

// readCapture reads a testdata/captures listing: each line's offset and instruction number
// (objdump's 16- or 32-bit hex), back into bytes.
func readCapture(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var code []byte
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		off, err := strconv.ParseUint(strings.TrimSuffix(f[0], ":"), 16, 32)
		v, err2 := strconv.ParseUint(f[1], 16, 32)
		if err != nil || err2 != nil || int(off) != len(code) || (len(f[1]) != 4 && len(f[1]) != 8) {
			t.Fatalf("%s: bad line %q", path, line)
		}
		code = append(code, byte(v), byte(v>>8))
		if len(f[1]) == 8 {
			code = append(code, byte(v>>16), byte(v>>24))
		}
	}
	return code
}

// TestCaptures: each capture listing is its corpus case's image, and the model generates it
// from the case's request.
func TestCaptures(t *testing.T) {
	for _, cp := range []struct {
		k        btfmodel.Kernel
		id, file string
	}{
		{btfmodel.Kernel612, "bpf_fentry_test2-fentry-fexit", "testdata/captures/6.12-riscv64-bpf_fentry_test2-fentry-fexit.txt"},
		{btfmodel.Kernel72, "bpf_fentry_test2-fentry-fexit", "testdata/captures/7.2-riscv64-bpf_fentry_test2-fentry-fexit.txt"},
	} {
		want := readCapture(t, cp.file)
		var c *kernel.CorpusCase
		cases := readCorpus(t, cp.k)
		for i := range cases {
			if cases[i].ID == cp.id {
				c = &cases[i]
			}
		}
		if c == nil {
			t.Fatalf("%s is not in the %s corpus", cp.id, cp.k)
		}
		if img, _ := hex.DecodeString(c.Image); !bytes.Equal(img, want) {
			t.Errorf("%s: the capture is not the corpus case's image", cp.file)
		}
		_, img, err := jit.Generate(c.Request)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(img.Code, want) {
			t.Errorf("%s: the model's image differs from the capture", cp.file)
		}
	}
}
