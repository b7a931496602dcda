// Package jittest holds the curated trampoline requests both architecture backends keep golden
// listings of (testdata/golden/<arch>/), so that amd64 and arm64 are tested case for case.
package jittest

import (
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// Case is one golden request; Name is its file name without ".txt".
type Case struct {
	Name string
	Req  jit.Request
}

// Cases returns the curated requests for an architecture, with the synthetic address layout.
// Each case names what it exercises; arm64 skips what its kernels refuse (more than 8
// argument registers) and amd64 what only arm64 has.
func Cases(arch btfmodel.Arch) []Case {
	var out []Case
	add := func(name string, k btfmodel.Kernel, proto string, progs []jit.Prog, feat jit.Features) {
		out = append(out, Case{Name: string(k) + "-" + name, Req: jit.Request{Arch: arch, Kernel: k, Proto: proto, Progs: progs, Features: feat}})
	}
	f, x, m, l := jit.Prog{Kind: jit.Fentry}, jit.Prog{Kind: jit.Fexit}, jit.Prog{Kind: jit.ModRet}, jit.Prog{Kind: jit.LSM}
	rep := func(p jit.Prog, n int) []jit.Prog {
		s := make([]jit.Prog, n)
		for i := range s {
			s[i] = p
		}
		return s
	}
	cat := func(ps ...[]jit.Prog) (all []jit.Prog) {
		for _, p := range ps {
			all = append(all, p...)
		}
		return all
	}
	with := func(p jit.Prog, mod func(*jit.Prog)) jit.Prog { mod(&p); return p }
	test2 := "int bpf_fentry_test2(int a, u64 b)"
	none := jit.Features{}
	if arch == btfmodel.RISCV64 {
		// The CPU the riscv64 corpora were captured on (qemu virt, rv64 with Zbb), as Debian's
		// kernels see it: a trampoline's code does not depend on it, a struct_ops return does.
		none.Zbb = true
	}
	nargs := func(n int) string {
		if n == 0 {
			return "int f0(void)"
		}
		var a []string
		for i := 0; i < n; i++ {
			a = append(a, "u64 a"+string(rune('0'+i/10))+string(rune('0'+i%10)))
		}
		return "int f" + string(rune('0'+n/10)) + string(rune('0'+n%10)) + "(" + strings.Join(a, ", ") + ")"
	}
	// The newest profile gets every case; older ones a short list where the arch traces
	// kernel functions (6.1 x86_64; 6.1 arm64 has only BPF-program targets, not generated here).
	for _, k := range []btfmodel.Kernel{btfmodel.DefaultKernel} {
		maxRegs := btfmodel.LimitsFor(arch, k).MaxRegSlots
		add("fentry-fexit-test2", k, test2, []jit.Prog{f, x}, none)
		add("fentry-only-test2", k, test2, []jit.Prog{f}, none)
		add("fexit-only-test2", k, test2, []jit.Prog{x}, none)
		add("fmod_ret-only-test2", k, test2, []jit.Prog{m}, none)
		add("fmod_ret2-fexit-test2", k, test2, []jit.Prog{m, m, x}, none)
		add("mixed-f2-m2-x2", k, test2, []jit.Prog{f, m, x, f, m, x}, none)
		add("mixed-f4-m4-x4", k, test2, cat(rep(f, 4), rep(m, 4), rep(x, 4)), none)
		add("lsm-int-hook", k, "int bpf_lsm_file_open(struct file *file)", []jit.Prog{l}, none)
		add("lsm-void-hook", k, "void bpf_lsm_task_free(struct task_struct *task)", []jit.Prog{l, l}, none)
		add("sleepable-fentry-fexit", k, test2, []jit.Prog{with(f, func(p *jit.Prog) { p.Sleepable = true }), with(x, func(p *jit.Prog) { p.Sleepable = true })}, none)
		add("func-ip-fentry", k, test2, []jit.Prog{with(f, func(p *jit.Prog) { p.FuncIP = true })}, none)
		add("func-ip-fexit", k, test2, []jit.Prog{x, with(x, func(p *jit.Prog) { p.FuncIP = true })}, none)
		add("cookies", k, test2, []jit.Prog{
			with(f, func(p *jit.Prog) { p.Cookie = 0 }), with(f, func(p *jit.Prog) { p.Cookie = 7 }),
			with(f, func(p *jit.Prog) { p.Cookie = 0xffffffff }), with(f, func(p *jit.Prog) { p.Cookie = 0x80000000 }),
			with(x, func(p *jit.Prog) { p.Cookie = jit.Cookie(^uint64(0)) }), with(x, func(p *jit.Prog) { p.Cookie = 0x123456789abcdef0 }),
			with(x, func(p *jit.Prog) { p.Cookie = jit.Cookie(^uint64(0x7fffffff)) })}, none)
		add("links-38-fentry", k, test2, rep(f, 38), none)
		add("links-38-mixed", k, test2, cat(rep(f, 13), rep(m, 12), rep(x, 13)), none)
		add("ibt-fentry-fexit", k, test2, []jit.Prog{f, x}, jit.Features{IBT: true})
		for _, n := range []int{0, 1, 3, 6, 7, 8, 12} {
			if n > maxRegs {
				continue
			}
			add("args-"+itoa(n)+"-fentry-fexit", k, nargs(n), []jit.Prog{f, x}, none)
			add("args-"+itoa(n)+"-fentry", k, nargs(n), []jit.Prog{f}, none)
		}
		add("struct-16-fentry-fexit", k, "struct pair { u64 a; u32 b; }; int f(struct pair p, int x)", []jit.Prog{f, x}, none)
		add("struct-4-kuid-fexit", k, "uid_t from_kuid(struct user_namespace *targ, kuid_t kuid)", []jit.Prog{x}, none)
		add("struct-sockptr-fmod_ret", k, "int sock_setsockopt(struct socket *sock, int level, int optname, sockptr_t optval, unsigned int optlen)", []jit.Prog{m, x}, none)
		add("void-ret-fexit", k, "void tcp_set_state(struct sock *sk, int state)", []jit.Prog{x}, none)
		add("small-ret-fmod_ret", k, "bool f(u8 a, u16 b)", []jit.Prog{m}, none)
		if arch == btfmodel.AMD64 {
			add("struct-straddle-stack", k, "struct pair { u64 a; u64 b; }; int f(u64 a, u64 b, u64 c, u64 d, u64 e, struct pair p, u64 g)", []jit.Prog{f, x}, none)
			add("args-12-fmod_ret-fexit", k, nargs(12), []jit.Prog{m, x}, none)
			add("rethunk-fentry-fexit", k, test2, []jit.Prog{f, x}, jit.Features{Rethunk: true})
			add("call-depth-fentry-fexit", k, test2, []jit.Prog{f, x}, jit.Features{CallDepth: true})
		}
	}
	for _, k := range btfmodel.Kernels {
		if k == btfmodel.DefaultKernel || !btfmodel.LimitsFor(arch, k).KernelFuncTargets {
			continue
		}
		add("fentry-fexit-test2", k, test2, []jit.Prog{f, x}, none)
		add("fentry-only-test2", k, test2, []jit.Prog{f}, none)
		add("fmod_ret2-fexit-test2", k, test2, []jit.Prog{m, m, x}, none)
		add("args-6-fentry-fexit", k, nargs(6), []jit.Prog{f, x}, none)
		add("args-0-fentry", k, nargs(0), []jit.Prog{f}, none)
		add("sleepable-lsm", k, "int bpf_lsm_file_open(struct file *file)", []jit.Prog{with(l, func(p *jit.Prog) { p.Sleepable = true })}, none)
		add("cookies-func-ip", k, test2, []jit.Prog{with(f, func(p *jit.Prog) { p.Cookie = 0x80000000; p.FuncIP = true }), with(x, func(p *jit.Prog) { p.Cookie = jit.Cookie(^uint64(0)) })}, none)
		add("struct-16-fentry-fexit", k, "struct pair { u64 a; u32 b; }; int f(struct pair p, int x)", []jit.Prog{f, x}, none)
		if k.Has(btfmodel.CapFsession) && arch == btfmodel.AMD64 {
			// The shapes of 7.2 corpus cases (named after them): jmp mode, fsession with
			// cookies and func_meta, stack arguments 8 bytes closer, the link limit.
			s, sc := jit.Prog{Kind: jit.Fsession}, jit.Prog{Kind: jit.Fsession, SessionCookie: true}
			skLookup := "void *__bpf_sk_lookup(u64 skb, u64 tuple, u32 len, u64 net, u32 ifindex, u8 proto, u64 netns_id, u64 flags, int sdif)"
			modRet := "int bpf_modify_return_test(int a, int *b)"
			add("fexit-only-test2", k, test2, []jit.Prog{x}, none)
			add("fsession-cookie-test2", k, test2, []jit.Prog{sc}, none)
			add("fsession4-cookie3-test2", k, test2, []jit.Prog{sc, s, sc, sc}, none)
			add("fsession-cookie-func-ip", k, test2, []jit.Prog{with(sc, func(p *jit.Prog) { p.FuncIP = true }), f}, none)
			add("fentry-fsession-fexit", k, test2, []jit.Prog{f, sc, x}, none)
			add("fsession-cookie-fmod_ret-fexit", k, modRet, []jit.Prog{sc, m, x}, none)
			add("args-9-stack-fexit", k, skLookup, []jit.Prog{x}, none)
			add("args-9-stack-fsession-cookie", k, skLookup, []jit.Prog{sc}, none)
			add("links-36-fentry", k, test2, rep(f, 36), none)
			add("links-18-fsession", k, test2, rep(s, 18), none)
		}
	}
	return out
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
