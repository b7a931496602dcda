package kernel

import (
	"fmt"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// Catalog is the kernel corpus's case list for one profile and architecture: the attachments
// `make corpus` captures into testdata/kernel/<kernel>-<arch>/. It spans 0 to 12 arguments,
// structs passed by value, void, small-int and pointer returns, every program kind alone and
// mixed, 1 to 4 programs per kind and the 38-link limit, sleepable programs, cookies of every
// size class, bpf_get_func_ip, BPF-program targets, and the attachments the kernel refuses.
// Functions a kernel lacks are left out for it; refusals are captured as such.
func Catalog(kernel, arch string) []Case {
	c := &catalog{kernel: kernel, arch: arch}
	if btfmodel.ProfileFor(btfmodel.Kernel(kernel)) != nil && !btfmodel.LimitsFor(btfmodel.Arch(arch), btfmodel.Kernel(kernel)).KernelFuncTargets {
		// 6.1 arm64 has no ftrace direct calls: only BPF programs can be traced. Record the
		// refusal on kernel functions, then cover the BPF-program targets.
		c.add("bpf_fentry_test2", "fentry", fe)
		c.add("tcp_v4_connect", "fexit", fx)
		c.bpfTargets(true)
		return c.cases
	}
	c.testFuncs()
	c.realFuncs()
	c.structArgs()
	c.manyArgs()
	c.lsm()
	c.refusals()
	if btfmodel.Kernel(c.kernel).Has(btfmodel.CapFsession) {
		// The 7.x trampoline: jmp mode, fsession, session cookies, wider arm64 arguments.
		c.v72()
	}
	c.bpfTargets(false)
	return c.cases
}

type catalog struct {
	kernel, arch string
	cases        []Case
}

var (
	fe = jit.Prog{Kind: jit.Fentry}
	fx = jit.Prog{Kind: jit.Fexit}
	fm = jit.Prog{Kind: jit.ModRet}
	ls = jit.Prog{Kind: jit.LSM}
)

func rep(p jit.Prog, n int) []jit.Prog {
	s := make([]jit.Prog, n)
	for i := range s {
		s[i] = p
	}
	return s
}

func cat(lists ...[]jit.Prog) []jit.Prog {
	var all []jit.Prog
	for _, l := range lists {
		all = append(all, l...)
	}
	return all
}

func cookie(p jit.Prog, c uint64) jit.Prog { p.Cookie = jit.Cookie(c); return p }
func funcIP(p jit.Prog) jit.Prog           { p.FuncIP = true; return p }
func sleepable(p jit.Prog) jit.Prog        { p.Sleepable = true; return p }

// syscallPrefix is each arch's syscall wrapper prefix (arch/*/include/asm/syscall_wrapper.h).
var syscallPrefix = map[string]string{"amd64": "__x64_sys_", "arm64": "__arm64_sys_", "riscv64": "__riscv_sys_"}

// sys is the arch's syscall wrapper of a syscall.
func (c *catalog) sys(name string) string {
	if p, ok := syscallPrefix[c.arch]; ok {
		return p + name
	}
	return "__x64_sys_" + name
}

// add and addRun leave out functions the profile's BTF lacks (catalogAbsent).
func (c *catalog) add(fn, id string, progs ...jit.Prog) {
	if c.has(fn) {
		c.cases = append(c.cases, Case{ID: fn + "-" + id, Func: fn, Progs: progs})
	}
}

func (c *catalog) addRun(fn, id string, progs ...jit.Prog) {
	if c.has(fn) {
		c.cases = append(c.cases, Case{ID: fn + "-" + id, Func: fn, Progs: progs, Run: true})
	}
}

// testFuncs are net/bpf/test_run.c's targets: BPF_PROG_TEST_RUN calls them, so these cases
// also record what each program saw and what the caller got back.
func (c *catalog) testFuncs() {
	for i := 1; i <= 8; i++ {
		fn := fmt.Sprintf("bpf_fentry_test%d", i)
		c.addRun(fn, "fentry-fexit", fe, fx)
		c.add(fn, "fentry", fe)
		c.add(fn, "fexit", fx)
	}
	t2 := "bpf_fentry_test2"
	c.add(t2, "fentry2", fe, fe)
	c.add(t2, "fexit3", fx, fx, fx)
	c.add(t2, "fentry4-fexit4", cat(rep(fe, 4), rep(fx, 4))...)
	c.add(t2, "fexit-fentry-order", fx, fe, fx, fe)
	c.addRun(t2, "func-ip-fentry", funcIP(fe))
	c.addRun(t2, "func-ip-fexit", fe, funcIP(fx))
	c.add(t2, "cookies-small", cookie(fe, 0), cookie(fe, 1), cookie(fx, 7))
	c.add(t2, "cookies-32bit", cookie(fe, 0x7fffffff), cookie(fe, 0x80000000), cookie(fx, 0xffffffff))
	c.add(t2, "cookies-negative", cookie(fe, ^uint64(0)), cookie(fx, ^uint64(1)), cookie(fx, ^uint64(0x7fffffff)))
	c.add(t2, "cookies-64bit", cookie(fe, 0x123456789abcdef0), cookie(fx, 0x100000000))
	c.add(t2, "cookies-func-ip", funcIP(cookie(fe, 0x80000000)), cookie(fx, ^uint64(0)))
	c.add(t2, "links-38-fentry", rep(fe, 38)...)
	c.add(t2, "links-38-mixed", cat(rep(fe, 19), rep(fx, 19))...)
	c.add(t2, "links-39-e2big", rep(fe, 39)...)
	c.add("bpf_fentry_test6", "fentry2-fexit2", fe, fe, fx, fx)
	c.add("bpf_fentry_test6", "func-ip", funcIP(fe), fx)
	c.add("bpf_fentry_test3", "cookies", cookie(fe, 42), cookie(fx, ^uint64(41)))
	// fmod_ret: the fmod_ret id set (6.3+) admits bpf_modify_return_test*; 6.1 needs error
	// injection, which Debian does not build.
	mr := "bpf_modify_return_test"
	c.addRun(mr, "fmod_ret", fm)
	c.addRun(mr, "fmod_ret-fexit", fm, fx)
	c.addRun(mr, "fentry-fmod_ret-fexit", fe, fm, fx)
	c.add(mr, "fmod_ret2", fm, fm)
	c.add(mr, "fmod_ret4-fexit", cat(rep(fm, 4), []jit.Prog{fx})...)
	c.add(mr, "fmod_ret3-fentry3-fexit3", cat(rep(fe, 3), rep(fm, 3), rep(fx, 3))...)
	c.add(mr, "links-38-fmod_ret", cat(rep(fm, 37), []jit.Prog{fx})...)
	c.add(mr, "fmod_ret-cookies", cookie(fm, 0xdead), cookie(fm, ^uint64(0)), fx)
	c.add(mr, "fmod_ret-func-ip", funcIP(fm), fx)
	if c.has("bpf_modify_return_test2") {
		c.addRun("bpf_modify_return_test2", "fmod_ret-fexit", fm, fx)
		c.addRun("bpf_modify_return_test2", "fentry-fexit", fe, fx)
		c.add("bpf_modify_return_test2", "fmod_ret2-fexit2", fm, fm, fx, fx)
		c.add("bpf_fentry_test_sinfo", "fentry-fexit", fe, fx)
	}
	// Sleepable: 6.12's fmod_ret id set marks bpf_fentry_test1 KF_SLEEPABLE; 6.1 refuses.
	c.add("bpf_fentry_test1", "sleepable-fentry", sleepable(fe))
	c.add("bpf_fentry_test1", "sleepable-fentry-fexit", sleepable(fe), sleepable(fx))
	c.add("bpf_fentry_test1", "sleepable-mixed", sleepable(fe), fe, fx)
}

// realFuncs are ordinary kernel functions of 0 to 6 arguments with void, small-int, long and
// pointer returns.
func (c *catalog) realFuncs() {
	for _, fn := range []string{
		"ktime_get_real_seconds", // 0 args, time64_t
		"get_random_u32",         // 0 args, u32
		"kfree",                  // 1 arg, void
		"commit_creds",           // 1 arg, int
		"kernel_clone",           // 1 arg, pid_t
		"__sys_setuid",           // uid_t, long
		"tcp_set_state",          // 2 args, void
		"tcp_v4_connect",         // 3 args, int
		"tcp_sendmsg",            // 3 args, int
		"do_sys_openat2",         // 3 args, long
		"vfs_read",               // 4 args, ssize_t
		"vfs_write",              // 4 args, ssize_t
		"ip_rcv",                 // 4 args
		"security_socket_connect",
		"kmem_cache_free", // 2 args, void
		"vfs_fsync_range", // 4 args: file, loff_t, loff_t, int
		"filp_close",      // 2 args
		"d_path",          // 3 args, returns char *
	} {
		c.add(fn, "fentry", fe)
		c.add(fn, "fexit", fx)
		c.add(fn, "fentry-fexit", fe, fx)
	}
	c.add("tcp_v4_connect", "fentry2-fexit2-func-ip", fe, funcIP(fe), fx, fx)
	c.add("vfs_read", "fexit-cookie", cookie(fx, 0xfeedface))
	// fmod_ret where the kernel admits it: security_ hooks and syscall wrappers.
	c.add("security_socket_connect", "fmod_ret", fm)
	c.add("security_socket_connect", "fmod_ret-fexit", fm, fx)
	c.add(c.sys("getpgid"), "fmod_ret", fm)
	c.add(c.sys("getpgid"), "fentry-fmod_ret-fexit", fe, fm, fx)
	c.add(c.sys("getpgid"), "sleepable-fentry", sleepable(fe))
	c.add(c.sys("getpgid"), "sleepable-fmod_ret", sleepable(fm))
	c.add(c.sys("close"), "fentry-fexit", fe, fx)
	c.add(c.sys("exit_group"), "fentry", fe)
}

// structArgs pass structs by value: 1, 4, 8, 12 and 16 bytes, in one or two slots.
func (c *catalog) structArgs() {
	for _, fn := range []string{
		"from_kuid",                // kuid_t: 4 bytes
		"__delete_from_swap_cache", // swp_entry_t: 8 bytes
		"sock_setsockopt",          // sockptr_t: 16 bytes, 6 slots
		"__audit_tk_injoffset",     // struct timespec64: 16 bytes
		"__sys_bpf",                // bpfptr_t: 16 bytes
	} {
		c.add(fn, "fentry", fe)
		c.add(fn, "fentry-fexit", fe, fx)
	}
	if c.arch == "amd64" {
		c.add("irqentry_exit", "fentry", fe) // irqentry_state_t: 1 byte
		c.add("acpi_hibernation_begin", "fentry-fexit", fe, fx)
	}
	if c.has("do_sock_setsockopt") {
		c.add("do_sock_setsockopt", "fentry-fexit", fe, fx) // 7 slots
	}
	if c.has("acpi_call_prm_handler") {
		c.add("acpi_call_prm_handler", "fentry", fe) // guid_t: 16 bytes
	}
}

// manyArgs go past six argument registers: stack arguments on x86 6.12, the limits elsewhere.
func (c *catalog) manyArgs() {
	for _, fn := range []string{
		"bpf_modify_return_test2",           // 7 (6.12)
		"ZSTD_compress_usingCDict_advanced", // 6 + a 12-byte struct = 8 slots (6.12)
		"__bpf_sk_lookup",                   // 9
		"__inet_lookup_listener",            // 10
		"__ip_append_data",                  // 10
		"__ext4_new_inode",                  // 11
		"tcp_v4_send_ack",                   // 12
	} {
		if !c.has(fn) {
			continue
		}
		c.add(fn, "fentry", fe)
		c.add(fn, "fexit", fx)
		c.add(fn, "fentry-fexit-func-ip", funcIP(fe), fx)
	}
	c.add("tcp_v4_send_ack", "fentry2-fexit2", fe, fe, fx, fx)
	c.add("__ip_append_data", "fexit-cookies", cookie(fx, 1), cookie(fx, ^uint64(0)))
}

// lsm attaches BPF LSM programs: int hooks take the fmod_ret path, void hooks the fexit one.
func (c *catalog) lsm() {
	for _, fn := range []string{"bpf_lsm_file_open", "bpf_lsm_socket_connect", "bpf_lsm_bprm_check_security"} {
		c.add(fn, "lsm", ls)
		c.add(fn, "lsm2", ls, ls)
	}
	c.add("bpf_lsm_task_free", "lsm-void", ls)
	c.add("bpf_lsm_task_free", "lsm2-void", ls, ls)
	c.add("bpf_lsm_file_open", "lsm-fentry-fexit", fe, ls, fx)
	c.add("bpf_lsm_file_open", "lsm-sleepable", sleepable(ls))
	c.add("bpf_lsm_file_open", "lsm-cookie", cookie(ls, 0x5151))
	c.add("bpf_lsm_task_free", "lsm-sleepable", sleepable(ls))
	c.add("bpf_lsm_inode_getsecurity", "lsm", ls)
}

// refusals are attachments the kernel refuses; the corpus keeps its words.
func (c *catalog) refusals() {
	c.add("bpf_trace_run12", "fentry", fe)      // 13 args
	c.add("rtnl_fill_ifinfo", "fexit", fx)      // 14 args
	c.add("_printk", "fentry", fe)              // varargs
	c.add("net_dim", "fentry", fe)              // struct argument > 16 bytes
	c.add("make_kuid", "fentry", fe)            // struct return
	c.add("ns_to_timespec64", "fexit", fx)      // struct return
	c.add("kill_pid_usb_asyncio", "fentry", fe) // union argument
	if c.has("secure_tcp_seq_and_ts_off") {
		c.add("secure_tcp_seq_and_ts_off", "fentry", fe) // union return
	}
	c.add("do_exit", "fentry", fe)                             // fine
	c.add("do_exit", "fexit", fx)                              // __noreturn
	c.add("do_group_exit", "fmod_ret", fm)                     // __noreturn, not modifiable
	c.add("tcp_v4_connect", "fmod_ret", fm)                    // not modifiable
	c.add("vfs_read", "fmod_ret", fm)                          // not modifiable
	c.add("migrate_disable", "fentry", fe)                     // btf_id_deny
	c.add("migrate_enable", "fexit", fx)                       // btf_id_deny
	c.add("bpf_trace_run11", "fentry", fe)                     // not ftrace-managed: EBUSY
	c.add("tcp_v4_connect", "sleepable-fentry", sleepable(fe)) // not sleepable
	c.add("bpf_fentry_test3", "sleepable-fentry", sleepable(fe))
	c.add("bpf_modify_return_test", "sleepable-fmod_ret", sleepable(fm))
	c.add("bpf_lsm_task_alloc", "lsm-sleepable", sleepable(ls))
	c.add("bpf_lsm_inode_need_killpriv", "lsm", ls)
}

// bpfTargets trace global functions of a BPF program (tj_args0..5): fentry and fexit on a
// program, the only trampolines 6.1 arm64 can build.
func (c *catalog) bpfTargets(many bool) {
	for n := 0; n <= 5; n++ {
		fn := fmt.Sprintf("tj_args%d", n)
		add := func(id string, run bool, progs ...jit.Prog) {
			c.cases = append(c.cases, Case{ID: "bpf-" + fn + "-" + id, Func: fn, Progs: progs, Target: "bpf", Run: run})
		}
		add("fentry-fexit", true, fe, fx)
		if !many && n%2 == 1 {
			continue
		}
		add("fentry", false, fe)
		add("fexit", false, fx)
		add("fentry2-fexit2", true, fe, fe, fx, fx)
		add("func-ip", true, funcIP(fe), fx)
		add("cookies", false, cookie(fe, 0x80000000), cookie(fx, ^uint64(0)))
		if many {
			add("fentry4", false, rep(fe, 4)...)
			add("fexit4", false, rep(fx, 4)...)
			add("fentry3-fexit3", true, cat(rep(fe, 3), rep(fx, 3))...)
			add("cookies-64bit", false, cookie(fe, 0x123456789abcdef0), cookie(fe, 7), cookie(fx, 0xffffffff))
			add("links-38", false, cat(rep(fe, 19), rep(fx, 19))...)
			add("sleepable", false, sleepable(fe))
		}
	}
}

// Functions lists the distinct functions of a catalogue.
func Functions(cases []Case) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range cases {
		if !seen[c.Func] {
			seen[c.Func] = true
			out = append(out, c.Func)
		}
	}
	return out
}

// catalogSummary describes a catalogue in one line, for progress output.
func catalogSummary(cases []Case) string {
	kinds := map[jit.Kind]int{}
	for _, c := range cases {
		for _, p := range c.Progs {
			kinds[p.Kind]++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d cases over %d functions (programs:", len(cases), len(Functions(cases)))
	for _, k := range []jit.Kind{jit.Fentry, jit.Fexit, jit.ModRet, jit.LSM, jit.Fsession} {
		fmt.Fprintf(&b, " %s %d", k, kinds[k])
	}
	b.WriteString(")")
	return b.String()
}
