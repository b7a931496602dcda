package kernel

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// FuzzPool is what the image fuzzer draws from for one profile and architecture: the
// kernel's BTF functions grouped by prototype shape, and the shapes the catalogue covers.
type FuzzPool struct {
	Kernel btfmodel.Kernel
	Arch   btfmodel.Arch
	shapes []string            // shape keys, sorted (the draw must not depend on map order)
	byKey  map[string][]string // shape key -> function names, sorted
	models map[string]*btfmodel.FuncModel
	// covered are the shapes some catalogue function has: drawn a quarter as often.
	covered map[string]bool
	// modifiable and hooks are the functions fmod_ret and lsm attach to (security_ hooks,
	// the fmod_ret id set, bpf_lsm_ hooks): drawn on purpose, a random draw rarely finds one.
	modifiable, hooks []string
	// bad are functions the kernel cannot distill (too many arguments, big structs,
	// variadic, struct returns): deliberate refusals.
	bad []string
	// sessionKfuncs: the BTF has the kfuncs the agent's fsession program calls
	// (bpf_session_is_return, bpf_session_cookie: 6.10+). Without them the loader refuses an
	// fsession program before the kernel sees it, so none is drawn.
	sessionKfuncs bool
}

// fuzzSkip are functions no random case traces: the trampoline's own path and the code a
// guest needs to keep running (a fentry there recurses or stalls the console the results
// travel on), and names the kernel links twice.
var fuzzSkip = []string{"bpf_", "__bpf", "rcu", "__rcu", "lock", "_raw_", "raw_", "spin_", "preempt", "irq", "__irq",
	"sched", "__schedule", "ftrace", "trace", "__trace", "perf", "kprobe", "text_poke", "arch_", "native_",
	"printk", "vprintk", "console", "serial", "uart", "tty", "n_tty", "do_idle", "cpuidle", "default_idle", "tick",
	"hrtimer", "timer", "__x86_", "__arm64_", "__riscv_", "entry_", "do_syscall", "syscall_", "panic", "die", "oops",
	"stack", "unwind", "kasan", "kcsan", "lockdep", "mutex", "down_", "up_", "__do_softirq", "do_softirq", "smp_",
	"flush_tlb", "__flush", "local_", "this_cpu", "read_tsc", "ktime_get", "clocksource", "hv_", "kvm", "xen",
	"cpu_", "__cpu", "memcpy", "memset", "memmove", "__memcpy", "__memset", "copy_", "_copy", "__copy", "strncpy",
	"check_", "__check", "might_", "__might", "wake_up", "try_to_wake", "ttwu", "enqueue", "dequeue", "pick_next",
	"update_", "account_", "kmem_cache_alloc", "__kmalloc", "kmalloc", "kfree", "slab", "__slab", "alloc_pages",
	"__alloc", "free_", "__free", "get_page", "put_page", "folio", "__folio", "page_", "__page", "pcpu", "percpu"}

// fuzzBPFTargets are the agent's BPF-program targets (kernel/agent/target.go).
const fuzzBPFTargets = 6

// NewFuzzPool reads a profile's kernel BTF (the corpus's vmlinux.btf.xz) and groups its
// traceable functions by shape.
func NewFuzzPool(spec *btf.Spec, kernel btfmodel.Kernel, arch btfmodel.Arch) (*FuzzPool, error) {
	p := &FuzzPool{Kernel: kernel, Arch: arch, byKey: map[string][]string{}, models: map[string]*btfmodel.FuncModel{}, covered: map[string]bool{}}
	count := map[string]int{}
	funcs := map[string]*btf.Func{}
	for t, err := range spec.All() {
		if err != nil {
			return nil, err
		}
		fn, ok := t.(*btf.Func)
		if !ok || fn.Name == "" {
			continue
		}
		count[fn.Name]++
		funcs[fn.Name] = fn
	}
	p.sessionKfuncs = funcs["bpf_session_is_return"] != nil && funcs["bpf_session_cookie"] != nil
	for name, fn := range funcs {
		if count[name] > 1 || skipFuzz(name) {
			continue // two statics of one name: the loader and the model may pick different ones
		}
		m, err := btfmodel.Distill(fn, kernel)
		if err != nil {
			p.bad = append(p.bad, name)
			continue
		}
		k := shapeKey(m)
		p.byKey[k] = append(p.byKey[k], name)
		p.models[name] = m
	}
	env := btfmodel.AttachEnv{Kernel: kernel, Arch: arch, NoWideReturnRule: true} // the draws predate the rule
	for name, m := range p.models {
		if btfmodel.CheckAttach(name, m, nil, jit.LSM, env).OK {
			p.hooks = append(p.hooks, name)
		} else if btfmodel.CheckAttach(name, m, nil, jit.ModRet, env).OK {
			p.modifiable = append(p.modifiable, name)
		}
	}
	sort.Strings(p.hooks)
	sort.Strings(p.modifiable)
	for k, l := range p.byKey {
		sort.Strings(l)
		p.shapes = append(p.shapes, k)
	}
	sort.Strings(p.shapes)
	sort.Strings(p.bad)
	if len(p.shapes) == 0 {
		return nil, fmt.Errorf("%s-%s: the BTF has no function the fuzzer can trace", kernel, arch)
	}
	for _, c := range Catalog(string(kernel), string(arch)) {
		if fn, err := btfmodel.FuncByName(spec, c.Func); err == nil && c.Target == "" {
			if m, err := btfmodel.Distill(fn, kernel); err == nil {
				p.covered[shapeKey(m)] = true
			}
		}
	}
	return p, nil
}

func skipFuzz(name string) bool {
	if strings.HasPrefix(name, "bpf_lsm_") || strings.HasPrefix(name, "security_") ||
		strings.HasPrefix(name, "bpf_fentry_test") || strings.HasPrefix(name, "bpf_modify_return_test") {
		return false // LSM and fmod_ret targets: called rarely, through hooks
	}
	for _, s := range fuzzSkip {
		if strings.HasPrefix(name, s) {
			return true
		}
	}
	return strings.Contains(name, "lock") || strings.Contains(name, "rcu") || strings.Contains(name, "irq")
}

// shapeKey is a prototype's shape: per argument its size and class (struct, signed,
// unsigned or pointer), and the return's.
func shapeKey(m *btfmodel.FuncModel) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d:", m.NrArgs())
	for _, a := range m.Args {
		b.WriteString(argClass(a.Type, a.Size, a.Flags))
	}
	b.WriteString("->")
	if m.RetSize == 0 {
		b.WriteString("v")
	} else {
		b.WriteString(argClass(m.RetType, m.RetSize, m.RetFlags))
	}
	return b.String()
}

func argClass(t btf.Type, size int, f btfmodel.ArgFlags) string {
	switch {
	case f&btfmodel.StructArg != 0:
		return fmt.Sprintf("S%d", size)
	case isPointer(t):
		return "p"
	case isSignedInt(t):
		return fmt.Sprintf("i%d", size)
	default:
		return fmt.Sprintf("u%d", size)
	}
}

func isPointer(t btf.Type) bool {
	_, ok := btfmodel.SkipModifiers(t).(*btf.Pointer)
	return ok
}

func isSignedInt(t btf.Type) bool {
	i, ok := btfmodel.SkipModifiers(t).(*btf.Int)
	return ok && i.Encoding&btf.Signed != 0
}

// Shapes is how many prototype shapes the pool has, and how many the catalogue lacks.
func (p *FuzzPool) Shapes() (all, uncovered int) {
	for _, k := range p.shapes {
		if !p.covered[k] {
			uncovered++
		}
	}
	return len(p.shapes), uncovered
}

// Model is a pool function's model (nil for one the pool does not hold).
func (p *FuzzPool) Model(name string) *btfmodel.FuncModel { return p.models[name] }

// Generate draws n cases, the same ones for the same seed. Ids are "fuzz-<seed>-<i>".
func (p *FuzzPool) Generate(seed uint64, n int) []Case {
	r := rand.New(rand.NewPCG(seed, 0x696d616765)) // "image"
	out := make([]Case, 0, n)
	for i := 0; i < n; i++ {
		c := p.one(r)
		c.ID = fmt.Sprintf("fuzz-%d-%d", seed, i)
		out = append(out, c)
	}
	return out
}

// pickShape draws a shape, an uncovered one four times as often as a covered one, and
// each argument count 0-12 about equally often (most kernel functions take 1-3).
func (p *FuzzPool) pickShape(r *rand.Rand) string {
	byN := map[int][]string{}
	var ns []int
	for _, k := range p.shapes {
		var n int
		fmt.Sscanf(k, "%d:", &n)
		if byN[n] == nil {
			ns = append(ns, n)
		}
		byN[n] = append(byN[n], k)
	}
	keys := byN[ns[r.IntN(len(ns))]]
	w := 0
	for _, k := range keys {
		w += p.weight(k)
	}
	x := r.IntN(w)
	for _, k := range keys {
		if x -= p.weight(k); x < 0 {
			return k
		}
	}
	return keys[len(keys)-1]
}

func (p *FuzzPool) weight(k string) int {
	if p.covered[k] {
		return 1
	}
	return 4
}

// one draws a case: a BPF-program target 3 times in 40, a function the kernel cannot
// distill one in 40, else a BTF function: one in 20 a function fmod_ret attaches to, one in
// 20 an LSM hook, the rest by shape.
func (p *FuzzPool) one(r *rand.Rand) Case {
	lim := btfmodel.LimitsFor(p.Arch, p.Kernel)
	switch x := r.IntN(40); {
	case x < 3 || !lim.KernelFuncTargets:
		n := r.IntN(fuzzBPFTargets)
		c := Case{Func: fmt.Sprintf("tj_args%d", n), Target: "bpf"}
		c.Progs = p.progs(r, "", []jit.Kind{jit.Fentry, jit.Fexit}, lim.MaxTrampLinks)
		return c
	case x == 3 && len(p.bad) > 0:
		return Case{Func: p.bad[r.IntN(len(p.bad))], Progs: []jit.Prog{{Kind: jit.Fentry}}}
	}
	names := p.byKey[p.pickShape(r)]
	switch x := r.IntN(20); {
	case x == 0 && len(p.modifiable) > 0:
		names = p.modifiable
	case x == 1 && len(p.hooks) > 0:
		names = p.hooks
	}
	fn := names[r.IntN(len(names))]
	return Case{Func: fn, Progs: p.progs(r, fn, p.kinds(r, fn), lim.MaxTrampLinks)}
}

// kinds are the program kinds a function admits (fmod_ret where it is modifiable, lsm on
// bpf_lsm_ hooks, fsession where the profile has it), with one refused kind one time in ten.
// Where the loader cannot build an fsession program (no session kfuncs: 6.1) fentry takes
// its place, the arch's refusal on a function it cannot trace (6.1 x86_64: more than six
// arguments) where no kind is admitted.
func (p *FuzzPool) kinds(r *rand.Rand, fn string) []jit.Kind {
	env := btfmodel.AttachEnv{Kernel: p.Kernel, Arch: p.Arch, NoWideReturnRule: true}
	ok := func(k jit.Kind) bool { return btfmodel.CheckAttach(fn, p.models[fn], nil, k, env).OK }
	var out []jit.Kind
	for _, k := range []jit.Kind{jit.Fentry, jit.Fexit, jit.ModRet, jit.LSM, jit.Fsession} {
		if ok(k) {
			out = append(out, k)
		}
	}
	if r.IntN(10) == 0 || len(out) == 0 {
		// Not lsm: on a function without the bpf_lsm_ prefix the loader (cilium/ebpf)
		// refuses before the kernel sees it ("LSM hook not supported").
		refused := []jit.Kind{jit.ModRet, jit.Fsession}
		if !p.sessionKfuncs {
			refused[1] = jit.Fentry
		}
		out = append(out, refused[r.IntN(len(refused))])
	}
	return out
}

// progs draws 1-4 programs (up to the link limit and one past it, rarely) of the given
// kinds, with cookies of every encoding class, func_ip, sleepable and session cookies.
func (p *FuzzPool) progs(r *rand.Rand, fn string, kinds []jit.Kind, links int) []jit.Prog {
	n := 1 + r.IntN(4)
	switch r.IntN(20) {
	case 0:
		n = 5 + r.IntN(links-4) // 5 .. links
	case 1:
		n = links + r.IntN(2) // the limit, or one past it: E2BIG
	}
	sleepOK := false
	if fn != "" {
		env := btfmodel.AttachEnv{Kernel: p.Kernel, Arch: p.Arch, Sleepable: true, NoWideReturnRule: true}
		sleepOK = btfmodel.CheckAttach(fn, p.models[fn], nil, kinds[0], env).OK
	}
	sleepAll := r.IntN(8) == 0 // a sleepable set, even where the kernel refuses it
	out := make([]jit.Prog, n)
	for i := range out {
		pr := jit.Prog{Kind: kinds[r.IntN(len(kinds))]}
		pr.Cookie = jit.Cookie(randCookie(r))
		pr.FuncIP = r.IntN(5) == 0
		if pr.Kind == jit.Fsession {
			pr.SessionCookie = r.IntN(2) == 0
		}
		if (sleepOK && r.IntN(4) == 0) || sleepAll {
			pr.Sleepable = pr.Kind != jit.Fsession && pr.Kind != jit.LSM
		}
		out[i] = pr
	}
	return out
}

// randCookie draws a BPF cookie of one encoding class: none, small, 32-bit, negative
// (sign-extended 32-bit) or full 64-bit.
func randCookie(r *rand.Rand) uint64 {
	switch r.IntN(6) {
	case 0:
		return 1 + r.Uint64N(0x7f)
	case 1:
		return 0x80 + r.Uint64N(0x7fffff80)
	case 2:
		return 0x80000000 + r.Uint64N(0x80000000)
	case 3:
		return -(1 + r.Uint64N(0x80000000))
	case 4:
		return r.Uint64() | 1<<32
	}
	return 0
}

// nargs is a case's argument count (a BPF target's N), -1 when the pool does not know it.
func (p *FuzzPool) nargs(c Case) int {
	if c.Target == "bpf" {
		var n int
		fmt.Sscanf(c.Func, "tj_args%d", &n)
		return n
	}
	if m := p.models[c.Func]; m != nil {
		return m.NrArgs()
	}
	return -1
}
