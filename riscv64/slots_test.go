package riscv64

import (
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/jit/jittest"
)

// frameStats counts what checkFrame looked at.
type frameStats struct{ images, slots, accesses int }

// checkFrame decodes img and fails on every frame access that lands in no declared slot and
// on every declared slot no instruction touches, except those only others touch: the saved
// run_ctx (the enter and exit helpers, through the pointer in a1/a2) and the argument slots
// (the programs, through ctx).
func checkFrame(t *testing.T, name string, tr *jit.Tramp, img *jit.Image, st *frameStats) *jit.Frame {
	t.Helper()
	f, strays, err := frameOf(tr, img)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return nil
	}
	for _, s := range strays {
		t.Errorf("%s: %s", name, s)
	}
	for _, s := range f.Slots {
		n := len(s.Writers) + len(s.Readers)
		st.accesses += n
		if n == 0 && s.Name != jit.SlotRunCtxSaved && !strings.HasPrefix(s.Name, "ctx[") {
			t.Errorf("%s: slot %q at s0%+d: no instruction touches it", name, s.Name, s.Off)
		}
		if s.SPOff != s.Off+f.SPBase {
			t.Errorf("%s: slot %q: sp offset %d, s0 offset %d, base at sp+%d", name, s.Name, s.SPOff, s.Off, f.SPBase)
		}
	}
	st.images++
	st.slots += len(f.Slots)
	return f
}

// TestFrameGolden checks the frame of every golden case (the curated cases, the 7.2 shapes,
// the struct_ops members).
func TestFrameGolden(t *testing.T) {
	cases := append(append(jittest.Cases(btfmodel.RISCV64), Cases72()...), StructOpsCases()...)
	var st frameStats
	for _, c := range cases {
		tr, img := generateCase(t, &c.Req)
		checkFrame(t, c.Name, tr, img, &st)
	}
	t.Logf("%d images, %d slots, %d accesses attributed", st.images, st.slots, st.accesses)
	if st.images < 60 {
		t.Errorf("only %d golden images", st.images)
	}
}

// TestFrameStray: an access the frame does not declare is reported, with its offset.
func TestFrameStray(t *testing.T) {
	c := jittest.Cases(btfmodel.RISCV64)[0]
	tr, img := generateCase(t, &c.Req)
	f, strays, err := frameOf(tr, img)
	if err != nil || len(strays) != 0 {
		t.Fatalf("%s: %v %v", c.Name, strays, err)
	}
	l, _ := Layout(mustProfile(t, tr.Kernel), tr.Model, tr.Flags, tr.CookieSlots)
	var kept []jit.Slot
	for _, s := range f.Slots {
		if s.Name != SlotSavedS1 {
			kept = append(kept, jit.Slot{Name: s.Name, Off: s.Off, Size: s.Size})
		}
	}
	f.Slots = kept
	got := attribute(f, l, img)
	if len(got) != 2 || !strings.Contains(got[0].String(), "at s0-"+itoa(l.SRegOff)+", 8 bytes, is in no slot") {
		t.Errorf("without the s1 slot: %v, want its save and restore as strays", got)
	}
}

func mustProfile(t *testing.T, k btfmodel.Kernel) Profile {
	p, err := ProfileFor(k)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestComments: every golden image explains where the return addresses go (t0 and ra saved
// and reloaded, the final jump), the im loads and, per program block, the ctx and run_ctx
// pointers and the start time.
func TestComments(t *testing.T) {
	cases := append(append(jittest.Cases(btfmodel.RISCV64), Cases72()...), StructOpsCases()...)
	for _, c := range cases {
		tr, img := generateCase(t, &c.Req)
		count := map[string]int{}
		for _, s := range (Backend{}).Comments(tr, img) {
			count[strings.SplitN(s, ":", 2)[0]]++
			count[strings.SplitN(s, " = ", 2)[0]]++
		}
		blocks := len(tr.Fentry) + len(tr.ModRet) + len(tr.Fexit)
		ims := 0
		for _, r := range img.Relocs {
			if r.Symbol == "im" {
				ims++
			}
		}
		want := map[string]int{"ra": 2, "a0": blocks + ims, "a1": 2 * blocks, "a2": blocks, "s1": blocks}
		if tr.StructOps == nil {
			want["t0"] = 2
		}
		if tr.Flags&jit.FlagIPArg != 0 {
			want["ip"] = 1
		}
		for k, n := range want {
			if count[k] != n {
				t.Errorf("%s: %d comments on %s, want %d (%v)", c.Name, count[k], k, n, count)
			}
		}
	}
}

// TestFrameObjdump decodes every golden image with GNU objdump and follows sp and s0 through
// it on its own: each load, store and address taken from s0 or sp must be one of the
// instructions the frame lists for the slot at that offset, and the frame lists no others.
func TestFrameObjdump(t *testing.T) {
	cases := append(append(jittest.Cases(btfmodel.RISCV64), Cases72()...), StructOpsCases()...)
	n := 0
	for _, c := range cases {
		tr, img := generateCase(t, &c.Req)
		f, err := Backend{}.Frame(tr, img)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		entry, _ := Backend{}.EntryOffset(tr)
		ins := gnuDecode(t, img.Code[entry:], img.Base+uint64(entry))
		const unknown = 1 << 30
		reg := map[string]int{"sp": 16, "s0": unknown}
		if tr.StructOps != nil {
			reg["sp"] = 0
		}
		listed := map[[2]int]bool{} // {offset, 0 store / 1 load or address}
		for _, s := range f.Slots {
			for _, w := range s.Writers {
				listed[[2]int{w, 0}] = true
			}
			for _, r := range s.Readers {
				listed[[2]int{r, 1}] = true
			}
		}
		seen := 0
		check := func(at, off int, store bool, what string) {
			k := [2]int{at, 1}
			if store {
				k[1] = 0
			}
			s := f.SlotAt(off)
			if what == "address" && len(tr.Model.Args) == 0 && s != nil && s.Name == jit.SlotSavedFP {
				// ctx of a function without arguments: ctx[0] would be frame 2's s0;
				// the frame counts the pointer as a reader of ctx[-1]
				s = f.SlotAt(off - 8)
			}
			ok := s != nil && listed[k]
			if ok {
				ok = false
				for _, o := range append(append([]int{}, s.Writers...), s.Readers...) {
					ok = ok || o == at
				}
			}
			if !ok {
				t.Errorf("%s +%#x: %s at s0%+d: not listed in the frame's slot there (%v)", c.Name, at, what, off, s)
			}
			seen++
		}
		for _, in := range ins {
			at := in.off + entry
			op := strings.TrimSuffix(strings.TrimPrefix(in.op, "c."), "sp")
			a := in.args
			switch {
			case (op == "sd" || op == "sw" || op == "ld" || op == "lw") && len(a) == 2:
				i := strings.Index(a[1], "(")
				base := strings.TrimSuffix(a[1][i+1:], ")")
				if v, ok := reg[base]; ok {
					if v == unknown {
						t.Errorf("%s +%#x: %s through %s before the frame is set up", c.Name, at, in.op, base)
						continue
					}
					check(at, v+int(gnuNum(t, a[1][:i])), op[0] == 's', in.op)
					if op[0] == 'l' {
						if _, ok := reg[a[0]]; ok {
							reg[a[0]] = unknown
						}
					}
				}
			case in.op == "addi" || in.op == "c.addi4spn" || in.op == "c.addi16sp":
				rd, rs, imm := a[0], "", ""
				switch len(a) {
				case 3:
					rs, imm = a[1], a[2]
				case 2:
					rs, imm = rd, a[1]
				}
				v, ok := reg[rs]
				if !ok || v == unknown {
					continue
				}
				if _, ok := reg[rd]; ok {
					reg[rd] = v + int(gnuNum(t, imm))
				} else {
					check(at, v+int(gnuNum(t, imm)), false, "address")
				}
			}
		}
		if seen != len(listed) {
			t.Errorf("%s: objdump finds %d frame accesses, the frame lists %d", c.Name, seen, len(listed))
		}
		n += seen
	}
	t.Logf("%d images, %d frame accesses read by objdump, each in the slot the frame lists it for", len(cases), n)
}
