package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
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
