package amd64

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// Expected bytes below were derived by hand from arch/x86/net/bpf_jit_comp.c (6.12
// __arch_prepare_bpf_trampoline, 6.1 arch_prepare_bpf_trampoline): their emission order,
// frame layout, save_args placement and the emit_* encoding rules; the kernel corpus checks
// the generator against captured images as well (kernel.TestCorpusByteIdentical).

const (
	k61  = btfmodel.Kernel61
	k612 = btfmodel.Kernel612
)

var (
	fentry = jit.Prog{Kind: jit.Fentry}
	fexit  = jit.Prog{Kind: jit.Fexit}
	modret = jit.Prog{Kind: jit.ModRet}
)

func contains(t *testing.T, what string, code []byte, hexs string) {
	t.Helper()
	if !bytes.Contains(code, mustHex(hexs)) {
		t.Errorf("%s: % x not found in\n% x", what, mustHex(hexs), code)
	}
}

// TestSpecFmodRet612: 6.12, one fmod_ret on bpf_fentry_test2 (invoke_bpf_mod_ret).
func TestSpecFmodRet612(t *testing.T) {
	img := generate(t, tramp(k612, fentryTest2(), modret))
	matchMask(t, img.Code, `55 4889e5 4883ec38 48895dd8 b802000000 488945e0 48897de8 488975f0
		48bf................ e8........
		31c0 488945f8 31ff 48897dc8 48bf................ 488d75c8 e8........ 4889c3 4885c0 740d
		488d7de8 e8........ 488945f8 48bf................ 4889de 488d55c8 e8........
		48837df800 0f851f000000
		488b7de8 488b75f0 e8........ 488945f8 0f1f440000 2e0f1f840000000000
		48bf................ e8........ 488b45f8 488b5dd8 c9 4883c408 c3 cc`)
}

// TestFentryNoArgs612 is a fentry-only trampoline on f(void): ctx at rbp-0, which needs an
// explicit zero disp8 (lea rdi,[rbp+0] is 48 8d 7d 00).
func TestFentryNoArgs612(t *testing.T) {
	img := generate(t, tramp(k612, scalars(), fentry))
	matchMask(t, img.Code, `55 4889e5 4883ec20 48895df0 31c0 488945f8
		31ff 48897de0 48bf................ 488d75e0 e8........ 4889c3 4885c0 7409
		488d7d00 e8........ 48bf................ 4889de 488d55e0 e8........
		488b5df0 c9 c3 cc`)
}

func TestFentryRestoreRegs61(t *testing.T) {
	img := generate(t, tramp(k61, fentryTest2(), fentry))
	// fentry-only, 2 args: ctx 0x10, run_ctx = stack 0x28 (no return-value slot without CALL_ORIG).
	matchMask(t, section(t, img, jit.SecPrologue), "55 4889e5 4883ec28 53")
	matchMask(t, section(t, img, jit.SecEpilogue), "488b7df0 488b75f8 5b c9 c3 cc")
}

// TestStackArgs612: 7 arguments, the 7th copied from the caller's stack (save_args, 6.6+).
func TestStackArgs612(t *testing.T) {
	m := scalars(4, 8, 2, 4, 8, 1, 4) // bpf_modify_return_test2
	img := generate(t, tramp(k612, m, fexit))
	matchMask(t, section(t, img, jit.SecPrologue), "55 4889e5 4883ec68 48895db0")
	matchMask(t, section(t, img, jit.SecNrArgs), "b807000000 488945b8")
	matchMask(t, section(t, img, jit.SecArgSpill), `48897dc0 488975c8 488955d0 48894dd8 4c8945e0
		4c894de8 488b4518 488945f0 c745f400000000`)
	matchMask(t, section(t, img, jit.SecCallOrig), `488b7dc0 488b75c8 488b55d0 488b4dd8 4c8b45e0
		4c8b4de8 488b4518 48894598 c7459c00000000 e8........`)
	if _, err := (Backend{}).Generate(tramp(k61, m, fexit)); !errors.Is(err, jit.ENOTSUPP) {
		t.Errorf("6.1 with 7 args: err %v, want ENOTSUPP", err)
	}
}

// TestOutOfOrder612: a struct that no longer fits the argument registers goes wholly on the
// stack while a later scalar still takes r9 (save_args).
func TestOutOfOrder612(t *testing.T) {
	img := generate(t, tramp(k612, scalars(8, 4, 4, 16, 16, 4, 4), fexit))
	matchMask(t, section(t, img, jit.SecPrologue), "55 4889e5 4881ec88000000 48895da0")
	matchMask(t, section(t, img, jit.SecNrArgs), "b809000000 488945a8")
	matchMask(t, section(t, img, jit.SecArgSpill), `48897db0 488975b8 488955c0 48894dc8 4c8945d0
		488b4518 488945d8 488b4520 488945e0 4c894de8 488b4528 488945f0`)
	matchMask(t, section(t, img, jit.SecCallOrig), `488b7db0 488b75b8 488b55c0 488b4dc8 4c8b45d0
		4c8b4de8 488b4518 48898578ffffff 488b4520 48894580 488b4528 48894588 e8........`)
}

// TestTwelveArgs612: 12 slots + IP_ARG reach the disp32 forms of emit_insn_suffix and the
// sub rsp,imm32 form of the prologue.
func TestTwelveArgs612(t *testing.T) {
	img := generate(t, tramp(k612, eights(12), jit.Prog{Kind: jit.Fexit, FuncIP: true}))
	// ctx 0x68, nregs 0x70, ip 0x78, rbx 0x80, run_ctx 0x90, stack 0xc8.
	matchMask(t, section(t, img, jit.SecPrologue), "55 4889e5 4881ecc8000000 48895d80")
	matchMask(t, section(t, img, jit.SecNrArgs), "b80c000000 48894590")
	matchMask(t, section(t, img, jit.SecIP), "48c7c060452381 48894588")
	p := section(t, img, jit.SecFexit(1))
	matchMask(t, p[:31], "31ff 4889bd70ffffff 48bf................ 488db570ffffff e8........")
	contains(t, "lea rdi ctx", p, "488d7d98 e8")
	contains(t, "lea rdx run_ctx", p, "4889de 488d9570ffffff e8")
	// Six stack slots copied to the outgoing area at rsp = rbp-0xc8, ascending.
	contains(t, "outgoing", section(t, img, jit.SecCallOrig), `488b4518 48898538ffffff
		488b4520 48898540ffffff 488b4528 48898548ffffff 488b4530 48898550ffffff
		488b4538 48898558ffffff 488b4540 48898560ffffff e8`)
}

// TestCookies checks emit_mov_imm64's choices for cookies: xor for 0, mov r32 below 2^32,
// the 7-byte sign-extended form (6.12), else movabs.
func TestCookies(t *testing.T) {
	for _, tc := range []struct {
		cookie   int64
		k61, k12 string
	}{
		{0, "31ff", "31ff"},
		{1, "bf01000000", "bf01000000"},
		{0x7fffffff, "bfffffff7f", "bfffffff7f"},
		{0x80000000, "bf00000080", "bf00000080"},
		{0xffffffff, "bfffffffff", "bfffffffff"},
		{-1, "48bfffffffffffffffff", "48c7c7ffffffff"},
		{-0x80000000, "48bf00000080ffffffff", "48c7c700000080"},
		{-0x80000001, "48bfffffff7fffffffff", "48bfffffff7fffffffff"},
		{0x100000000, "48bf0000000001000000", "48bf0000000001000000"},
		{0x1234567890, "48bf9078563412000000", "48bf9078563412000000"},
	} {
		for _, k := range []struct {
			k    btfmodel.Kernel
			want string
			run  string // mov [rbp-run_ctx], rdi for fentry-only on 2 args
		}{{k61, tc.k61, "48897dd8"}, {k612, tc.k12, "48897dd0"}} {
			p := jit.Prog{Kind: jit.Fentry, Cookie: jit.Cookie(tc.cookie)}
			img := generate(t, tramp(k.k, fentryTest2(), p))
			want := mustHex(k.want + k.run)
			if got := section(t, img, jit.SecFentry(1)); !bytes.HasPrefix(got, want) {
				t.Errorf("%s cookie %#x: got % x, want % x", k.k, tc.cookie, got[:len(want)], want)
			}
		}
	}
}

// TestIPArg: the IP slot holds func_addr, 7 bytes on 6.12 and movabs on 6.1 (emit_mov_imm64).
func TestIPArg(t *testing.T) {
	p := jit.Prog{Kind: jit.Fexit, FuncIP: true}
	img := generate(t, tramp(k612, fentryTest2(), p))
	matchMask(t, section(t, img, jit.SecIP), "48c7c060452381 488945d8")
	matchMask(t, section(t, img, jit.SecPrologue), "55 4889e5 4883ec40 48895dd0")
	img = generate(t, tramp(k61, fentryTest2(), p))
	matchMask(t, section(t, img, jit.SecIP), "48b8 60452381ffffffff 488945d8")
	matchMask(t, section(t, img, jit.SecPrologue), "55 4889e5 4883ec38 53")
}

// TestTailCallCtx: push rax after sub, reload rax with disp32 before the original call or,
// without one, before returning (the rax reload always uses disp32).
func TestTailCallCtx(t *testing.T) {
	tr := tramp(k612, fentryTest2(), fexit)
	tr.Flags |= jit.FlagTailCallCtx
	img := generate(t, tr)
	matchMask(t, section(t, img, jit.SecPrologue), "55 4889e5 4883ec38 50 48895dd8")
	matchMask(t, section(t, img, jit.SecCallOrig), "488b7de8 488b75f0 488b85c0ffffff e8........")
	tr = tramp(k61, fentryTest2(), fexit)
	tr.Flags |= jit.FlagTailCallCtx
	img = generate(t, tr)
	matchMask(t, section(t, img, jit.SecPrologue), "55 4889e5 4883ec30 50 53")
	matchMask(t, section(t, img, jit.SecCallOrig), "488b7de8 488b75f0 488b85c8ffffff e8........")
	tr = tramp(k612, fentryTest2(), fentry)
	tr.Flags |= jit.FlagTailCallCtx
	img = generate(t, tr)
	matchMask(t, section(t, img, jit.SecEpilogue), "488b7df0 488b75f8 488b85c8ffffff 488b5de0 c9 c3 cc")
}

// TestOrigStack: call *rbx through the return address (ff d3: no retpoline, no call-depth
// accounting).
func TestOrigStack(t *testing.T) {
	for _, k := range []btfmodel.Kernel{k61, k612} {
		tr := tramp(k, fentryTest2(), fexit)
		tr.Flags |= jit.FlagOrigStack | jit.FlagShareIPModify
		img := generate(t, tr)
		matchMask(t, section(t, img, jit.SecCallOrig), "488b7de8 488b75f0 488b5d08 ffd3")
		matchMask(t, section(t, img, jit.SecRetval), "488945f8")
		matchMask(t, section(t, img, jit.SecIPAfterCall), "0f1f440000")
	}
}

// TestRetFentryRet: struct_ops-style fentry whose return value is kept (invoke_bpf_prog
// stores it; the epilogue reloads it).
func TestRetFentryRet(t *testing.T) {
	tr := tramp(k612, fentryTest2(), fentry)
	tr.Flags = jit.FlagRetFentryRet
	img := generate(t, tr)
	// Return slot shifts ctx to 0x18; run_ctx 0x38 (as for fexit).
	matchMask(t, section(t, img, jit.SecFentry(1))[0x1c:0x2e], "4885c0 740d 488d7de8 e8........ 488945f8")
	matchMask(t, section(t, img, jit.SecEpilogue), "488b45f8 488b5dd8 c9 c3 cc")
}

// TestFeatures: IBT, return thunk and call-depth switches (the preamble, emit_return and
// emit_patch / emit_rsb_call).
func TestFeatures(t *testing.T) {
	tr := tramp(k61, fentryTest2(), fexit)
	tr.Features.IBT = true
	img := generate(t, tr)
	matchMask(t, img.Code[:5], "f30f1efa 55")
	tr = tramp(k612, fentryTest2(), fexit)
	tr.Features.IBT = true
	if img = generate(t, tr); img.Code[0] != 0x55 {
		t.Errorf("6.12 direct trampoline starts with % x, want push rbp", img.Code[:4])
	}
	// Indirect (struct_ops) trampolines on 6.12 start with ENDBR; Debian 6.12 has IBT.
	tr = tramp(k612, fentryTest2(), fentry)
	tr.Flags = jit.FlagIndirect | jit.FlagRetFentryRet
	matchMask(t, generate(t, tr).Code[:5], "f30f1efa 55")

	// Without a patched-call address, orig_call = func + (4 if ENDBR or its poison) + 5.
	for _, tc := range []struct {
		k    btfmodel.Kernel
		ibt  bool
		want uint64
	}{{k61, false, tFunc + 5}, {k61, true, tFunc + 9}, {k612, false, tFunc + 9}} {
		tr := tramp(tc.k, fentryTest2(), fexit)
		tr.IP, tr.Features.IBT = 0, tc.ibt
		img := generate(t, tr)
		var got uint64
		for _, r := range img.Relocs {
			if r.Symbol == "func" {
				got = img.Base + uint64(r.Offset) + 4 + uint64(int32(binary.LittleEndian.Uint32(img.Code[r.Offset:])))
			}
		}
		if got != tc.want {
			t.Errorf("%s ibt=%v: orig call to %#x, want %#x", tc.k, tc.ibt, got, tc.want)
		}
	}

	for _, k := range []btfmodel.Kernel{k61, k612} {
		tr := tramp(k, fentryTest2(), fexit)
		tr.Features.Rethunk = true
		img := generate(t, tr)
		matchMask(t, img.Code[len(img.Code)-10:], "c9 4883c408 e9........")
	}

	// Call depth: template before the preamble and before every call but ORIG_STACK's.
	tr = tramp(k612, fentryTest2(), fentry, fexit)
	tr.Features.CallDepth = true
	img = generate(t, tr)
	if n := bytes.Count(img.Code, mustHex("6548c13d")); n != 1+3*2+3 {
		t.Errorf("6.12 call depth: %d templates, want 10", n)
	}
	matchMask(t, img.Code[:10], "6548c13d........05 55")
	contains(t, "je over lea+template+call", img.Code, "4885c0 7412 488d7de8 6548c13d")
	tr = tramp(k61, fentryTest2(), fentry, fexit)
	plain := generate(t, tr).Code
	tr.Features.CallDepth = true
	if !bytes.Equal(generate(t, tr).Code, plain) {
		t.Errorf("6.1 has no call-depth accounting, but the switch changed its bytes")
	}
}

// TestModRetBranches: every jne lands on do_fexit, which is 16-aligned and padded with the
// profile's NOPs (invoke_bpf_mod_ret's jne placeholders, the do_fexit alignment, emit_nops).
func TestModRetBranches(t *testing.T) {
	for _, k := range []btfmodel.Kernel{k61, k612} {
		for n := 1; n <= 4; n++ {
			progs := []jit.Prog{fexit}
			for i := 0; i < n; i++ {
				progs = append(progs, jit.Prog{Kind: jit.ModRet, Sleepable: i == 1, Cookie: jit.Cookie(i)})
			}
			img := generate(t, tramp(k, scalars(8, 4, 2), progs...))
			var doFexit int
			for _, s := range img.Sections {
				if s.Name == jit.SecFexit(1) {
					doFexit = s.Start
				}
			}
			if (tImage+uint64(doFexit))%16 != 0 {
				t.Errorf("%s %d fmod_ret: do_fexit at %#x is not 16-aligned", k, n, doFexit)
			}
			jumps := 0
			for i := 0; i+6 <= len(img.Code); i++ {
				if bytes.Equal(img.Code[i:i+5], mustHex("48837df800")) {
					j := img.Code[i+5:]
					if j[0] != 0x0f || j[1] != 0x85 || i+11+int(int32(binary.LittleEndian.Uint32(j[2:]))) != doFexit {
						t.Errorf("%s: branch at %#x: % x does not jump to %#x", k, i+5, j[:6], doFexit)
					}
					jumps++
				}
			}
			if jumps != n {
				t.Errorf("%s: %d branches, want %d", k, jumps, n)
			}
			var pad []byte
			for _, s := range img.Sections {
				if s.Name == SecAlign {
					pad = img.Code[s.Start:s.End]
				}
			}
			if want := int(-(tImage + uint64(doFexit-len(pad))) & 15); len(pad) != want {
				t.Errorf("%s %d fmod_ret: %d bytes of align, want %d", k, n, len(pad), want)
			}
			checkNops(t, k, pad)
		}
	}
}

// checkNops checks a pad is emit_nops' largest-first split (NOP8 max on 6.1, NOP11 on 6.12).
func checkNops(t *testing.T, k btfmodel.Kernel, pad []byte) {
	t.Helper()
	table := map[int]string{1: "90", 2: "6690", 3: "0f1f00", 4: "0f1f4000", 5: "0f1f440000",
		6: "660f1f440000", 7: "0f1f8000000000", 8: "0f1f840000000000",
		9: "2e0f1f840000000000", 10: "662e0f1f840000000000", 11: "66662e0f1f840000000000"}
	max := 8
	if k == k612 {
		max = 11
	}
	var want string
	for n := len(pad); n > 0; n -= min(n, max) {
		want += table[min(n, max)]
	}
	if !bytes.Equal(pad, mustHex(want)) {
		t.Errorf("%s pad of %d: % x, want %s", k, len(pad), pad, want)
	}
}

// TestHelpers: enter/exit helper per profile, sleepable and LSM (bpf_trampoline_enter/exit).
func TestHelpers(t *testing.T) {
	for _, tc := range []struct {
		k     btfmodel.Kernel
		p     jit.Prog
		enter string
	}{
		{k61, fentry, "__bpf_prog_enter_recur"}, // Debian 6.1.176 (kernel corpus)
		{k61, jit.Prog{Kind: jit.Fentry, Sleepable: true}, "__bpf_prog_enter_sleepable_recur"},
		{k612, fentry, "__bpf_prog_enter_recur"},
		{k612, jit.Prog{Kind: jit.Fexit, Sleepable: true}, "__bpf_prog_enter_sleepable_recur"},
		{k612, jit.Prog{Kind: jit.LSM}, "__bpf_prog_enter"},
		{k612, jit.Prog{Kind: jit.LSM, Sleepable: true}, "__bpf_prog_enter_sleepable"},
	} {
		img := generate(t, tramp(tc.k, fentryTest2(), tc.p))
		var syms []string
		for _, r := range img.Relocs {
			syms = append(syms, r.Symbol)
		}
		if !strings.Contains(strings.Join(syms, " "), " "+tc.enter+" bpf_func#1") {
			t.Errorf("%s %+v: relocs %v, want %s", tc.k, tc.p, syms, tc.enter)
		}
	}
	tr := tramp(k612, fentryTest2(), fexit)
	tr.Helpers = map[string]uint64{jit.HelperTrampEnter: 1}
	var miss *jit.MissingHelperError
	if _, err := (Backend{}).Generate(tr); !errors.As(err, &miss) {
		t.Errorf("missing helper: err %v", err)
	}
}

// TestAllSlotCounts generates every argument count under every kind mix; 6.1 refuses >6.
func TestAllSlotCounts(t *testing.T) {
	mixes := [][]jit.Prog{{fentry}, {fexit}, {modret}, {fentry, modret, fexit},
		{{Kind: jit.Fentry, FuncIP: true, Cookie: 7}, fexit}}
	for _, k := range []btfmodel.Kernel{k61, k612} {
		for nr := 0; nr <= 12; nr++ {
			for _, mix := range mixes {
				_, err := Backend{}.Generate(tramp(k, eights(nr), mix...))
				if k == k61 && nr > 6 {
					if !errors.Is(err, jit.ENOTSUPP) {
						t.Errorf("6.1 nr=%d: err %v, want ENOTSUPP", nr, err)
					}
					continue
				}
				generate(t, tramp(k, eights(nr), mix...))
			}
		}
	}
	// One stack slot holding a small last argument is cleaned in both copies (gotcha 10).
	img := generate(t, tramp(k612, scalars(8, 8, 8, 8, 8, 8, 2), fexit))
	if n := bytes.Count(img.Code, []byte{0xc7, 0x45}); n != 2 {
		t.Errorf("garbage cleaning: %d stores, want 2", n)
	}
}

func TestManyProgs(t *testing.T) {
	var progs []jit.Prog
	for i := 0; i < 38; i++ {
		progs = append(progs, []jit.Prog{fentry, modret, fexit}[i%3])
	}
	for _, k := range []btfmodel.Kernel{k61, k612} {
		img := generate(t, tramp(k, fentryTest2(), progs...))
		if len(img.Code) > pageSize-insnSafety {
			t.Errorf("%s: %d bytes accepted", k, len(img.Code))
		}
	}
	tr := tramp(k612, eights(12), progs...)
	tr.Features.CallDepth = true
	if _, err := (Backend{}).Generate(tr); err != nil && !errors.Is(err, jit.EFAULT) {
		t.Errorf("oversized image: err %v", err)
	}
}

func ExampleBackend_Generate() {
	tr := tramp(k612, fentryTest2(), fexit)
	img, _ := Backend{}.Generate(tr)
	for _, s := range img.Sections {
		fmt.Printf("%-14s 0x%02x..0x%02x\n", s.Name, s.Start, s.End)
	}
	// Output:
	// prologue       0x00..0x0c
	// nr_args        0x0c..0x15
	// arg spill      0x15..0x1d
	// tramp_enter    0x1d..0x2c
	// call original  0x2c..0x39
	// retval stash   0x39..0x3d
	// ip_after_call  0x3d..0x42
	// fexit 1        0x42..0x82
	// tramp_exit     0x82..0x91
	// epilogue       0x91..0xa0
}
