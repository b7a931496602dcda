package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/kernel/wire"
)

// corpusImage is what these tests take from a committed riscv64 case: the kernel's image and
// the addresses the trampoline_table walk and kallsyms gave (not the image decoder).
type corpusImage struct {
	ID      string `json:"id"`
	Image   string `json:"image"`
	Request struct {
		Progs []struct {
			Kind string `json:"kind"`
		} `json:"progs"`
		Addrs struct {
			Image, IM string
			Progs     []struct{ Prog string }
			Helpers   map[string]string
		} `json:"addrs"`
	} `json:"request"`
}

func readRVCase(t *testing.T, corpus, id string) corpusImage {
	t.Helper()
	f, err := os.Open("../../testdata/kernel/" + corpus + "/cases.jsonl")
	if err != nil {
		t.Skipf("no %s corpus: %v", corpus, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var c corpusImage
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("%s: no case %s", corpus, id)
	return corpusImage{}
}

func addr(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		t.Fatalf("address %q: %v", s, err)
	}
	return v
}

// TestRISCV64Image: on the kernel's fentry + fmod_ret + fexit image, the code ends at the
// final return even with non-zero bytes after it (the JIT's scratch buffer), and the calls
// decode to __bpf_tramp_enter(im), then __bpf_prog_enter*(prog) for each program in emission
// order (fentry, fmod_ret, fexit), as the walk recorded them.
func TestRISCV64Image(t *testing.T) {
	for _, tc := range []struct{ corpus, id string }{
		{"7.2-riscv64", "bpf_modify_return_test-fentry-fmod_ret-fexit"},
		{"6.12-riscv64", "bpf_modify_return_test-fentry-fmod_ret-fexit"},
	} {
		t.Run(tc.corpus, func(t *testing.T) {
			c := readRVCase(t, tc.corpus, tc.id)
			img := unhex(t, c.Image)
			after := append(append([]byte(nil), img...), 0x13, 0x05, 0x15, 0x00, 0x82, 0x80) // addi a0,a0,1; ret
			if n, err := codeEnd("riscv64", after, 0, nil); err != nil || n != len(img) {
				t.Errorf("code end %d, %v; want %d", n, err, len(img))
			}
			if _, err := codeEnd("riscv64", append(img[:len(img)-2:len(img)-2], 0, 0), 0, nil); err == nil {
				t.Error("an image cut before its return, then zero fill, must fail")
			}
			a := c.Request.Addrs
			enters := map[uint64]bool{}
			for n, v := range a.Helpers {
				if strings.HasPrefix(n, "__bpf_prog_enter") {
					enters[addr(t, v)] = true
				}
			}
			var progs []uint64
			calls := calls("riscv64", img, addr(t, a.Image))
			for _, cl := range calls {
				if enters[cl.target] {
					progs = append(progs, cl.arg0)
				}
			}
			if len(calls) == 0 || calls[0].target != addr(t, a.Helpers["__bpf_tramp_enter"]) || calls[0].arg0 != addr(t, a.IM) {
				t.Fatalf("first call %+v, want __bpf_tramp_enter(%s)", calls[:min(1, len(calls))], a.IM)
			}
			if len(progs) != 3 {
				t.Fatalf("%d calls of __bpf_prog_enter*, want 3", len(progs))
			}
			// Attach order fentry, fmod_ret, fexit is also the emission order here.
			for i, p := range a.Progs {
				if progs[i] != addr(t, p.Prog) {
					t.Errorf("program %d: __bpf_prog_enter(%#x), the walk says %s", i+1, progs[i], p.Prog)
				}
			}
		})
	}
}

// byteMem is kernel memory byte by byte (riscv64 functions are 2- or 4-byte aligned).
type byteMem map[uint64]byte

func (m byteMem) read(a uint64, n int) ([]byte, error) {
	b := make([]byte, n)
	for i := range b {
		b[i] = m[a+uint64(i)]
	}
	return b, nil
}

func (m byteMem) u64(a uint64) (uint64, error) {
	b, _ := m.read(a, 8)
	return binary.LittleEndian.Uint64(b), nil
}

func (m byteMem) put(a uint64, b []byte) {
	for i, x := range b {
		m[a+uint64(i)] = x
	}
}

func (m byteMem) put64(a, v uint64) { m.put(a, binary.LittleEndian.AppendUint64(nil, v)) }

// rvLocateCase is one traced function as a riscv64 capture saw it.
type rvLocateCase struct {
	name        string
	fn          uint64
	site        string // the 16 bytes at fn, as captured
	bpfTarget   bool
	named       map[uint64]string // kallsyms names of call targets (the agent's check)
	literal, dc uint64            // the 8 bytes before fn, and the direct_call they lead to
	image, want uint64            // the trampoline_table walk's image, and the one locate must give
	locate      string
}

// TestLocateRISCV64 runs the agent's locate on patch sites captured from Debian's kernels
// (TestBootCaptureRISCV64's log), with the trampoline_table the walk read: 7.2 reaches the
// image through the CALL_OPS literal (the site calls ftrace_caller), 6.12 through the site
// itself, and a BPF program through auipc t1; jalr t0. A literal that leads elsewhere (a
// kernel without call-ops: the previous function's code) is not believed.
func TestLocateRISCV64(t *testing.T) {
	const (
		table = 0x1000
		tr    = 0x200000
		im    = 0x300000
		ops   = 0xffffaf8003d00000 // kmalloc'd ftrace_ops (any address: the test's)
	)
	o := offsets{opsDirectCall: 64, trHlist: 0, trFuncAddr: 48, trCurImage: 160, trProgsHlist: 120, imImage: 0,
		tlTrampHlist: 8, tlCookie: 24, tlLinkProg: 16, nodes: true}
	for _, tc := range []rvLocateCase{
		{name: "7.2 CALL_OPS", fn: 0xffffffff80bbd390, site: "975246ffe78282654111 22e006e40008",
			named: map[uint64]string{0xffffffff800229e8: "ftrace_caller"}, literal: ops, dc: 0xffffffff78000780,
			image: 0xffffffff78000780, want: 0xffffffff78000780, locate: "riscv64 ftrace_ops.direct_call via the ops pointer before the function (CALL_OPS)"},
		{name: "7.2 literal not an ftrace_ops", fn: 0xffffffff80bbd390, site: "975246ffe78282654111 22e006e40008",
			named: map[uint64]string{0xffffffff800229e8: "ftrace_caller"}, literal: ops, dc: 0xffffffff7800abcd,
			image: 0xffffffff78000780, want: 0xffffffff78000780, locate: "trampoline_table walk (cur_image->image)"},
		{name: "6.12 direct call", fn: 0xffffffff808d07d4, site: "970273f7e782c2fe4111 22e006e40008",
			image: 0xffffffff780007c0, want: 0xffffffff780007c0, locate: "riscv64 auipc t0; jalr t0 at the patch site calls the image"},
		{name: "6.12 BPF program", fn: 0xffffffff78000194, site: "17030000e702c3621308 10027d7122e4", bpfTarget: true,
			image: 0xffffffff780007c0, want: 0xffffffff780007c0, locate: "riscv64 auipc t1; jalr t0 at the BPF program's patch site"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := byteMem{}
			m.put(tc.fn, unhex(t, strings.ReplaceAll(tc.site, " ", "")))
			m.put64(tc.fn-8, tc.literal)
			m.put64(tc.literal+uint64(o.opsDirectCall), tc.dc)
			m.put64(table+8*7, tr) // a bucket holds the trampoline (hlist_key at offset 0)
			m.put64(tr+uint64(o.trFuncAddr), tc.fn)
			m.put64(tr+uint64(o.trCurImage), im)
			m.put64(im+uint64(o.imImage), tc.image)
			ks := &kallsyms{byName: map[string]uint64{"trampoline_key_table": table}, byAddr: map[uint64]string{}}
			for a, n := range tc.named {
				ks.byAddr[a] = n
			}
			c := &capturer{arch: "riscv64", mem: m, ks: ks, off: o}
			r := wire.CaptureResult{Addr: tc.fn}
			if err := c.locate(&r, tc.bpfTarget); err != nil {
				t.Fatal(err)
			}
			if r.Image != tc.want || r.Locate != tc.locate || r.IP != tc.fn {
				t.Errorf("image %#x by %q (ip %#x), want %#x by %q", r.Image, r.Locate, r.IP, tc.want, tc.locate)
			}
			if !slices.Contains(r.Checks, "trampoline_table walk agrees on the image") && tc.locate != "trampoline_table walk (cur_image->image)" {
				t.Errorf("checks %q", r.Checks)
			}
		})
	}
}
