package btfmodel

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// The vmlinux BTF of the Debian kernels (testdata/btf/README.md says where they come from).
var btfFiles = map[string]string{
	"6.1-amd64":  "../testdata/btf/vmlinux-6.1-amd64.btf.xz",
	"6.12-amd64": "../testdata/btf/vmlinux-6.12-amd64.btf.xz",
	"6.12-arm64": "../testdata/btf/vmlinux-6.12-arm64.btf.xz",
}

var (
	specMu sync.Mutex
	specs  = map[string]*btf.Spec{}
)

func loadSpec(t testing.TB, key string) *btf.Spec {
	t.Helper()
	specMu.Lock()
	defer specMu.Unlock()
	if s, ok := specs[key]; ok {
		return s
	}
	s, err := LoadFile(btfFiles[key], nil)
	if err != nil {
		t.Fatal(err)
	}
	specs[key] = s
	return s
}

// sig is an expected model written from the function's C declaration in the kernel sources,
// by the rules of btf_distill_func_proto, not by running the code under test:
// "args ; ret", each a size with suffixes s (signed int: SIGNED_ARG, 6.3+ only), S (struct:
// STRUCT_ARG), c (plain char: unsigned, since Linux builds with -funsigned-char from 6.2 on,
// and 6.1 models have no signedness flags), xN (repeat N times).
// ret is "void" or a size. err is instead the kernel's log line.
type sig struct {
	fn      string
	kernels string // profiles-arches where the function exists, e.g. "6.1-amd64 6.12-amd64"
	model   string
	err     string
}

const all = "6.1-amd64 6.12-amd64 6.12-arm64"
const k612 = "6.12-amd64 6.12-arm64"

var sigs = []sig{
	{fn: "bpf_fentry_test1", kernels: all, model: "4s ; 4s"},
	{fn: "bpf_fentry_test2", kernels: all, model: "4s 8 ; 4s"},
	{fn: "bpf_fentry_test3", kernels: all, model: "1c 4s 8 ; 4s"},
	{fn: "bpf_fentry_test4", kernels: all, model: "8 1c 4s 8 ; 4s"},
	{fn: "bpf_fentry_test5", kernels: all, model: "8 8 2s 4s 8 ; 4s"},
	{fn: "bpf_fentry_test6", kernels: all, model: "8 8 2s 4s 8 8 ; 4s"},
	{fn: "bpf_fentry_test7", kernels: all, model: "8 ; 4s"},
	{fn: "bpf_fentry_test8", kernels: all, model: "8 ; 4s"},
	{fn: "bpf_modify_return_test", kernels: all, model: "4s 8 ; 4s"},
	{fn: "bpf_modify_return_test2", kernels: k612, model: "4s 8 2s 4s 8 1c 4s ; 4s"},
	{fn: "bpf_fentry_test_sinfo", kernels: k612, model: "8 ; void"},
	{fn: "vfs_read", kernels: all, model: "8 8 8 8 ; 8s"},
	{fn: "vfs_write", kernels: all, model: "8 8 8 8 ; 8s"},
	{fn: "do_sys_openat2", kernels: all, model: "4s 8 8 ; 8s"},
	{fn: "__x64_sys_getpgid", kernels: "6.1-amd64 6.12-amd64", model: "8 ; 8s"},
	{fn: "__arm64_sys_getpgid", kernels: "6.12-arm64", model: "8 ; 8s"},
	{fn: "kfree", kernels: all, model: "8 ; void"},
	{fn: "schedule", kernels: all, model: " ; void"},
	{fn: "migrate_disable", kernels: all, model: " ; void"},
	{fn: "tcp_sendmsg", kernels: all, model: "8 8 8 ; 4s"},
	{fn: "tcp_v4_connect", kernels: all, model: "8 8 4s ; 4s"},
	{fn: "ip_rcv", kernels: all, model: "8x4 ; 4s"},
	{fn: "tcp_set_state", kernels: all, model: "8 4s ; void"},
	{fn: "commit_creds", kernels: all, model: "8 ; 4s"},
	{fn: "kernel_clone", kernels: all, model: "8 ; 4s"},
	{fn: "__sys_setuid", kernels: all, model: "4 ; 8s"},
	{fn: "do_exit", kernels: all, model: "8s ; void"},
	{fn: "__audit_ipc_set_perm", kernels: all, model: "8 4 4 2 ; void"},
	{fn: "security_socket_connect", kernels: all, model: "8 8 4s ; 4s"},
	{fn: "bpf_lsm_socket_connect", kernels: all, model: "8 8 4s ; 4s"},
	{fn: "bpf_lsm_inode_getsecurity", kernels: all, model: "8 8 8 8 1 ; 4s"},
	{fn: "bpf_lsm_task_free", kernels: all, model: "8 ; void"},
	// Structs passed by value: kuid_t (4), irqentry_state_t (1), swp_entry_t (8),
	// pm_message_t (4), ZSTD_frameParameters (12), sockptr_t/bpfptr_t, timespec64, guid_t (16).
	{fn: "from_kuid", kernels: all, model: "8 4S ; 4"},
	{fn: "irqentry_exit", kernels: "6.1-amd64 6.12-amd64", model: "8 1S ; void"},
	{fn: "__delete_from_swap_cache", kernels: all, model: "8 8S 8 ; void"},
	{fn: "acpi_hibernation_begin", kernels: "6.1-amd64 6.12-amd64", model: "4S ; 4s"},
	{fn: "ZSTD_compress_usingCDict_advanced", kernels: k612, model: "8x6 12S ; 8"},
	{fn: "sock_setsockopt", kernels: all, model: "8 4s 4s 16S 4 ; 4s"},
	{fn: "do_sock_setsockopt", kernels: k612, model: "8 1 4s 4s 16S 4s ; 4s"},
	{fn: "__sys_bpf", kernels: "6.1-amd64", model: "4s 16S 4 ; 4s"},
	{fn: "__sys_bpf", kernels: k612, model: "4 16S 4 ; 4s"}, // cmd became enum bpf_cmd
	{fn: "__audit_tk_injoffset", kernels: all, model: "16S ; void"},
	{fn: "acpi_call_prm_handler", kernels: k612, model: "16S 8 ; 4s"},
	{fn: "ZSTD_CCtx_setParameter", kernels: k612, model: "8 4 4s ; 8"},
	// Twelve parameters is the most the kernel accepts.
	{fn: "tcp_v4_send_ack", kernels: all, model: "8 8 4x5 4s 8 4s 1 4 ; void"},
	{fn: "bpf_trace_run11", kernels: all, model: "8x12 ; void"},
	// Rejections, with the kernel's words.
	{fn: "bpf_trace_run12", kernels: all, err: "The function bpf_trace_run12 has 13 arguments. Too many."},
	{fn: "_printk", kernels: all, err: "The function _printk with variable args is unsupported."},
	{fn: "ZSTD_adjustCParams", kernels: k612, err: "The function ZSTD_adjustCParams return type STRUCT is unsupported."},
	{fn: "ZSTD_checkCParams", kernels: k612, err: "The function ZSTD_checkCParams arg0 type STRUCT is unsupported."},
	{fn: "__traceiter_tmigr_update_events", kernels: k612, err: "The function __traceiter_tmigr_update_events arg3 type UNION is unsupported."},
}

type wantArg struct {
	size  int
	flags ArgFlags
}

// parseSig expands the sig notation for one profile and arch.
func parseSig(t *testing.T, s string, k Kernel) (args []wantArg, ret wantArg) {
	t.Helper()
	argPart, retPart, ok := strings.Cut(s, ";")
	if !ok {
		t.Fatalf("bad sig %q", s)
	}
	one := func(tok string) (wantArg, int) {
		n := 1
		if base, rep, ok := strings.Cut(tok, "x"); ok {
			n, _ = strconv.Atoi(rep)
			tok = base
		}
		digits := strings.TrimRight(tok, "sSc")
		size, err := strconv.Atoi(digits)
		if err != nil {
			t.Fatalf("bad sig token %q", tok)
		}
		w := wantArg{size: size}
		for _, c := range tok[len(digits):] {
			switch {
			case c == 'S':
				w.flags |= StructArg
			case c == 's' && k != Kernel61:
				w.flags |= SignedArg
			}
		}
		return w, n
	}
	for _, tok := range strings.Fields(argPart) {
		w, n := one(tok)
		for i := 0; i < n; i++ {
			args = append(args, w)
		}
	}
	if r := strings.TrimSpace(retPart); r != "void" {
		ret, _ = one(r)
	}
	return args, ret
}

func TestDistillRealSignatures(t *testing.T) {
	checked := map[string]bool{}
	for _, s := range sigs {
		for _, key := range strings.Fields(s.kernels) {
			k := Kernel(strings.Split(key, "-")[0])
			t.Run(s.fn+"/"+key, func(t *testing.T) {
				fn, err := FuncByName(loadSpec(t, key), s.fn)
				if err != nil {
					t.Fatal(err)
				}
				m, err := Distill(fn, k)
				if s.err != "" {
					if err == nil || err.Error() != s.err {
						t.Fatalf("got error %v, want %q", err, s.err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				args, ret := parseSig(t, s.model, k)
				var got []wantArg
				for _, a := range m.Args {
					got = append(got, wantArg{a.Size, a.Flags})
				}
				if fmt.Sprint(got) != fmt.Sprint(args) {
					t.Errorf("%s: args (size flags) = %v, want %v", m.Prototype(), got, args)
				}
				if m.RetSize != ret.size || m.RetFlags != ret.flags {
					t.Errorf("%s: ret = %d %v, want %d %v", m.Prototype(), m.RetSize, m.RetFlags, ret.size, ret.flags)
				}
				wantRegs := 0
				for _, a := range args {
					wantRegs += (a.size + 7) / 8
				}
				if m.NrRegs() != wantRegs {
					t.Errorf("NrRegs = %d, want %d", m.NrRegs(), wantRegs)
				}
			})
		}
		checked[s.fn] = true
	}
	if len(checked) < 40 {
		t.Errorf("only %d distinct real signatures checked, want at least 40", len(checked))
	}
}

// TestDistillWholeBTF distils every function of each vmlinux and checks invariants the kernel
// guarantees for an accepted model, and that every rejection is one of the kernel's messages.
func TestDistillWholeBTF(t *testing.T) {
	for key := range btfFiles {
		k := Kernel(strings.Split(key, "-")[0])
		t.Run(key, func(t *testing.T) {
			ok, rejected := 0, 0
			for typ, err := range loadSpec(t, key).All() {
				if err != nil {
					t.Fatal(err)
				}
				fn, isFn := typ.(*btf.Func)
				if !isFn {
					continue
				}
				m, err := Distill(fn, k)
				if err != nil {
					rejected++
					msg := err.Error()
					if !strings.HasPrefix(msg, "The function "+fn.Name+" ") || !strings.HasSuffix(msg, ".") {
						t.Errorf("%s: rejection %q is not in the kernel's words", fn.Name, msg)
					}
					continue
				}
				ok++
				if m.NrArgs() > MaxFuncArgs {
					t.Errorf("%s: %d args accepted", fn.Name, m.NrArgs())
				}
				for i, a := range m.Args {
					if a.Size < 1 || a.Size > MaxStructArgSize || (a.Size > 8 && a.Flags&StructArg == 0) {
						t.Errorf("%s arg%d: size %d flags %v", fn.Name, i, a.Size, a.Flags)
					}
					if k == Kernel61 && a.Flags&SignedArg != 0 {
						t.Errorf("%s arg%d: SIGNED_ARG on 6.1", fn.Name, i)
					}
				}
			}
			if ok < 40000 || rejected == 0 {
				t.Errorf("distilled %d functions and rejected %d: a vmlinux has tens of thousands and some varargs", ok, rejected)
			}
			t.Logf("%s: %d functions modelled, %d rejected", key, ok, rejected)
		})
	}
}
