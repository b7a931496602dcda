package jit

import (
	"errors"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
)

func TestParseRequestErrors(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"arch":"amd64","kernel":"6.12","proto":"int f(int a)","progs":[{"kind":"fentry"}],"bogus":1}`, `unknown field "bogus"`},
		{"{\"arch\":\"amd64\",\n\"kernel\": 6.12}", "line 2 column"},
		{`{"arch":"mips","kernel":"6.12","proto":"int f(int a)","progs":[{"kind":"fentry"}]}`, `arch "mips"`},
		{`{"arch":"amd64","kernel":"5.10","proto":"int f(int a)","progs":[{"kind":"fentry"}]}`, `kernel "5.10"`},
		{`{"arch":"amd64","kernel":"6.12","progs":[{"kind":"fentry"}]}`, "needs btf and func, or proto"},
		{`{"arch":"amd64","kernel":"6.12","proto":"int f(int a)","btf":"x","progs":[{"kind":"fentry"}]}`, "not both"},
		{`{"arch":"amd64","kernel":"6.12","proto":"int f(int a)","progs":[]}`, "no progs"},
		{`{"arch":"amd64","kernel":"6.12","proto":"int f(int a)","progs":[{"kind":"kprobe"}]}`, `unknown program kind "kprobe"`},
		{`{"arch":"amd64","kernel":"6.12","proto":"int f(int a)","progs":[{"kind":"fentry","cookie":"0xzz"}]}`, `cookie: "0xzz" is not a 64-bit integer`},
		{`{"arch":"amd64","kernel":"6.12","proto":"int f(int a)","progs":[{"kind":"fentry"}],"addrs":{"image":"0x10","func":"0x20","progs":[]}}`, "addrs.progs has 0 entries for 1 progs"},
		{`{"arch":"amd64","kernel":"6.12","proto":"int f(int a)","progs":[` + strings.Repeat(`{"kind":"fentry"},`, 1024) + `{"kind":"fexit"}]}`, "1025 programs: trampjit takes at most 1024 in one request"},
		// The kernel's trampoline flags are a u32 (bpf_trampoline_update); wider values used to
		// be cut silently to 32 bits.
		{`{"arch":"amd64","kernel":"6.12","proto":"int f(int a)","progs":[{"kind":"fentry"}],"flags":"0x100000001"}`, "flags 0x100000001: wider than the kernel's 32-bit"},
		{`{"arch":"amd64","kernel":"6.12","proto":"int f(int a)","progs":[{"kind":"fentry"}],"flags":"0x1001"}`, "0x1000 is no BPF_TRAMP_F_* flag"},
		{`{"arch":"amd64"} {}`, "more than one JSON value"},
	} {
		_, err := ParseRequest(strings.NewReader(c.doc), "")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n  got %v\n  want %q", c.doc, err, c.want)
		}
	}
}

// 39 links is a valid request that the kernel refuses: bpf_trampoline_link_prog fails with
// E2BIG once a trampoline holds BPF_MAX_TRAMP_LINKS (the corpus's links-39-e2big cases).
func TestTooManyLinks(t *testing.T) {
	doc := `{"arch":"amd64","kernel":"6.12","proto":"int f(int a)","progs":[` + strings.Repeat(`{"kind":"fentry"},`, 38) + `{"kind":"fexit"}]}`
	req, err := ParseRequest(strings.NewReader(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	m, err := req.Model()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Resolve(req, m)
	if !errors.Is(err, E2BIG) {
		t.Errorf("39 links: got %v, want the kernel's E2BIG", err)
	}
}

// A corpus request is not parsed by ParseRequest; Resolve must still refuse an inconsistent
// one instead of indexing past addrs.progs.
func TestResolveValidates(t *testing.T) {
	req := &Request{Arch: "amd64", Kernel: "6.12", Proto: "int f(int a)", Progs: []Prog{{Kind: Fentry}, {Kind: Fexit}},
		Addrs: &Addrs{Image: 0x1000, Func: 0x2000, Progs: []ProgAddrs{{Prog: 1, BPFFunc: 2}}}}
	m, err := req.Model()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(req, m); err == nil || !strings.Contains(err.Error(), "addrs.progs has 1 entries for 2 progs") {
		t.Errorf("got %v", err)
	}
}

// Architecture aliases validate to the backend's own name (x86_64 used to pass validation
// and then find no backend).
func TestArchAlias(t *testing.T) {
	for alias, want := range map[string]string{"x86_64": "amd64", "aarch64": "arm64"} {
		req, err := ParseRequest(strings.NewReader(`{"arch":"`+alias+`","kernel":"6.12","proto":"int f(int a)","progs":[{"kind":"fentry"}]}`), "")
		if err != nil || string(req.Arch) != want {
			t.Errorf("%s: %v, arch %q; want %q", alias, err, req.Arch, want)
		}
	}
}

func TestCookies(t *testing.T) {
	doc := `{"arch":"arm64","kernel":"6.12","proto":"int f(int a)","progs":[
		{"kind":"fentry","cookie":0},{"kind":"fentry","cookie":7},{"kind":"fentry","cookie":"0xffffffff"},
		{"kind":"fentry","cookie":-1},{"kind":"fentry","cookie":"0x123456789abcdef0"},{"kind":"fentry","cookie":"-2"}]}`
	req, err := ParseRequest(strings.NewReader(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{0, 7, 0xffffffff, 0xffffffffffffffff, 0x123456789abcdef0, 0xfffffffffffffffe}
	for i, p := range req.Progs {
		if uint64(p.Cookie) != want[i] {
			t.Errorf("cookie %d = %#x, want %#x", i, uint64(p.Cookie), want[i])
		}
	}
}

// Flags per attachment, from bpf_trampoline_update (kernel/bpf/trampoline.c): an fsession
// program has a fexit node, so it calls the original; in jmp mode (x86_64 7.2) SKIP_FRAME is
// cleared again (the 7.2 images end `leave; ret` without `add rsp, 8`).
func TestDeriveFlags(t *testing.T) {
	for _, c := range []struct {
		arch  btfmodel.Arch
		k     btfmodel.Kernel
		progs []Prog
		want  Flags
	}{
		{btfmodel.AMD64, btfmodel.Kernel612, []Prog{{Kind: Fentry}}, 0x01},
		{btfmodel.AMD64, btfmodel.Kernel612, []Prog{{Kind: Fentry, FuncIP: true}}, 0x09},
		{btfmodel.AMD64, btfmodel.Kernel612, []Prog{{Kind: Fentry}, {Kind: Fexit}}, 0x06},
		{btfmodel.AMD64, btfmodel.Kernel612, []Prog{{Kind: Fexit, FuncIP: true}}, 0x0e},
		{btfmodel.AMD64, btfmodel.Kernel612, []Prog{{Kind: ModRet}}, 0x06},
		{btfmodel.AMD64, btfmodel.Kernel612, []Prog{{Kind: LSM}}, 0x06},
		{btfmodel.AMD64, btfmodel.Kernel72, []Prog{{Kind: Fentry}}, 0x01},
		{btfmodel.AMD64, btfmodel.Kernel72, []Prog{{Kind: Fexit}}, 0x02},
		{btfmodel.AMD64, btfmodel.Kernel72, []Prog{{Kind: Fsession, FuncIP: true}}, 0x0a},
		{btfmodel.AMD64, btfmodel.Kernel72, []Prog{{Kind: LSM}}, 0x02},
		{btfmodel.ARM64, btfmodel.Kernel72, []Prog{{Kind: Fsession}}, 0x06},
		{btfmodel.ARM64, btfmodel.Kernel72, []Prog{{Kind: Fentry}}, 0x01},
	} {
		if got := DeriveFlags(c.arch, c.k, c.progs); got != c.want {
			t.Errorf("%s %s %v: flags %#x (%v), want %#x", c.arch, c.k, c.progs, uint32(got), got, uint32(c.want))
		}
	}
}

func TestResolveOrder(t *testing.T) {
	doc := `{"arch":"amd64","kernel":"6.12","proto":"int f(int a, u64 b)","progs":[
		{"kind":"fentry"},{"kind":"fexit"},{"kind":"fentry"},{"kind":"fmod_ret"},{"kind":"lsm"},{"kind":"fexit"}]}`
	req, err := ParseRequest(strings.NewReader(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	m, err := req.Model()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Resolve(req, m)
	if err != nil {
		t.Fatal(err)
	}
	idx := func(refs []ProgRef) (out []int) {
		for _, r := range refs {
			out = append(out, r.Index)
		}
		return out
	}
	// Newest first within each kind; the LSM program on an int function is an fmod_ret one.
	if got := idx(tr.Fentry); len(got) != 2 || got[0] != 3 || got[1] != 1 {
		t.Errorf("fentry order %v, want [3 1]", got)
	}
	if got := idx(tr.ModRet); len(got) != 2 || got[0] != 5 || got[1] != 4 {
		t.Errorf("fmod_ret order %v, want [5 4]", got)
	}
	if got := idx(tr.Fexit); len(got) != 2 || got[0] != 6 || got[1] != 2 {
		t.Errorf("fexit order %v, want [6 2]", got)
	}
	if tr.Flags != FlagCallOrig|FlagSkipFrame {
		t.Errorf("flags %v", tr.Flags)
	}
	if tr.Fentry[0].Addr == tr.Fentry[1].Addr || tr.Image == 0 || tr.Helpers["__bpf_prog_enter_recur"] == 0 {
		t.Errorf("synthetic addresses missing: %+v", tr)
	}
	// LSM on a void hook joins the fexit list.
	void := &btfmodel.FuncModel{Name: "bpf_lsm_task_free", Args: []btfmodel.Arg{{Size: 8}}}
	req.Progs = []Prog{{Kind: LSM}}
	req.Addrs = nil
	tr, err = Resolve(req, void)
	if err != nil || len(tr.Fexit) != 1 || len(tr.ModRet) != 0 {
		t.Errorf("LSM on void hook: %+v %v", tr, err)
	}
}

func TestEnterExit(t *testing.T) {
	for _, c := range []struct {
		k           btfmodel.Kernel
		p           Prog
		enter, exit string
	}{
		{btfmodel.Kernel612, Prog{Kind: Fentry}, "__bpf_prog_enter_recur", "__bpf_prog_exit_recur"},
		{btfmodel.Kernel612, Prog{Kind: Fexit, Sleepable: true}, "__bpf_prog_enter_sleepable_recur", "__bpf_prog_exit_sleepable_recur"},
		{btfmodel.Kernel612, Prog{Kind: LSM}, "__bpf_prog_enter", "__bpf_prog_exit"},
		{btfmodel.Kernel612, Prog{Kind: LSM, Sleepable: true}, "__bpf_prog_enter_sleepable", "__bpf_prog_exit_sleepable"},
		// Debian 6.1.176 has the 6.2 table (the kernel corpus names __bpf_prog_enter_recur).
		{btfmodel.Kernel61, Prog{Kind: Fentry}, "__bpf_prog_enter_recur", "__bpf_prog_exit_recur"},
		{btfmodel.Kernel61, Prog{Kind: ModRet, Sleepable: true}, "__bpf_prog_enter_sleepable_recur", "__bpf_prog_exit_sleepable_recur"},
		{btfmodel.Kernel61, Prog{Kind: LSM}, "__bpf_prog_enter", "__bpf_prog_exit"},
	} {
		if e, x := EnterExit(c.k, c.p); e != c.enter || x != c.exit {
			t.Errorf("%s %+v: %s/%s, want %s/%s", c.k, c.p, e, x, c.enter, c.exit)
		}
	}
}
