package emu_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel"
)

// kernelCase is a corpus case with its image bytes.
func kernelCase(t *testing.T, dir, id string) (*kernel.CorpusCase, []byte) {
	t.Helper()
	cases, err := kernel.ReadCorpus("../testdata/kernel/" + dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cases {
		if cases[i].ID == id {
			code, err := hex.DecodeString(cases[i].Image)
			if err != nil || len(code) == 0 {
				t.Fatalf("%s/%s: no image (%v)", dir, id, err)
			}
			return &cases[i], code
		}
	}
	t.Fatalf("%s not in the %s corpus", id, dir)
	return nil, nil
}

// patchOnce replaces the only occurrence of old in code.
func patchOnce(t *testing.T, code, old, new []byte) []byte {
	t.Helper()
	if n := bytes.Count(code, old); n != 1 {
		t.Fatalf("% x occurs %d times in the image, want 1", old, n)
	}
	out := append([]byte(nil), code...)
	copy(out[bytes.Index(out, old):], new)
	return out
}

// runBoth runs an image checked in emulated code and traced by Go hooks; both reports
// must agree on the verdict and on which checks failed.
func runBoth(t *testing.T, r *jit.Request, code []byte, o emu.Options) *emu.Report {
	t.Helper()
	rep, err := emu.RunImage(r, code, o)
	if err != nil {
		t.Fatal(err)
	}
	o.Trace = true
	tr, err := emu.RunImage(r, code, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK != tr.OK || checkNames(rep) != checkNames(tr) {
		t.Fatalf("checked in emulated code: ok %v %s; traced: ok %v %s", rep.OK, checkNames(rep), tr.OK, checkNames(tr))
	}
	return tr
}

func checkNames(r *emu.Report) string {
	var s []string
	for _, c := range r.Failed() {
		s = append(s, c.Name)
	}
	return strings.Join(s, ",")
}

// failedWith says whether check name failed with a detail containing want.
func failedWith(r *emu.Report, name, want string) bool {
	for _, c := range r.Failed() {
		if c.Name == name && strings.Contains(c.Detail, want) {
			return true
		}
	}
	return false
}

// The kernel's 7.2 image of one fsession program calling bpf_session_cookie on
// bpf_fentry_test2 (two u64 arguments in the BTF) runs the program twice: func_meta 0x202
// (2 slots, cookie index 2) with is_return clear on entry, the cookie slot zeroed by the
// trampoline; 0x8000000000000202 on exit, with the return value slot and the mark the
// entry run stored. Expected values are the kernel's (docs/kernel-7.2-captured.md) and the
// stub's mark, never the oracle's.
func TestFsessionKernelImage(t *testing.T) {
	for _, dir := range []string{"7.2-amd64", "7.2-arm64"} {
		c, code := kernelCase(t, dir, "bpf_fentry_test2-fsession-cookie")
		args := []uint64{0x1111, 0x2222}
		ret := uint64(0x3333)
		r := runBoth(t, c.Request, code, emu.Options{Args: args, TargetRet: &ret, Clobber: true})
		if !r.OK {
			t.Fatalf("%s: the kernel's image fails:%s", dir, failures(r))
		}
		s := r.Programs[0].Session
		if s == nil || s.Entry == nil || s.Exit == nil {
			t.Fatalf("%s: no session report: %+v", dir, r.Programs[0])
		}
		if s.Entry.FuncMeta != 0x202 || s.Entry.IsReturn || s.Entry.Cookie == nil || *s.Entry.Cookie != 0 {
			t.Errorf("%s: entry run %+v, want func_meta 0x202, is_return false, cookie 0", dir, *s.Entry)
		}
		if s.Exit.FuncMeta != 0x8000000000000202 || !s.Exit.IsReturn || s.Exit.Cookie == nil || *s.Exit.Cookie != 0x5e55101100000101 {
			t.Errorf("%s: exit run %+v, want func_meta 0x8000000000000202, is_return true, cookie 0x5e55101100000101", dir, *s.Exit)
		}
		if len(s.Entry.Ctx) != 2 || len(s.Exit.Ctx) != 3 || s.Exit.Ctx[2] != ret || s.Exit.Ctx[0] != args[0] || s.Exit.Ctx[1] != args[1] {
			t.Errorf("%s: ctx on entry %#x, on exit %#x; want the arguments, and the return value only on exit", dir, s.Entry.Ctx, s.Exit.Ctx)
		}
		if r.Ret != ret {
			t.Errorf("%s: caller got %#x, want %#x", dir, r.Ret, ret)
		}
	}
}

// Patches of the x86 image, each caught by the session check: the entry func_meta's
// cookie index (mov eax, 0x202 -> 0x302: the program reads the saved rbx slot as its
// cookie), the is_return bit of the exit store (movabs rax, 0x8000000000000202 -> 0x202),
// and the zeroing of the cookie slot (its store moved onto the return value slot, which is
// zeroed anyway, so the slot keeps the poison).
func TestFsessionOracleCatchesBrokenImage(t *testing.T) {
	c, code := kernelCase(t, "7.2-amd64", "bpf_fentry_test2-fsession-cookie")
	o := emu.Options{Args: []uint64{0x1111, 0x2222}}
	for _, p := range []struct {
		name     string
		old, new []byte
		want     string
	}{
		{"cookie index", []byte{0xb8, 0x02, 0x02, 0x00, 0x00, 0x48}, []byte{0xb8, 0x02, 0x03, 0x00, 0x00, 0x48}, "expected 0x202 (is_return false, cookie index 2)"},
		{"is_return", []byte{0x48, 0xb8, 0x02, 0x02, 0, 0, 0, 0, 0, 0x80}, []byte{0x48, 0xb8, 0x02, 0x02, 0, 0, 0, 0, 0, 0}, "expected 0x8000000000000202 (is_return true, cookie index 2)"},
		{"cookie zeroing", []byte{0x31, 0xc0, 0x48, 0x89, 0x45, 0xd8}, []byte{0x31, 0xc0, 0x48, 0x89, 0x45, 0xf8}, "on entry: session cookie = 0xeeeeeeeeeeeeeeee, expected 0"},
	} {
		r := runBoth(t, c.Request, patchOnce(t, code, p.old, p.new), o)
		if r.OK || !failedWith(r, emu.CheckSession, p.want) {
			t.Errorf("%s patched: ok %v, want a session failure with %q:%s", p.name, r.OK, p.want, failures(r))
		}
	}
}

// An fmod_ret program between an fsession program's two runs sees the func_meta the
// fsession entry left (0x202), and the fexit program after the original sees is_return
// set: the kernel's 7.2 image, with the fmod_ret program returning non-zero, also skips
// the original but still runs both exit blocks.
func TestFsessionWithFmodRet(t *testing.T) {
	for _, dir := range []string{"7.2-amd64", "7.2-arm64"} {
		c, code := kernelCase(t, dir, "bpf_modify_return_test-fsession-cookie-fmod_ret-fexit")
		for _, rv := range []uint64{0, 7} {
			r := runBoth(t, c.Request, code, emu.Options{RetValues: []uint64{rv}})
			if !r.OK {
				t.Fatalf("%s fmod_ret %d: the kernel's image fails:%s", dir, rv, failures(r))
			}
			if r.Programs[1].NArgs != 0x202 || r.Programs[2].NArgs != 0x8000000000000002 {
				t.Errorf("%s: fmod_ret saw ctx[-1] %#x (want 0x202), fexit %#x (want 0x8000000000000002)", dir, r.Programs[1].NArgs, r.Programs[2].NArgs)
			}
			if r.OriginalCalled != (rv == 0) || r.Programs[0].Session.Exit == nil || (rv != 0 && r.Ret != rv) {
				t.Errorf("%s fmod_ret %d: original called %v, exit run %v, ret %#x", dir, rv, r.OriginalCalled, r.Programs[0].Session.Exit != nil, r.Ret)
			}
		}
	}
}

// x86 jmp mode: the kernel's 7.2 fexit image is entered by a jump and returns straight to
// the caller. The same bytes claimed for 6.12 (entered by call: the trampoline must skip
// the site's return address) fail, and a 6.12 image (add rsp, 8 before ret) claimed for
// 7.2 fails: the stack the trampoline sees follows the profile.
func TestX86JmpModeEntry(t *testing.T) {
	c72, code72 := kernelCase(t, "7.2-amd64", "bpf_fentry_test2-fexit")
	c612, code612 := kernelCase(t, "6.12-amd64", "bpf_fentry_test2-fexit")
	if !bytes.Contains(code612, []byte{0x48, 0x83, 0xc4, 0x08}) || bytes.Contains(code72, []byte{0x48, 0x83, 0xc4, 0x08}) {
		t.Fatal("the 6.12 image should skip the return address (add rsp, 8), the 7.2 one not")
	}
	o := emu.Options{Args: []uint64{0x1111, 0x2222}}
	if r := runBoth(t, c72.Request, code72, o); !r.OK {
		t.Fatalf("7.2 image in jmp mode fails:%s", failures(r))
	}
	as := func(r *jit.Request, k btfmodel.Kernel) *jit.Request {
		q := *r
		q.Kernel = k
		return &q
	}
	for name, run := range map[string]func() *emu.Report{
		"7.2 image as 6.12": func() *emu.Report { return runBoth(t, as(c72.Request, btfmodel.Kernel612), code72, o) },
		"6.12 image as 7.2": func() *emu.Report { return runBoth(t, as(c612.Request, btfmodel.Kernel72), code612, o) },
	} {
		if r := run(); r.OK {
			t.Errorf("%s passes the oracle", name)
		}
	}
}

// arm64 7.2 copies stack-passed arguments for the programs with the unused high bytes of
// a narrow argument's slot cleared (lsl/lsr), and passes them unmasked to the original:
// bpf_log_attr_init's 11th slot is a 4-byte argument on the stack (7.2 BTF).
func TestArm64StackArgMasking(t *testing.T) {
	c, code := kernelCase(t, "7.2-arm64", "bpf_log_attr_init-fexit")
	m, err := c.Request.Model()
	if err != nil {
		t.Fatal(err)
	}
	n := m.NrRegs()
	if n != 11 || m.Args[len(m.Args)-1].Size != 4 {
		t.Fatalf("bpf_log_attr_init: %d slots, last argument %d bytes; want 11 and 4", n, m.Args[len(m.Args)-1].Size)
	}
	args := emu.DefaultArgs(n)
	r := runBoth(t, c.Request, code, emu.Options{Args: args})
	if !r.OK {
		t.Fatalf("the kernel's image fails:%s", failures(r))
	}
	if got, want := r.Programs[0].Ctx[10], args[10]&0xffffffff; got != want {
		t.Errorf("fexit sees slot 10 = %#x, want %#x", got, want)
	}
}

// The report says what the session check covered, in text and in JSON.
func TestFsessionReport(t *testing.T) {
	c, code := kernelCase(t, "7.2-amd64", "bpf_fentry_test2-fsession-cookie")
	r := runBoth(t, c.Request, code, emu.Options{Args: []uint64{1, 2}})
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"entry func_meta 0x202 is_return false session_cookie 0x0",
		"exit  func_meta 0x8000000000000202 is_return true session_cookie 0x5e55101100000101", "session       ok"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, b.String())
		}
	}
	j, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(j), `"session":{"entry":{"func_meta":514,"is_return":false,"ctx":[1,2],"session_cookie":0}`) {
		t.Errorf("JSON report lacks the entry run: %s", j)
	}
}

// trampjit's own 7.2 fsession images, checked in emulated code and traced (the same
// report): three fsession programs, the first and last calling bpf_session_cookie, plus a
// plain fentry attached last. By the kernel's rule (the captures' 0x402, 0x302 stores) the
// cookie indexes are 2 and 3 (3 and 4 with IP_ARG: the IP slot comes first); the newest
// programs run first, so the fentry program sees the slot count alone, program 2 and then
// program 1 (no cookie) see program 2's index, program 0 its own; on exit the same with
// is_return. A recursion miss of program 1 skips both its runs and nothing else.
func TestFsessionTrampjitImages(t *testing.T) {
	args := []uint64{0x1111_0000_0001, 0x2222_0000_0002}
	for _, arch := range []btfmodel.Arch{btfmodel.AMD64, btfmodel.ARM64} {
		for _, ip := range []bool{false, true} {
			progs := []jit.Prog{{Kind: jit.Fsession, SessionCookie: true, FuncIP: ip}, {Kind: jit.Fsession},
				{Kind: jit.Fsession, SessionCookie: true}, {Kind: jit.Fentry}}
			r := req(arch, btfmodel.Kernel72, "", "long f(u64 a, u64 b)", progs...)
			base := uint64(2)
			if ip {
				base = 3
			}
			for _, miss := range [][]int{nil, {1}} {
				rep := mustRun(t, r, emu.Options{Args: args, Miss: miss, Clobber: true})
				if !rep.OK {
					t.Fatalf("%s ip %v miss %v: fails:%s", arch, ip, miss, failures(rep))
				}
				if rep.Programs[3].NArgs != 2 {
					t.Errorf("%s: fentry sees ctx[-1] %#x, want 2", arch, rep.Programs[3].NArgs)
				}
				want := map[int]uint64{0: 2 | base<<8, 1: 2 | (base+1)<<8, 2: 2 | (base+1)<<8}
				for i, m := range want {
					s := rep.Programs[i].Session
					if len(miss) > 0 && i == 1 {
						if s.Entry != nil || s.Exit != nil || rep.Programs[1].Ran {
							t.Errorf("%s: missed program 1 ran: %+v", arch, s)
						}
						continue
					}
					if s.Entry == nil || s.Exit == nil || s.Entry.FuncMeta != m || s.Exit.FuncMeta != m|1<<63 {
						t.Errorf("%s ip %v: program %d: %+v %+v, want func_meta %#x then %#x", arch, ip, i, s.Entry, s.Exit, m, m|1<<63)
					}
				}
			}
		}
	}
}
