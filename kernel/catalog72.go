package kernel

import (
	"fmt"

	"github.com/trampjit/trampjit/jit"
)

// The cases 7.2 opens, on top of the 6.12 catalogue (same ids where the case is the same):
// x86 jmp mode with 1 to 38 programs and with stack arguments, fsession programs alone and
// mixed with the other kinds, session cookies, arm64 with 9 to 12 arguments and structs
// passed on the stack, and the refusals that are new.

var fss = jit.Prog{Kind: jit.Fsession}

// sessionCookie is an fsession program that calls bpf_session_cookie.
func sessionCookie(p jit.Prog) jit.Prog { p.SessionCookie = true; return p }

func (c *catalog) v72() {
	c.jmpMode()
	c.fsession()
	c.stackStructs()
}

// jmpMode: fexit and fmod_ret trampolines are entered by jmp on x86 7.x. Program counts up
// to the link limit, and fexit with arguments on the stack; the same cases on arm64 record
// its call form.
func (c *catalog) jmpMode() {
	t2 := "bpf_fentry_test2"
	c.add(t2, "fexit8", rep(fx, 8)...)
	c.add(t2, "fexit16", rep(fx, 16)...)
	c.add(t2, "fentry8-fexit8", cat(rep(fe, 8), rep(fx, 8))...)
	// The 6.12 links-38 cases are refused on 7.2 before the 38th; these bracket the limit.
	for _, n := range []int{35, 36, 37} {
		c.add(t2, fmt.Sprintf("links-%d-fentry", n), rep(fe, n)...)
		c.add(t2, fmt.Sprintf("links-%d-fexit", n), rep(fx, n)...)
	}
	c.add(t2, "links-36-mixed", cat(rep(fe, 18), rep(fx, 18))...)
	c.add("bpf_modify_return_test", "links-36-fmod_ret", cat(rep(fm, 35), []jit.Prog{fx})...)
	c.add("bpf_modify_return_test", "fmod_ret8-fexit8", cat(rep(fm, 8), rep(fx, 8))...)
	for _, fn := range []string{"bpf_modify_return_test2", "__bpf_sk_lookup", "__inet_lookup_listener", "tcp_v4_send_ack"} {
		c.add(fn, "fexit2-cookie", cookie(fx, 0x72), fx)
		c.add(fn, "fentry-fexit-fexit", fe, fx, fx)
	}
	c.add("bpf_modify_return_test2", "fmod_ret", fm)
	c.add("bpf_modify_return_test2", "fmod_ret-func-ip", funcIP(fm), fx)
}

// fsession programs (BPF_TRACE_FSESSION): alone, several, with session cookies (each
// program that calls bpf_session_cookie gets a slot), with link cookies and
// bpf_get_func_ip, mixed with fentry, fexit and fmod_ret, and where the kernel refuses them.
func (c *catalog) fsession() {
	for i := 1; i <= 8; i++ {
		c.add(fmt.Sprintf("bpf_fentry_test%d", i), "fsession", fss)
	}
	t2 := "bpf_fentry_test2"
	sc := sessionCookie(fss)
	c.add(t2, "fsession2", fss, fss)
	c.add(t2, "fsession-cookie", sc)
	c.add(t2, "fsession2-cookie2", sc, sc)
	c.add(t2, "fsession-cookie-nocookie", sc, fss)
	c.add(t2, "fsession4-cookie3", sc, fss, sc, sc)
	c.add(t2, "fsession-fentry", fss, fe)
	c.add(t2, "fsession-fexit", fss, fx)
	c.add(t2, "fentry-fsession-fexit", fe, sc, fx)
	c.add(t2, "fsession-func-ip", funcIP(fss))
	c.add(t2, "fsession-cookie-func-ip", funcIP(sc), fe)
	c.add(t2, "fsession-bpf-cookie", cookie(fss, 0xf5), cookie(sc, ^uint64(0)))
	c.add(t2, "links-18-fsession", rep(fss, 18)...)
	c.add(t2, "links-19-fsession", rep(fss, 19)...)
	c.add(t2, "fsession-sleepable", sleepable(fss))
	c.add("bpf_fentry_test1", "fsession-sleepable", sleepable(fss))
	mr := "bpf_modify_return_test"
	c.add(mr, "fsession-fmod_ret", fss, fm)
	c.add(mr, "fsession-cookie-fmod_ret-fexit", sc, fm, fx)
	c.add(mr, "fentry-fmod_ret-fsession2", fe, fm, sc, fss)
	for _, fn := range []string{"tcp_v4_connect", "kfree", "d_path", "vfs_read", "ktime_get_real_seconds"} {
		c.add(fn, "fsession", fss)
		c.add(fn, "fsession-cookie", sc)
	}
	for _, fn := range []string{"bpf_modify_return_test2", "__bpf_sk_lookup", "__ip_append_data", "tcp_v4_send_ack", "sock_setsockopt", "__audit_tk_injoffset", "from_kuid"} {
		c.add(fn, "fsession-cookie", sc)
	}
	c.add("tcp_v4_send_ack", "fsession-fentry-fexit", fe, fss, fx)
	c.add("bpf_lsm_file_open", "fsession", fss)
	c.add("bpf_lsm_file_open", "lsm-fsession", ls, fss)
	// Refusals: __noreturn, the deny list, what no trampoline can take.
	c.add("do_exit", "fsession", fss)
	c.add("migrate_disable", "fsession", fss)
	c.add("bpf_trace_run12", "fsession", fss)
	c.add("_printk", "fsession", fss)
	c.add("make_kuid", "fsession", fss)
}

// stackStructs: structs passed by value after the eighth argument slot (on the stack on
// arm64; on x86 past the sixth), and arm64's new 9 to 12 argument range with fmod_ret-free
// mixes.
func (c *catalog) stackStructs() {
	for _, fn := range []string{
		"__vring_new_virtqueue_split", // 9 args, an 8-byte struct in slot 9
		"aa_audit_file",               // 11 args, a 4-byte struct in slot 9
		"vring_create_virtqueue_map",  // 11 args, an 8-byte struct in slot 11
		"bpf_log_attr_init",           // 9 args, 11 slots: a 16-byte struct in slots 9-10
	} {
		c.add(fn, "fentry", fe)
		c.add(fn, "fexit", fx)
		c.add(fn, "fentry-fexit-func-ip", funcIP(fe), fx)
	}
	c.add("__ext4_new_inode", "fentry2-fexit2", fe, fe, fx, fx)
	c.add("__inet_lookup_listener", "fexit-cookies", cookie(fx, 1), cookie(fx, ^uint64(0)))
}
