package verifier

import (
	"strings"
	"sync"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// Test scaffolding: kernel BTF per profile, instruction builders, and the table runner.

var (
	specMu sync.Mutex
	specs  = map[string]*btf.Spec{}
)

// profiles are the kernel/arch pairs with BTF in testdata.
var profiles = []string{"6.1-amd64", "6.12-amd64", "6.12-arm64"}

func loadSpec(t testing.TB, key string) *btf.Spec {
	t.Helper()
	specMu.Lock()
	defer specMu.Unlock()
	if s, ok := specs[key]; ok {
		return s
	}
	s, err := btfmodel.LoadFile("../testdata/btf/vmlinux-"+key+".btf.xz", nil)
	if err != nil {
		t.Fatal(err)
	}
	specs[key] = s
	return s
}

func envFor(t testing.TB, key string) Env {
	k, a, _ := strings.Cut(key, "-")
	return Env{Kernel: btfmodel.Kernel(k), Arch: btfmodel.Arch(a), BTF: loadSpec(t, key)}
}

// offsetOf finds a member's byte offset in a named struct of the profile's BTF.
func offsetOf(t testing.TB, key, strct, member string) int16 {
	var s *btf.Struct
	if err := loadSpec(t, key).TypeByName(strct, &s); err != nil {
		t.Fatalf("%s: struct %s: %v", key, strct, err)
	}
	for _, m := range s.Members {
		if m.Name == member {
			return int16(m.Offset / 8)
		}
	}
	t.Fatalf("%s: struct %s has no member %s", key, strct, member)
	return 0
}

// Instruction builders for readable tables.
func ldx(dst, src asm.Register, off int16, size asm.Size) asm.Instruction {
	return asm.LoadMem(dst, src, off, size)
}
func stx(dst asm.Register, off int16, src asm.Register, size asm.Size) asm.Instruction {
	return asm.StoreMem(dst, off, src, size)
}
func st(dst asm.Register, off int16, v int64, size asm.Size) asm.Instruction {
	// asm.StoreImm refuses DWord; the kernel accepts BPF_ST|BPF_DW.
	return asm.Instruction{OpCode: asm.StoreImmOp(size), Dst: dst, Offset: off, Constant: v}
}
func movi(dst asm.Register, v int32) asm.Instruction { return asm.Mov.Imm(dst, v) }
func mov(dst, src asm.Register) asm.Instruction      { return asm.Mov.Reg(dst, src) }
func addi(dst asm.Register, v int32) asm.Instruction { return asm.Add.Imm(dst, v) }
func exit() asm.Instruction                          { return asm.Return() }
func call(fn asm.BuiltinFunc) asm.Instruction        { return fn.Call() }

// jmpi is "if dst <op> imm goto pc+off".
func jmpi(op asm.JumpOp, dst asm.Register, imm int32, off int16) asm.Instruction {
	return asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(op).SetSource(asm.ImmSource), Dst: dst, Offset: off, Constant: int64(imm)}
}

// jmpr is "if dst <op> src goto pc+off".
func jmpr(op asm.JumpOp, dst, src asm.Register, off int16) asm.Instruction {
	return asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(op).SetSource(asm.RegSource), Dst: dst, Src: src, Offset: off}
}

func ja(off int16) asm.Instruction {
	return asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Ja), Offset: off}
}

func mapPtr(dst asm.Register, idx int) asm.Instruction { return asm.LoadMapPtr(dst, idx) }

// ret0 appends "r0 = 0; exit".
func ret0(insns ...asm.Instruction) asm.Instructions {
	return append(asm.Instructions(insns), movi(asm.R0, 0), exit())
}

// vcase is one table row: a program, and the kernel's answer per profile, written from
// the kernel's source (kernel/bpf/verifier.c, kernel/bpf/btf.c), never from running the model.
type vcase struct {
	name      string
	on        []string // profiles; nil = all
	sec       string
	at        btfmodel.AttachType // with target: instead of sec
	target    string
	sleepable bool
	license   string // default "GPL"
	maps      []Map
	prog      func(key string) asm.Instructions
	want      string // "ok" or the exact last error line, for every profile...
	want61    string // ...unless overridden for 6.1
	want612   string // ...or for 6.12
	errno     string // expected errno when rejected (optional)
	logHas    []string
	logHas61  []string
	logHas612 []string
	loads     []string // substrings that must appear in Result.Loads (accepted programs)
	// errInj is the error-injection list per kernel ("6.1", "6.12"); Debian's kernels have
	// none (nil), the differential cases assume one.
	errInj map[string][]string
}

func (c vcase) expect(key string) (string, []string) {
	want, logs := c.want, c.logHas
	if strings.HasPrefix(key, "6.1-") {
		if c.want61 != "" {
			want = c.want61
		}
		logs = append(append([]string(nil), logs...), c.logHas61...)
	} else {
		if c.want612 != "" {
			want = c.want612
		}
		logs = append(append([]string(nil), logs...), c.logHas612...)
	}
	return want, logs
}

func runCases(t *testing.T, cases []vcase) {
	t.Helper()
	for _, tc := range cases {
		on := tc.on
		if on == nil {
			on = profiles
		}
		for _, key := range on {
			t.Run(key+"/"+tc.name, func(t *testing.T) {
				lic := tc.license
				if lic == "" {
					lic = "GPL"
				}
				p := Program{Name: tc.name, Section: tc.sec, AttachType: tc.at, Target: tc.target, Sleepable: tc.sleepable, License: lic, Maps: tc.maps, Instructions: tc.prog(key)}
				env := envFor(t, key)
				if l, ok := tc.errInj[string(env.Kernel)]; ok {
					env.ErrorInjection = map[string]bool{}
					for _, f := range l {
						env.ErrorInjection[f] = true
					}
				}
				res := Check(p, env)
				want, logs := tc.expect(key)
				got := "ok"
				if !res.Accepted {
					got = res.Error
				}
				if got != want && !(strings.HasSuffix(want, "...") && strings.HasPrefix(got, strings.TrimSuffix(want, "..."))) {
					t.Errorf("got %q, want %q\nlog:\n%s", got, want, strings.Join(res.Log, "\n"))
				}
				if tc.errno != "" && !res.Accepted && res.Errno != tc.errno {
					t.Errorf("errno %s, want %s", res.Errno, tc.errno)
				}
				joined := strings.Join(res.Log, "\n")
				for _, l := range logs {
					if !strings.Contains(joined, l) {
						t.Errorf("log lacks %q\nlog:\n%s", l, joined)
					}
				}
				var ls []string
				for _, l := range res.Loads {
					ls = append(ls, l.Text)
				}
				for _, l := range tc.loads {
					if !strings.Contains(strings.Join(ls, "\n"), l) {
						t.Errorf("loads lack %q\nloads:\n%s", l, strings.Join(ls, "\n"))
					}
				}
				if last := res.Log[len(res.Log)-1]; !strings.HasPrefix(last, "processed ") {
					t.Errorf("log does not end with the stats line: %q", last)
				}
			})
		}
	}
}

// fixed returns the same program for every profile.
func fixed(insns ...asm.Instruction) func(string) asm.Instructions {
	return func(string) asm.Instructions { return insns }
}
