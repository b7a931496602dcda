package btfmodel

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// The attach rules against the kernel corpus (testdata/kernel/*/cases.jsonl): every case the
// real kernels answered, and the rules no capture reaches, from the kernel sources.

// corpusCase is one captured request and the kernel's answer.
type corpusCase struct {
	ID      string `json:"id"`
	Request struct {
		Kernel string `json:"kernel"`
		Arch   string `json:"arch"`
		Func   string `json:"func"`
		Progs  []struct {
			Kind      string `json:"kind"`
			Sleepable bool   `json:"sleepable"`
			FuncIP    bool   `json:"func_ip"`
		} `json:"progs"`
	} `json:"request"`
	Image string `json:"image"`
	Error string `json:"error"`
	Errno string `json:"errno"`
	Stage string `json:"stage"`
	Log   string `json:"log"`
}

var corpusSpecs = map[string]*btf.Spec{}

// corpusSpec is the BTF of the kernel that answered the corpus (not testdata/btf).
func corpusSpec(t *testing.T, key string) *btf.Spec {
	t.Helper()
	specMu.Lock()
	defer specMu.Unlock()
	if s, ok := corpusSpecs[key]; ok {
		return s
	}
	s, err := LoadFile(filepath.Join("../testdata/kernel", key, "vmlinux.btf.xz"), nil)
	if err != nil {
		t.Fatal(err)
	}
	corpusSpecs[key] = s
	return s
}

func readCorpus(t *testing.T, key string) []corpusCase {
	t.Helper()
	f, err := os.Open(filepath.Join("../testdata/kernel", key, "cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var c corpusCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// modelAnswer is what CheckAttach says about a request, in the corpus's terms: the tool
// loads every program, then attaches them in order, and reports the first failure.
func modelAnswer(t *testing.T, key string, c corpusCase) (prog int, v Verdict) {
	spec := corpusSpec(t, key)
	fn, err := FuncByName(spec, c.Request.Func)
	if err != nil {
		t.Fatal(err)
	}
	k, arch := Kernel(c.Request.Kernel), Arch(c.Request.Arch)
	m, derr := Distill(fn, k)
	id, _ := spec.TypeID(fn)
	var attach Verdict
	attachProg := 0
	for i, p := range c.Request.Progs {
		at, err := ParseAttachType(p.Kind)
		if err != nil {
			t.Fatal(err)
		}
		v := CheckAttach(c.Request.Func, m, derr, at, AttachEnv{Kernel: k, Arch: arch, Sleepable: p.Sleepable, BTFID: uint32(id), FuncIP: p.FuncIP})
		if !v.OK && v.Stage == StageLoad {
			return i + 1, v
		}
		if !v.OK && attachProg == 0 {
			attach, attachProg = v, i+1
		}
	}
	if attachProg != 0 {
		return attachProg, attach
	}
	return 0, Verdict{OK: true}
}

// TestCorpusAttachVerdicts: for every kernel-function case of the corpora with kernel
// functions, the model refuses exactly what the kernel refused, at the same program, stage
// and errno, with the kernel's log line when the kernel logged one. EBUSY (the function is
// not ftrace-managed) and E2BIG (the link count) are not attach rules of the function.
func TestCorpusAttachVerdicts(t *testing.T) {
	for _, key := range []string{"6.1-amd64", "6.12-amd64", "6.12-arm64", "7.2-amd64", "7.2-arm64"} {
		checked := 0
		for _, c := range readCorpus(t, key) {
			if c.Request.Func == "" || c.Errno == "EBUSY" || c.Errno == "E2BIG" {
				continue
			}
			if key == "7.2-arm64" && c.ID == "bpf_trace_run11-fentry" {
				// open: ENOTSUPP at attach, most likely arm64's answer for a function ftrace
				// does not manage (x86: EBUSY), not an attach rule of the function.
				continue
			}
			checked++
			prog, v := modelAnswer(t, key, c)
			if c.Errno == "" {
				if !v.OK {
					t.Errorf("%s/%s: kernel accepted; model refuses program %d: %s %s: %s", key, c.ID, prog, v.Stage, v.Errno, v.Msg)
				}
				continue
			}
			want := fmt.Sprintf("program %d (%s)", prog, c.Request.Progs[max(prog-1, 0)].Kind)
			switch {
			case v.OK:
				t.Errorf("%s/%s: kernel refused (%s); model accepts", key, c.ID, c.Error)
			case string(v.Stage) != c.Stage || v.Errno != c.Errno || !strings.Contains(c.Error, want):
				t.Errorf("%s/%s: kernel %q (%s %s); model %s %s at %s", key, c.ID, c.Error, c.Stage, c.Errno, v.Stage, v.Errno, want)
			case v.KernelMsg && firstLine(c.Log) != v.Msg && !strings.Contains("\n"+c.Log, "\n"+v.Msg+"\n"): // a helper refusal follows the trace
				t.Errorf("%s/%s: kernel logged %q; model %q", key, c.ID, firstLine(c.Log), v.Msg)
			case !v.KernelMsg && firstLine(c.Log) != "" && c.Stage == "load":
				t.Errorf("%s/%s: kernel logged %q; model has no kernel message (%s)", key, c.ID, firstLine(c.Log), v.Msg)
			}
		}
		if checked < 150 {
			t.Errorf("%s: only %d cases checked", key, checked)
		}
	}
}

func firstLine(log string) string {
	line, _, _ := strings.Cut(log, "\n")
	if strings.HasPrefix(line, "processed ") {
		return ""
	}
	return line
}

// ruleCase is a rule no capture reaches, with the kernel source that decides it.
type ruleCase struct {
	key, fn string
	at      AttachType
	errInj  []string
	want    string // "ok" or "ERRNO: message prefix"
}

var ruleCases = []ruleCase{
	// arch/x86/net/bpf_jit_comp.c arch_prepare_bpf_trampoline (6.1): each STRUCT_ARG adds
	// (arg_size + 7) / 8 - 1 registers to nr_args, and nr_args > 6 is -ENOTSUPP. Five
	// arguments, two of them sockptr_t (16 bytes): seven registers.
	{"6.1-amd64", "do_tcp_getsockopt", Fentry, nil, "ENOTSUPP: the 6.1 x86_64 trampoline takes at most 6 argument registers; do_tcp_getsockopt needs 7"},
	{"6.1-amd64", "do_tcp_getsockopt", Fexit, nil, "ENOTSUPP: the 6.1 x86_64"},
	{"6.1-amd64", "udp_lib_setsockopt", Fentry, nil, "ENOTSUPP: the 6.1 x86_64"}, // six arguments, one sockptr_t
	// 6.12 copies what does not fit in registers to the stack, up to MAX_BPF_FUNC_ARGS.
	{"6.12-amd64", "do_tcp_getsockopt", Fentry, nil, "ok"},
	// arch/arm64/net/bpf_jit_comp.c arch_prepare_bpf_trampoline (6.12): nregs > 8 is
	// -ENOTSUPP. Nine slots (the corpus has __bpf_sk_lookup refused; these have struct args
	// or nine scalars on other functions).
	{"6.12-arm64", "__blk_add_trace", Fentry, nil, "ENOTSUPP: the 6.12 arm64 trampoline takes at most 8 argument registers; __blk_add_trace needs 9"},
	{"6.12-arm64", "ZSTD_buildFSETable", Fexit, nil, "ENOTSUPP: the 6.12 arm64"},
	// kernel/bpf/verifier.c check_attach_btf_id: bpf_check_attach_target runs first (its
	// fmod_ret rule, check_attach_modify_return, passes for an error-injectable function),
	// then noreturn_deny refuses fexit and fmod_ret on 6.12. 6.1 has no noreturn_deny.
	{"6.12-amd64", "do_group_exit", ModRet, []string{"do_group_exit"}, "EINVAL: Attaching fexit/fmod_ret to __noreturn functions is rejected."},
	{"6.12-arm64", "do_exit", ModRet, []string{"do_exit"}, "EINVAL: Attaching fexit/fmod_ret to __noreturn functions is rejected."},
	{"6.12-amd64", "do_group_exit", Fentry, []string{"do_group_exit"}, "ok"},
	{"6.1-amd64", "do_group_exit", ModRet, []string{"do_group_exit"}, "ok"},
	// Without the list the fmod_ret rule refuses first (captured: do_group_exit-fmod_ret).
	{"6.12-amd64", "do_group_exit", ModRet, nil, "EINVAL: do_group_exit() is not modifiable"},
	// An error-injectable function takes fmod_ret and sleepable programs (check_attach_sleepable).
	{"6.12-amd64", "tcp_v4_connect", ModRet, []string{"tcp_v4_connect"}, "ok"},
	// 7.2, built without error injection: a function with the arch's syscall prefix passes
	// the fmod_ret rule (has_arch_syscall_prefix), then noreturn_deny refuses it, with the
	// message that names the function and fsession; fsession is refused there too.
	{"7.2-amd64", "__x64_sys_exit", ModRet, nil, "EINVAL: Attaching fexit/fsession/fmod_ret to __noreturn function '__x64_sys_exit' is rejected."},
	{"7.2-amd64", "__x64_sys_exit_group", Fsession, nil, "EINVAL: Attaching fexit/fsession/fmod_ret to __noreturn function '__x64_sys_exit_group' is rejected."},
	{"7.2-amd64", "__x64_sys_exit", Fentry, nil, "ok"},
	{"7.2-arm64", "__arm64_sys_setdomainname", ModRet, nil, "ok"},
	{"6.12-arm64", "__arm64_sys_setdomainname", ModRet, nil, "EINVAL: __arm64_sys_setdomainname() is not modifiable"},
	// Only the prefix of the kernel's own arch counts: the ia32 wrappers of x86_64 do not,
	// nor does __do_sys_*, the syscall's body.
	{"7.2-amd64", "__ia32_sys_getpgid", ModRet, nil, "EINVAL: __ia32_sys_getpgid() is not modifiable"},
	{"7.2-amd64", "__do_sys_brk", ModRet, nil, "EINVAL: __do_sys_brk() is not modifiable"},
	// The deny list logs a line on 7.2, for every tracing attach type, also the ones
	// CapBTFIDDenyRCULock added.
	{"7.2-amd64", "__rcu_read_lock", Fsession, nil, "EINVAL: Attaching tracing programs to function '__rcu_read_lock' is rejected."},
	{"7.2-arm64", "migrate_enable", ModRet, nil, "EINVAL: migrate_enable() is not modifiable"}, // the fmod_ret rule comes first
}

func TestAttachRulesFromSource(t *testing.T) {
	for _, c := range ruleCases {
		t.Run(c.key+"/"+c.fn+"/"+string(c.at), func(t *testing.T) {
			parts := strings.Split(c.key, "-")
			spec := corpusSpec(t, c.key)
			fn, err := FuncByName(spec, c.fn)
			if err != nil {
				t.Fatal(err)
			}
			k, arch := Kernel(parts[0]), Arch(parts[1])
			m, derr := Distill(fn, k)
			env := AttachEnv{Kernel: k, Arch: arch}
			if c.errInj != nil {
				env.ErrorInjection = map[string]bool{}
				for _, n := range c.errInj {
					env.ErrorInjection[n] = true
				}
			}
			v := CheckAttach(c.fn, m, derr, c.at, env)
			got := "ok"
			if !v.OK {
				got = v.Errno + ": " + v.Msg
			}
			if !strings.HasPrefix(got, c.want) {
				t.Errorf("got %q, want %q...", got, c.want)
			}
		})
	}
}
