package btfmodel

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// riscv64Limits are the riscv64 limits per profile, read from the kernel sources (no riscv64
// corpus exists yet; the captures settle them):
//   - 6.1: arch/riscv/net/bpf_jit_comp64.c has no arch_prepare_bpf_trampoline, so the weak one
//     in kernel/bpf/trampoline.c answers every link with -ENOTSUPP (the riscv64 trampoline is
//     49b5e77ae3e2, v6.3).
//   - 6.12, 7.2: __arch_prepare_bpf_trampoline refuses ORIG_STACK and SHARE_IPMODIFY
//     ("flags & (BPF_TRAMP_F_ORIG_STACK | BPF_TRAMP_F_SHARE_IPMODIFY)": -ENOTSUPP) and
//     "m->nr_args > MAX_BPF_FUNC_ARGS" (-ENOTSUPP); it sums round_up(arg_size, 8) / 8 into
//     nr_arg_slots without a bound, store_args copies slots past RV_MAX_REG_ARGS (8) from the
//     caller's stack at FP+16, so twelve 16-byte structs (24 slots) are built.
//   - kernel functions: DYNAMIC_FTRACE_WITH_DIRECT_CALLS is in both Debian configs
//     (196c79f19a92, v6.8).
//   - fsession: 7.2's riscv JIT overrides bpf_jit_supports_fsession (2277c14bc90b).
//   - links: the BPF_MAX_TRAMP_LINKS enum in Debian's 6.12.117 and 7.2.13 riscv64 BTF is 38.
var riscv64Limits = map[Kernel]ArchLimits{
	Kernel61: {ArgRegs: 8, MaxRegSlots: 8, StructArgs: true, RefusedFlags: TrampFlagOrigStack | TrampFlagShareIPModify,
		MaxTrampLinks: 38},
	Kernel612: {ArgRegs: 8, MaxRegSlots: 24, MaxArgs: 12, StackArgs: true, StructArgs: true, Trampolines: true,
		KernelFuncTargets: true, RefusedFlags: TrampFlagOrigStack | TrampFlagShareIPModify, MaxTrampLinks: 38},
	Kernel72: {ArgRegs: 8, MaxRegSlots: 24, MaxArgs: 12, StackArgs: true, StructArgs: true, Trampolines: true,
		KernelFuncTargets: true, Fsession: true, RefusedFlags: TrampFlagOrigStack | TrampFlagShareIPModify, MaxTrampLinks: 38},
}

// riscv64Model distils a prototype as btf_distill_func_proto does under k; its error is kept.
func riscv64Model(t *testing.T, proto string, k Kernel) (string, *FuncModel, error) {
	t.Helper()
	fn, err := ParseProto(proto)
	if err != nil {
		t.Fatalf("%s: %v", proto, err)
	}
	m, derr := Distill(fn, k)
	return fn.Name, m, derr
}

// nargsProto is "int f(u64 a0, ..., u64 a<n-1>)".
func nargsProto(n int) string {
	var a []string
	for i := 0; i < n; i++ {
		a = append(a, "u64 a"+itoaTest(i))
	}
	return "int f(" + strings.Join(a, ", ") + ")"
}

func itoaTest(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoaTest(i/10) + string(rune('0'+i%10))
}

const pair16 = "struct pair { u64 a; u64 b; }; "

// TestRiscv64AttachRules: the verdict per profile, each from the kernel source named.
func TestRiscv64AttachRules(t *testing.T) {
	for _, c := range []struct {
		name   string
		kernel Kernel
		proto  string
		at     AttachType
		// want: "ok", or stage/errno and a piece of the message
		ok           bool
		stage        Stage
		errno, msg   string
		kernelMsg    bool
		nargs, slots int
	}{
		// 6.1: the weak arch_prepare_bpf_trampoline (kernel/bpf/trampoline.c) returns
		// -ENOTSUPP from bpf_trampoline_update, i.e. at BPF_LINK_CREATE; the load passed.
		{name: "6.1 no trampoline", kernel: Kernel61, proto: "int f(int a)", at: Fentry,
			stage: StageAttach, errno: "ENOTSUPP", msg: "weak default", nargs: 1, slots: 1},
		{name: "6.1 no trampoline fexit", kernel: Kernel61, proto: "int f(int a)", at: Fexit,
			stage: StageAttach, errno: "ENOTSUPP", msg: "no riscv64 BPF trampoline", nargs: 1, slots: 1},
		// 6.12 __arch_prepare_bpf_trampoline: only nr_args > MAX_BPF_FUNC_ARGS is refused;
		// slots 8.. are copied from the stack (store_args, restore_stack_args).
		{name: "6.12 twelve args", kernel: Kernel612, proto: nargsProto(12), at: Fexit, ok: true, nargs: 12, slots: 12},
		{name: "6.12 seven 16-byte structs", kernel: Kernel612,
			proto: pair16 + "int f(struct pair p0, struct pair p1, struct pair p2, struct pair p3, struct pair p4, struct pair p5, struct pair p6)",
			at:    Fexit, ok: true, nargs: 7, slots: 14},
		// A 16-byte struct from a7 on: split between a7 and the stack, one model slot pair.
		{name: "6.12 struct straddles a7", kernel: Kernel612,
			proto: pair16 + "int f(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f2, u64 g, struct pair p)",
			at:    ModRet, stage: StageLoad, errno: "EINVAL", msg: "f() is not modifiable", kernelMsg: true, nargs: 8, slots: 9},
		{name: "6.12 struct straddles a7 fentry", kernel: Kernel612,
			proto: pair16 + "int f(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f2, u64 g, struct pair p)",
			at:    Fentry, ok: true, nargs: 8, slots: 9},
		// btf_distill_func_proto (generic) refuses first: 13 arguments, a 24-byte struct.
		{name: "6.12 thirteen args", kernel: Kernel612, proto: nargsProto(13), at: Fentry,
			stage: StageLoad, errno: "EINVAL", msg: "The function f has 13 arguments. Too many.", kernelMsg: true},
		{name: "6.12 24-byte struct", kernel: Kernel612, proto: "struct big { u64 a[3]; }; int f(struct big b)", at: Fentry,
			stage: StageLoad, errno: "EINVAL", msg: "The function f arg0 type STRUCT is unsupported.", kernelMsg: true},
		// 6.12 has no BPF_TRACE_FSESSION at all; 7.2's riscv JIT supports it.
		{name: "6.12 fsession", kernel: Kernel612, proto: "int f(int a)", at: Fsession,
			stage: StageLoad, errno: "EINVAL", msg: "no BPF_TRACE_FSESSION", nargs: 1, slots: 1},
		{name: "7.2 fsession", kernel: Kernel72, proto: "int f(int a)", at: Fsession, ok: true, nargs: 1, slots: 1},
		{name: "7.2 twelve args fsession", kernel: Kernel72, proto: nargsProto(12), at: Fsession, ok: true, nargs: 12, slots: 12},
	} {
		name, m, derr := riscv64Model(t, c.proto, c.kernel)
		v := CheckAttach(name, m, derr, c.at, AttachEnv{Kernel: c.kernel, Arch: RISCV64})
		if v.OK != c.ok || (!c.ok && (v.Stage != c.stage || v.Errno != c.errno || !strings.Contains(v.Msg, c.msg) || v.KernelMsg != c.kernelMsg)) {
			t.Errorf("%s: %+v, want ok=%v stage=%s errno=%s msg~%q kernel_message=%v", c.name, v, c.ok, c.stage, c.errno, c.msg, c.kernelMsg)
		}
		if derr == nil && (m.NrArgs() != c.nargs || m.NrRegs() != c.slots) {
			t.Errorf("%s: nr_args %d, slots %d; want %d, %d", c.name, m.NrArgs(), m.NrRegs(), c.nargs, c.slots)
		}
	}
}

// TestRiscv64AgainstOtherArches: the same function, three JITs. x86_64 6.12 counts slots
// against MAX_BPF_FUNC_ARGS (arch_prepare_bpf_trampoline: nr_regs > 12), arm64 6.12 takes
// x0-x7 only; riscv64 6.12 counts C arguments.
func TestRiscv64AgainstOtherArches(t *testing.T) {
	proto := pair16 + "int f(struct pair p0, struct pair p1, struct pair p2, struct pair p3, struct pair p4, struct pair p5, struct pair p6)"
	name, m, derr := riscv64Model(t, proto, Kernel612)
	for a, ok := range map[Arch]bool{AMD64: false, ARM64: false, RISCV64: true} {
		v := CheckAttach(name, m, derr, Fentry, AttachEnv{Kernel: Kernel612, Arch: a})
		if v.OK != ok || (!ok && (v.Stage != StageAttach || v.Errno != "ENOTSUPP")) {
			t.Errorf("%s: %+v, want ok=%v", a, v, ok)
		}
	}
}

// BPF-program targets: 6.12 and 7.2 trace them (bpf_arch_text_poke patches the program's
// two nops); 6.1 has no trampoline for them either.
func TestRiscv64BPFProgTargets(t *testing.T) {
	m := &FuncModel{Name: "tj_args5", Args: []Arg{{Size: 8}, {Size: 8}}}
	for k, refused := range map[Kernel]bool{Kernel61: true, Kernel612: false, Kernel72: false} {
		errno, why := CheckBPFProgTarget(m, AttachEnv{Kernel: k, Arch: RISCV64})
		if (errno != "") != refused || (refused && errno != "ENOTSUPP") {
			t.Errorf("%s: %q %q, refused want %v", k, errno, why, refused)
		}
	}
}

// has_arch_syscall_prefix (kernel/bpf/verifier.c, built without error injection as Debian's
// riscv64 kernels are: "# CONFIG_FUNCTION_ERROR_INJECTION is not set"): "__riscv_" on 7.2,
// nothing on 6.12.
func TestRiscv64SyscallPrefix(t *testing.T) {
	m := &FuncModel{Name: "__riscv_sys_getpgid", Args: []Arg{{Size: 8}}}
	for k, ok := range map[Kernel]bool{Kernel612: false, Kernel72: true} {
		v := CheckAttach(m.Name, m, nil, ModRet, AttachEnv{Kernel: k, Arch: RISCV64})
		if v.OK != ok || (!ok && v.Msg != "__riscv_sys_getpgid() is not modifiable") {
			t.Errorf("%s: %+v, want ok=%v", k, v, ok)
		}
		v = CheckAttach(m.Name, m, nil, ModRet, AttachEnv{Kernel: k, Arch: AMD64})
		if v.OK {
			t.Errorf("%s amd64: the riscv64 prefix admitted: %+v", k, v)
		}
	}
}

// The flags arch_prepare_bpf_trampoline refuses: riscv64 both livepatch-sharing bits
// (-ENOTSUPP, no log), x86_64 builds ORIG_STACK images (call *rbx from the stack).
func TestRefusedFlags(t *testing.T) {
	for _, c := range []struct {
		a     Arch
		k     Kernel
		flags uint32
		errno string
	}{
		{RISCV64, Kernel612, 0x6, ""},
		{RISCV64, Kernel612, 0x6 | TrampFlagOrigStack, "ENOTSUPP"},
		{RISCV64, Kernel72, 0x6 | TrampFlagShareIPModify, "ENOTSUPP"},
		{AMD64, Kernel612, 0x6 | TrampFlagOrigStack | TrampFlagShareIPModify, ""},
	} {
		errno, why := LimitsFor(c.a, c.k).RefusesFlags(c.a, c.flags)
		if errno != c.errno {
			t.Errorf("%s %s flags %#x: %q (%s), want %q", c.a, c.k, c.flags, errno, why, c.errno)
		}
	}
	_, why := LimitsFor(RISCV64, Kernel612).RefusesFlags(RISCV64, TrampFlagOrigStack|TrampFlagShareIPModify)
	if !strings.Contains(why, "BPF_TRAMP_F_ORIG_STACK and BPF_TRAMP_F_SHARE_IPMODIFY") {
		t.Errorf("why: %q", why)
	}
}

// bpf_check_attach_target refuses an fsession program when the JIT lacks
// bpf_jit_supports_fsession, before it looks at the target: "JIT does not support
// fsession", -EOPNOTSUPP. An architecture trampjit knows no JIT for stands in for one.
func TestFsessionNeedsJIT(t *testing.T) {
	v := CheckAttach("f", &FuncModel{Name: "f"}, nil, Fsession, AttachEnv{Kernel: Kernel72, Arch: Arch("mips")})
	if v.OK || v.Stage != StageLoad || v.Errno != "EOPNOTSUPP" || v.Msg != "JIT does not support fsession" || !v.KernelMsg {
		t.Errorf("%+v", v)
	}
}

func TestParseArchRiscv64(t *testing.T) {
	if a, err := ParseArch("riscv64"); err != nil || a != RISCV64 {
		t.Errorf("ParseArch(riscv64) = %q, %v", a, err)
	}
	if _, err := ParseArch("riscv"); err == nil {
		t.Error("ParseArch(riscv) accepted: Debian and uname say riscv64")
	}
	if !strings.Contains(func() string { _, err := ParseArch("mips"); return err.Error() }(), "riscv64") {
		t.Error("the unknown-architecture message does not list riscv64")
	}
}

// TestTrampLinksFromBTF: Profile.TrampLinks is the BPF_MAX_TRAMP_LINKS enum of each captured
// kernel's own BTF (testdata/kernel/<profile>-<arch>/vmlinux.btf.xz), for every architecture
// with a corpus; riscv64's corpora are checked once they are captured.
func TestTrampLinksFromBTF(t *testing.T) {
	n := 0
	for _, p := range Profiles {
		for _, a := range AllArches {
			key := string(p.Kernel) + "-" + string(a)
			if _, err := os.Stat(filepath.Join("../testdata/kernel", key, "vmlinux.btf.xz")); err != nil {
				continue
			}
			v, found := uint64(0), false
			for typ := range corpusSpec(t, key).All() {
				if e, ok := typ.(*btf.Enum); ok {
					if v, found = enumValue(e, "BPF_MAX_TRAMP_LINKS"); found {
						break
					}
				}
			}
			switch {
			case !found && p.Version.Series().Compare(v63) < 0:
				// Before 6.3 it is a #define (include/linux/bpf.h), which BTF does not carry.
			case !found:
				t.Errorf("%s: no BPF_MAX_TRAMP_LINKS in the BTF", key)
			case int(v) != p.TrampLinks[a]:
				t.Errorf("%s: BTF says BPF_MAX_TRAMP_LINKS %d, the profile %d", key, v, p.TrampLinks[a])
			default:
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("no corpus BTF read")
	}
	t.Logf("%d corpora's BTF agree", n)
}

// v63 is the release that made BPF_MAX_TRAMP_LINKS an enum, for BTF to carry.
var v63 = Version{6, 3, 0}

func enumValue(e *btf.Enum, name string) (uint64, bool) {
	for _, v := range e.Values {
		if v.Name == name {
			return v.Value, true
		}
	}
	return 0, false
}
