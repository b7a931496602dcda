package emu_test

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel"
)

// TestMutants flips displacements and immediates of images one at a time (trampjit's, and
// kernel images from the corpus) and runs each mutant under several inputs (plain; every
// program missing recursion, with clobbering stubs; each fmod_ret program in turn
// returning 7, or clobbering stubs where there is no fmod_ret): a mutant is killed when
// some input makes the oracle fail. Survivors are listed; the ones seen are equivalent
// in behaviour for these requests (a larger frame, a frame-record pointer only an
// unwinder reads, a dead x30 before `ret x9`, a branch landing on the NOP just before
// its target, a zero cookie stored into the slot enter overwrites or below sp while the
// run_ctx slot already holds zero, a func_meta store that the next store overwrites before
// any program reads it). riscv64 is held to less (90.9% when it was added): each frame-record
// save is an instruction of its own, and so are its equivalent survivors (the first
// frame's s0, the t0 and s0 saves a SKIP_FRAME return never reads back, the a5 reload that
// only struct_ops returns use, the a5 slot stores no tracing program reads).
func TestMutants(t *testing.T) {
	for _, trace := range []bool{false, true} {
		t.Run(fmt.Sprintf("trace=%v", trace), func(t *testing.T) {
			var killed, total, rvKilled, rvTotal int
			for _, c := range mutationCases(t) {
				k, n := killRate(t, c.name, c.req, c.code, trace)
				if c.req.Arch == btfmodel.RISCV64 {
					rvKilled, rvTotal = rvKilled+k, rvTotal+n
					continue
				}
				killed, total = killed+k, total+n
			}
			rate := float64(killed) / float64(total)
			t.Logf("kill rate %d/%d = %.1f%%", killed, total, 100*rate)
			if total < 500 || rate < 0.95 {
				t.Errorf("kill rate %d/%d too low", killed, total)
			}
			rate = float64(rvKilled) / float64(rvTotal)
			t.Logf("riscv64 kill rate %d/%d = %.1f%%", rvKilled, rvTotal, 100*rate)
			if rvTotal < 500 || rate < 0.9 {
				t.Errorf("riscv64 kill rate %d/%d too low", rvKilled, rvTotal)
			}
		})
	}
}

type mutationCase struct {
	name string
	req  *jit.Request
	code []byte
}

func mutationCases(t *testing.T) []mutationCase {
	var out []mutationCase
	for _, p := range profiles {
		progs := []jit.Prog{{Kind: jit.Fentry, Cookie: 0x1234567, FuncIP: true}, {Kind: jit.ModRet}, {Kind: jit.Fexit, Cookie: 3}}
		proto := "long f(int a, u64 b, u64 c)"
		if p.target == "bpf" {
			progs = []jit.Prog{{Kind: jit.Fentry, Cookie: 0x1234567, FuncIP: true}, {Kind: jit.Fexit, Cookie: 3}}
			proto = "long f(u64 a, u64 b, u64 c)"
		}
		r := req(p.arch, p.kernel, p.target, proto, progs...)
		img, _, err := emu.Generate(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, mutationCase{fmt.Sprintf("trampjit %s %s", p.arch, p.kernel), r, img.Code})
	}
	for dir, ids := range map[string][]string{
		"6.12-amd64": {"bpf_modify_return_test-fmod_ret-cookies", "tcp_v4_connect-fentry2-fexit2-func-ip"},
		"6.12-arm64": {"bpf_modify_return_test-fmod_ret-cookies", "tcp_v4_connect-fentry2-fexit2-func-ip"},
		"6.1-amd64":  {"bpf_fentry_test2-cookies-negative", "tcp_v4_connect-fentry2-fexit2-func-ip"},
		"6.1-arm64":  {"bpf-tj_args3-cookies-64bit"},
		// 7.2: jmp mode (x86), fsession with cookies beside fmod_ret and fexit, and arm64
		// stack arguments.
		"7.2-amd64": {"bpf_modify_return_test-fsession-cookie-fmod_ret-fexit", "bpf_fentry_test2-fsession4-cookie3",
			"bpf_fentry_test2-fsession-cookie-nocookie"},
		"7.2-arm64": {"bpf_modify_return_test-fsession-cookie-fmod_ret-fexit", "bpf_fentry_test2-fsession4-cookie3", "__bpf_sk_lookup-fexit"},
		// riscv64: compressed forms, the skip NOP per program block (7.2), fsession.
		"6.12-riscv64": {"bpf_modify_return_test-fmod_ret-cookies", "tcp_v4_connect-fentry2-fexit2-func-ip"},
		"7.2-riscv64":  {"bpf_modify_return_test-fsession-cookie-fmod_ret-fexit", "bpf_fentry_test2-fsession4-cookie3", "__bpf_sk_lookup-fexit"},
	} {
		cases, err := kernel.ReadCorpus("../testdata/kernel/" + dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			found := false
			for _, c := range cases {
				if c.ID == id {
					code, _ := hex.DecodeString(c.Image)
					out = append(out, mutationCase{"kernel " + dir + " " + id, c.Request, code})
					found = true
				}
			}
			if !found {
				t.Fatalf("%s: no case %s", dir, id)
			}
		}
	}
	return out
}

// killRate runs every mutant of code and counts those the oracle catches.
func killRate(t *testing.T, name string, r *jit.Request, code []byte, trace bool) (int, int) {
	m, err := r.Model()
	if err != nil {
		t.Fatal(err)
	}
	h, err := emu.NewHarness(r.Arch)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var all []int
	mod := 0
	for i, p := range r.Progs {
		all = append(all, i)
		if p.Kind == jit.ModRet || (p.Kind == jit.LSM && !m.IsVoid()) {
			mod++
		}
	}
	inputs := []emu.Options{{}, {Miss: all, Clobber: true}}
	if mod == 0 {
		inputs = append(inputs, emu.Options{Clobber: true})
	}
	for j := 0; j < mod; j++ {
		// fmod_ret program j short-circuits: every fmod_ret branch is taken by some input.
		rv := make([]uint64, mod)
		rv[j] = 7
		inputs = append(inputs, emu.Options{RetValues: rv})
	}
	muts := emu.Mutants(r.Arch, code)
	dead := make([]bool, len(muts))
	for _, o := range inputs {
		o.Trace = trace
		l, err := h.Load(r, m, emu.Addrs(r), code, o)
		if err != nil {
			t.Fatal(err)
		}
		if rep, err := l.Call(1); err != nil || !rep.OK {
			t.Fatalf("%s: unmutated image fails %+v: %v%s", name, o, err, failures(rep))
		}
		for i, mu := range muts {
			if dead[i] {
				continue
			}
			if err := l.SetImage(mu.Code); err != nil {
				t.Fatal(err)
			}
			rep, err := l.Call(1)
			dead[i] = err != nil || !rep.OK
			if rep == nil {
				continue
			}
			for _, c := range rep.Failed() {
				if strings.Contains(c.Detail, "traced replay passed") {
					// The checks in emulated code and the Go oracle must agree.
					t.Errorf("%s mutant +%#x %s: %s", name, mu.Offset, mu.Desc, c.Detail)
				}
			}
		}
		if err := l.SetImage(code); err != nil {
			t.Fatal(err)
		}
	}
	k := 0
	for i, d := range dead {
		if d {
			k++
		} else {
			t.Logf("%s: survivor at +%#x: %s", name, muts[i].Offset, muts[i].Desc)
		}
	}
	t.Logf("%s: %d/%d mutants killed", name, k, len(muts))
	return k, len(muts)
}
