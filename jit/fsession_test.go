package jit

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
)

// corpusCase is the part of a kernel corpus case (testdata/kernel/*/cases.jsonl) these tests
// read: the request, the captured image, or the kernel's errno.
type corpusCase struct {
	ID      string  `json:"id"`
	Request Request `json:"request"`
	Image   string  `json:"image"`
	Errno   string  `json:"errno"`
}

func readCorpus(t *testing.T, name string) []corpusCase {
	t.Helper()
	dir := filepath.Join("..", "testdata", "kernel", name)
	f, err := os.Open(filepath.Join(dir, "cases.jsonl"))
	if err != nil {
		t.Skipf("corpus %s: %v", name, err)
	}
	defer f.Close()
	var cs []corpusCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var c corpusCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c.Request.SetDir(dir)
		cs = append(cs, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cs
}

// The order of program blocks Resolve gives (fentry, fmod_ret, fexit lists; an fsession
// program in the fentry and in the fexit list) is the order in which the kernel's x86 images
// load each struct bpf_prog address (movabs rdi, prog before the enter and the exit helper).
func TestResolveOrderCorpus(t *testing.T) {
	for _, name := range []string{"6.12-amd64", "7.2-amd64"} {
		seen := 0
		for _, c := range readCorpus(t, name) {
			if c.Image == "" || len(c.Request.Progs) < 2 || c.Request.Addrs == nil {
				continue
			}
			img, err := hex.DecodeString(c.Image)
			if err != nil {
				t.Fatalf("%s: %v", c.ID, err)
			}
			m, err := c.Request.Model()
			if err != nil {
				// The model's refusals are the kernel corpus test's business.
				t.Logf("%s: %v", c.ID, err)
				continue
			}
			tr, err := Resolve(&c.Request, m)
			if err != nil {
				t.Fatalf("%s: %v", c.ID, err)
			}
			var want []int
			for _, l := range [][]ProgRef{tr.Fentry, tr.ModRet, tr.Fexit} {
				for _, r := range l {
					want = append(want, r.Index)
				}
			}
			if got := blockOrder(img, c.Request.Addrs.Progs); !equalInts(got, want) {
				t.Errorf("%s %s: image runs programs %v, Resolve emits %v", name, c.ID, got, want)
			}
			seen++
		}
		if seen == 0 {
			t.Errorf("%s: no multi-program image", name)
		}
	}
}

// blockOrder lists the programs whose addresses an image embeds, one entry per block: each
// block loads its program's address twice (enter and exit).
func blockOrder(img []byte, progs []ProgAddrs) []int {
	type hit struct{ off, idx int }
	var hits []hit
	for i, p := range progs {
		var le [8]byte
		binary.LittleEndian.PutUint64(le[:], uint64(p.Prog))
		for off := 0; ; {
			j := bytes.Index(img[off:], le[:])
			if j < 0 {
				break
			}
			hits = append(hits, hit{off + j, i + 1})
			off += j + 1
		}
	}
	sort.Slice(hits, func(a, b int) bool { return hits[a].off < hits[b].off })
	var order []int
	for k := 0; k+1 < len(hits); k += 2 {
		order = append(order, hits[k].idx)
	}
	return order
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// An fsession program takes two of BPF_MAX_TRAMP_LINKS: on 7.2 the kernel attaches 18 and
// refuses the 19th with E2BIG on both architectures (36 and 37 links); the links-N cases of
// every corpus agree with Resolve on where E2BIG starts.
func TestTrampNodesCorpus(t *testing.T) {
	for _, name := range []string{"6.1-amd64", "6.12-amd64", "6.12-arm64", "7.2-amd64", "7.2-arm64"} {
		n := 0
		for _, c := range readCorpus(t, name) {
			if !strings.Contains(c.ID, "-links-") {
				continue
			}
			if c.Request.Arch == btfmodel.ARM64 && strings.Contains(c.ID, "fmod_ret") {
				// 35 fmod_ret programs overflow arm64's page first: the backend's E2BIG.
				continue
			}
			n++
			m, err := c.Request.Model()
			if err != nil {
				t.Fatalf("%s: %v", c.ID, err)
			}
			_, err = Resolve(&c.Request, m)
			if got, want := errors.Is(err, E2BIG), c.Errno == "E2BIG"; got != want {
				t.Errorf("%s %s: Resolve says %v, the kernel %q", name, c.ID, err, c.Errno)
			}
		}
		if n == 0 {
			t.Errorf("%s: no links-N cases", name)
		}
	}
}

// Cookie slots are numbered in emission order (newest first), only for fsession programs
// that call bpf_session_cookie, and a program keeps its slot in both of its blocks.
func TestSessionCookieSlots(t *testing.T) {
	req := &Request{Arch: btfmodel.AMD64, Kernel: btfmodel.Kernel72, Proto: "int f(int a, u64 b)", Progs: []Prog{
		{Kind: Fsession, SessionCookie: true}, {Kind: Fsession}, {Kind: Fentry}, {Kind: Fsession, SessionCookie: true}, {Kind: Fexit}}}
	m, err := req.Model()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Resolve(req, m)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Fsessions != 3 || tr.CookieSlots != 2 {
		t.Errorf("fsessions %d, cookie slots %d; want 3 and 2", tr.Fsessions, tr.CookieSlots)
	}
	slots := func(l []ProgRef) (s [][2]int) {
		for _, r := range l {
			s = append(s, [2]int{r.Index, r.CookieSlot})
		}
		return s
	}
	if got, want := slots(tr.Fentry), [][2]int{{4, 0}, {3, -1}, {2, -1}, {1, 1}}; !equalPairs(got, want) {
		t.Errorf("fentry list %v, want %v", got, want)
	}
	if got, want := slots(tr.Fexit), [][2]int{{5, -1}, {4, 0}, {2, -1}, {1, 1}}; !equalPairs(got, want) {
		t.Errorf("fexit list %v, want %v", got, want)
	}
}

func equalPairs(a, b [][2]int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The func_meta words of the 7.2 captures: `mov eax, 0x202` before the cookie program of
// bpf_fentry_test2-fsession-cookie-nocookie (2 arguments, cookie at ctx[-2]) and
// `movabs rax, 0x8000000000000002` after the original call.
func TestFuncMeta(t *testing.T) {
	if got := FuncMeta(2, 2, false); got != 0x202 {
		t.Errorf("entry meta %#x, want 0x202", got)
	}
	if got := FuncMeta(2, 0, true); got != 0x8000000000000002 {
		t.Errorf("return meta %#x, want 0x8000000000000002", got)
	}
}

// bpf_session_cookie is an fsession kfunc: a request giving another kind a cookie is refused.
func TestSessionCookieNeedsFsession(t *testing.T) {
	doc := `{"arch":"amd64","kernel":"7.2","proto":"int f(int a)","progs":[{"kind":"fexit","session_cookie":true}]}`
	_, err := ParseRequest(strings.NewReader(doc), "")
	if err == nil || !strings.Contains(err.Error(), "progs[0]: session_cookie is for fsession programs, not fexit") {
		t.Errorf("got %v", err)
	}
}
