package amd64_test

import (
	"testing"

	"github.com/trampjit/trampjit/amd64"
	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/emu/emutest"
	"github.com/trampjit/trampjit/jit"
)

// Every curated case's image passes the emulator's oracle (emutest.ImagesPassOracle).
func TestImagesPassOracle(t *testing.T) { emutest.ImagesPassOracle(t, btfmodel.AMD64) }

// Relocations number the programs 1..n in emission order (emutest.ProgramSymbolsNumbered).
func TestProgramSymbolsNumbered(t *testing.T) { emutest.ProgramSymbolsNumbered(t, btfmodel.AMD64) }

// With CALL_ORIG but no SKIP_FRAME (a request's "flags": 2), the original is called at
// the function's address itself: arch_prepare_bpf_trampoline (arch/x86/net/bpf_jit_comp.c)
// adds X86_PATCH_SIZE (and the ENDBR) to orig_call only under BPF_TRAMP_F_SKIP_FRAME.
func TestCallOrigWithoutSkipFrame(t *testing.T) {
	for _, k := range []btfmodel.Kernel{btfmodel.Kernel61, btfmodel.Kernel612} {
		for _, flags := range []jit.Addr{jit.Addr(jit.FlagCallOrig), jit.Addr(jit.FlagCallOrig | jit.FlagSkipFrame)} {
			f := flags
			req := jit.Request{Arch: btfmodel.AMD64, Kernel: k, Proto: "int f(int a)", Progs: []jit.Prog{{Kind: jit.Fexit}}, Flags: &f}
			img, _, err := emu.Generate(&req)
			if err != nil {
				t.Fatal(err)
			}
			addrs := emu.Addrs(&req)
			want := uint64(addrs.Func)
			if jit.Flags(flags)&jit.FlagSkipFrame != 0 {
				want = uint64(addrs.IP) + 5
			}
			var got []uint64
			for off := 0; off < len(img.Code); {
				inst, err := (amd64.Disassembler{}).Decode(img.Code[off:], img.Base+uint64(off))
				if err != nil {
					t.Fatal(err)
				}
				if img.Code[off] == 0xe8 {
					rel := int32(uint32(img.Code[off+1]) | uint32(img.Code[off+2])<<8 | uint32(img.Code[off+3])<<16 | uint32(img.Code[off+4])<<24)
					got = append(got, img.Base+uint64(off)+5+uint64(int64(rel)))
				}
				off += inst.Len
			}
			found := false
			for _, g := range got {
				found = found || g == want
			}
			if !found {
				t.Errorf("%s flags %#x: no call to %#x among %#x", k, uint64(flags), want, got)
			}
		}
	}
}
