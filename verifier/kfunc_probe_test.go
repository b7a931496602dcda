package verifier_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/kernel/wire"
	"github.com/trampjit/trampjit/verifier"
)

// The kfunc probe: every kfunc a profile's kernel has, called from a minimal program of each
// program type the model handles, as the kernel judged it (testdata/verifier/
// kfunc-probe/<profile>.json, written by `go test ./verifier -run TestKfuncProbe -update`,
// one boot per profile). The verdict's first message says whether the program type may call
// the kfunc at all (check_kfunc_call: "calling kernel function %s is not allowed"), whether
// it is KF_SLEEPABLE ("program must be sleepable to call sleepable kfunc %s") or, with any
// other message, that the call is allowed and only its zero arguments were refused.

// probeSections are the program types of the probe: one attach target each that every
// profile has (and that sleepable programs may attach to).
var probeSections = []struct{ kind, section string }{
	{"fentry", "fentry/bpf_fentry_test1"},
	{"fentry.s", "fentry.s/bpf_fentry_test1"},
	{"fexit", "fexit/bpf_fentry_test1"},
	{"fmod_ret", "fmod_ret/bpf_modify_return_test"},
	{"lsm", "lsm/file_open"},
	{"lsm.s", "lsm.s/file_open"},
	{"tp_btf", "tp_btf/sched_switch"},
}

// kfuncProbeFile is one profile's kernel answers.
type kfuncProbeFile struct {
	Kernel  string `json:"kernel"`  // "6.12-amd64"
	Release string `json:"release"` // the booted kernel's uname -r and Debian package version
	// Source: how the kfunc names were found ("bpf_kfunc decl tags" or the 6.1 list).
	Source string       `json:"source"`
	Kfuncs []kfuncProbe `json:"kfuncs"`
}

type kfuncProbe struct {
	Name    string                     `json:"name"`
	Results map[string]expectedProgram `json:"results"` // by probeSections kind
	// Task: the same with R1 the current task (bpf_get_current_task_btf, a trusted
	// task_struct), for kfuncs whose first parameter is a struct task_struct pointer: the
	// call then gets past its first argument, to its other flags (an acquire leaks).
	Task map[string]expectedProgram `json:"task,omitempty"`
	// Deref and TaskDeref: the two shapes with a one-byte load through R0 after the call,
	// for kfuncs returning a pointer: KF_RET_NULL shows as "R0 invalid mem access
	// '..._or_null_'".
	Deref     map[string]expectedProgram `json:"deref,omitempty"`
	TaskDeref map[string]expectedProgram `json:"task_deref,omitempty"`
}

// probeShape is how a probe program fills R1 and uses R0.
type probeShape struct{ task, deref bool }

var probeShapes = []probeShape{{}, {task: true}, {deref: true}, {task: true, deref: true}}

// results is the kfunc's map for shape sh (nil if never filled).
func (kp *kfuncProbe) results(sh probeShape) *map[string]expectedProgram {
	switch sh {
	case probeShape{task: true}:
		return &kp.Task
	case probeShape{deref: true}:
		return &kp.Deref
	case probeShape{task: true, deref: true}:
		return &kp.TaskDeref
	}
	return &kp.Results
}

// applies: the shape fits the kfunc's prototype.
func (sh probeShape) applies(env verifier.Env, name string) bool {
	return (!sh.task || taskFirst(env, name)) && (!sh.deref || returnsPointer(env, name))
}

// probeSources61 are kfunc names of 6.1's registration sets (register_btf_kfunc_id_set in
// v6.1: kernel/trace/bpf_trace.c key_sig_kfunc_set, net/bpf/test_run.c
// test_sk_check_kfunc_ids, net/netfilter/nf_conntrack_bpf.c nf_ct_kfunc_set,
// net/ipv4/tcp_{bbr,cubic,dctcp,cong}.c, net/ipv4/bpf_tcp_ca.c): 6.1's BTF carries no
// bpf_kfunc decl tags.
var probeSources61 = []string{
	"bpf_xdp_ct_alloc", "bpf_xdp_ct_lookup", "bpf_skb_ct_alloc", "bpf_skb_ct_lookup",
	"bpf_ct_insert_entry", "bpf_ct_release", "bpf_ct_set_timeout", "bpf_ct_change_timeout",
	"bpf_ct_set_status", "bpf_ct_change_status",
	"tcp_reno_ssthresh", "tcp_reno_cong_avoid", "tcp_reno_undo_cwnd", "tcp_slow_start",
	"tcp_cong_avoid_ai", "cubictcp_init", "cubictcp_recalc_ssthresh", "cubictcp_cong_avoid",
	"cubictcp_state", "cubictcp_cwnd_event", "cubictcp_acked", "bbr_init", "bbr_main",
	"bbr_sndbuf_expand", "bbr_undo_cwnd", "bbr_cwnd_event", "bbr_ssthresh", "bbr_min_tso_segs",
	"bbr_set_state", "dctcp_init", "dctcp_update_alpha", "dctcp_cwnd_event", "dctcp_ssthresh",
	"dctcp_cwnd_undo", "dctcp_state",
}

// probeNames lists the kfuncs to probe on a profile: the FUNCs tagged bpf_kfunc, or where
// the BTF carries no such tags, every FUNC the tables or the 6.1 sources name.
func probeNames(t testing.TB, env verifier.Env) ([]string, string) {
	seen := map[string]bool{}
	for typ, err := range env.BTF.All() {
		if err != nil {
			t.Fatal(err)
		}
		if fn, ok := typ.(*btf.Func); ok && slices.Contains(fn.Tags, "bpf_kfunc") {
			seen[fn.Name] = true
		}
	}
	src := "FUNCs tagged bpf_kfunc in vmlinux BTF and FUNCs btfmodel's table names"
	cands := btfmodel.KfuncNames(env.Kernel)
	if len(seen) == 0 {
		src = "FUNCs named by btfmodel's 6.1 table and 6.1's registration sets (no bpf_kfunc tags in this BTF)"
		cands = append(cands, probeSources61...)
	}
	for _, n := range cands {
		if types, _ := env.BTF.AnyTypesByName(n); slices.ContainsFunc(types, func(t btf.Type) bool { _, ok := t.(*btf.Func); return ok }) {
			seen[n] = true
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, src
}

// probeInsns is the probe program: every argument register zero (with task, R1 the current
// task), the call, return 0.
func probeInsns(name string, sh probeShape) asm.Instructions {
	var insns asm.Instructions
	if sh.task {
		insns = append(insns, asm.FnGetCurrentTaskBtf.Call(), asm.Mov.Reg(asm.R1, asm.R0))
	} else {
		insns = append(insns, asm.Mov.Imm(asm.R1, 0))
	}
	for r := asm.R2; r <= asm.R5; r++ {
		insns = append(insns, asm.Mov.Imm(r, 0))
	}
	call := asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call), Src: asm.PseudoKfuncCall, Constant: -1}
	insns = append(insns, call.WithReference(name))
	if sh.deref {
		insns = append(insns, asm.LoadMem(asm.R1, asm.R0, 0, asm.Byte))
	}
	return append(insns, asm.Mov.Imm(asm.R0, 0), asm.Return())
}

func probeProgram(i, j int, name string, sh probeShape) verifier.Program {
	n := fmt.Sprintf("kp%d_%d", i, j)
	if sh.task {
		n = "t" + n
	}
	if sh.deref {
		n = "d" + n
	}
	return verifier.Program{Name: n, Section: probeSections[j].section, License: "GPL", Instructions: probeInsns(name, sh)}
}

// returnsPointer: the kfunc's prototype returns a pointer.
func returnsPointer(env verifier.Env, name string) bool {
	types, _ := env.BTF.AnyTypesByName(name)
	for _, t := range types {
		if fn, ok := t.(*btf.Func); ok {
			proto, ok := fn.Type.(*btf.FuncProto)
			if !ok {
				return false
			}
			_, ptr := btf.UnderlyingType(proto.Return).(*btf.Pointer)
			return ptr
		}
	}
	return false
}

// taskFirst: the kfunc's first parameter is a struct task_struct pointer.
func taskFirst(env verifier.Env, name string) bool {
	types, _ := env.BTF.AnyTypesByName(name)
	for _, t := range types {
		fn, ok := t.(*btf.Func)
		if !ok {
			continue
		}
		proto, ok := fn.Type.(*btf.FuncProto)
		if !ok || len(proto.Params) == 0 {
			return false
		}
		ptr, ok := btf.UnderlyingType(proto.Params[0].Type).(*btf.Pointer)
		if !ok {
			return false
		}
		st, ok := btf.UnderlyingType(ptr.Target).(*btf.Struct)
		return ok && st.Name == "task_struct"
	}
	return false
}

func probePath(profile string) string {
	// a directory of its own: truthPrograms reads every *.json of truthDir as programs
	return filepath.Join(truthDir, "kfunc-probe", profile+".json")
}

var reRelease = regexp.MustCompile(`(?m)^[0-9.]+-[a-z0-9]+: (\S+ \([^)]*\)), verifying`)

// updateKfuncProbe boots each profile once with every probe program.
func updateKfuncProbe(t *testing.T) {
	for _, profile := range truthProfiles {
		if *updateProfiles != "" && !strings.Contains(","+*updateProfiles+",", ","+profile+",") {
			continue
		}
		env := profileEnv(t, profile)
		names, src := probeNames(t, env)
		var wps []wire.VerifyProgram
		type slot struct {
			i, j int
			sh   probeShape
		}
		var slots []slot
		for i, n := range names {
			for _, sh := range probeShapes {
				if !sh.applies(env, n) {
					continue
				}
				for j := range probeSections {
					p := probeProgram(i, j, n, sh)
					wp, err := kernel.ProgramForSection(p.Name, p.Section)
					if err != nil {
						t.Fatal(err)
					}
					if wp, err = kernel.ProgramFromInstructions(wp, p.Instructions); err != nil {
						t.Fatalf("%s: %s: %v", profile, n, err)
					}
					wps = append(wps, wp)
					slots = append(slots, slot{i, j, sh})
				}
			}
		}
		var progress bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
		res, err := kernel.Verify(ctx, kernel.VerifyOptions{Kernel: string(env.Kernel), Arch: string(env.Arch),
			Programs: wps, Progress: io.MultiWriter(os.Stderr, &progress)})
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", profile, err)
		}
		out := kfuncProbeFile{Kernel: profile, Source: src}
		if m := reRelease.FindStringSubmatch(progress.String()); m != nil {
			out.Release = m[1]
		}
		for _, n := range names {
			out.Kfuncs = append(out.Kfuncs, kfuncProbe{Name: n, Results: map[string]expectedProgram{}})
		}
		for k, sl := range slots {
			r, s, kp := res[k], probeSections[sl.j], &out.Kfuncs[sl.i]
			if r.Stage == "guest" || r.Stage == "agent" || r.Stage == "request" {
				t.Fatalf("%s: %s %s: not verified (%s): %s", profile, kp.Name, s.kind, r.Stage, r.Error)
			}
			e := expectedProgram{Section: s.section, Accepted: r.Accepted, Errno: r.Errno, Error: r.Error}
			if !r.Accepted {
				e.First = firstMessage(r.Log)
			}
			m := kp.results(sl.sh)
			if *m == nil {
				*m = map[string]expectedProgram{}
			}
			(*m)[s.kind] = e
		}
		data, err := json.MarshalIndent(out, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		tmp := probePath(profile) + ".tmp"
		if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, probePath(profile)); err != nil {
			t.Fatal(err)
		}
	}
}

func loadKfuncProbe(t *testing.T, profile string) kfuncProbeFile {
	t.Helper()
	data, err := os.ReadFile(probePath(profile))
	if err != nil {
		t.Fatalf("%v: run go test ./verifier -run TestKfuncProbe -update", err)
	}
	var f kfuncProbeFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// probeVerdict is what a probe's first message says about the call.
type probeVerdict int

const (
	probeAllowed      probeVerdict = iota // accepted, or refused at the arguments or later
	probeNotAllowed                       // no set this program type may use registers it
	probeNeedsSleep                       // KF_SLEEPABLE, in a program that is not sleepable
	probeUndetermined                     // refused before the call (the attach target)
)

func classifyProbe(e expectedProgram, name string) probeVerdict {
	switch {
	case e.Accepted:
		return probeAllowed
	case e.First == "calling kernel function "+name+" is not allowed":
		return probeNotAllowed
	case e.First == "program must be sleepable to call sleepable kfunc "+name,
		e.First == "kernel function "+name+" is sleepable but the program is not": // 6.1
		return probeNeedsSleep
	case strings.HasSuffix(e.Error, " is not sleepable"), // check_attach_btf_id
		strings.HasSuffix(e.Error, " is not modifiable"),
		// add_kfunc_call, before any registration is consulted
		e.First == "metadata kfuncs require device-bound program":
		return probeUndetermined
	}
	return probeAllowed
}

// TestKfuncProbe checks btfmodel's kfunc tables against the kernels' answers (whether each
// program type may call each kfunc, and KF_SLEEPABLE) and the model against the probe
// programs' first and last message lines. With -update it boots the kernels first.
func TestKfuncProbe(t *testing.T) {
	if *update {
		updateKfuncProbe(t)
	}
	for _, profile := range truthProfiles {
		t.Run(profile, func(t *testing.T) {
			f := loadKfuncProbe(t, profile)
			env := profileEnv(t, profile)
			if f.Release == "" || f.Kernel != profile {
				t.Errorf("probe file for %s: kernel %q, release %q: run with -update", profile, f.Kernel, f.Release)
			}
			// The file covers what the probe would load today (a kfunc added to the table
			// or the BTF needs a new capture).
			names, _ := probeNames(t, env)
			if got := len(f.Kfuncs); got != len(names) || !slices.EqualFunc(f.Kfuncs, names, func(kp kfuncProbe, n string) bool { return kp.Name == n }) {
				t.Errorf("probe file for %s has %d kfuncs, the probe would load %d: run with -update", profile, got, len(names))
			}
			// Before fetch_kfunc_meta (6.1) the arguments are checked before KF_SLEEPABLE:
			// only an acceptance or the sleepable message tells.
			sleepFirst := env.Kernel.Has(btfmodel.CapVerifierKfuncMeta)
			tables, model, total, taskModel, taskTotal := 0, 0, 0, 0, 0
			for i, kp := range f.Kfuncs {
				kf, inTable := btfmodel.LookupKfunc(env.Kernel, kp.Name)
				var badKinds []string
				defer func() {
					if len(badKinds) > 0 {
						var v []string
						for _, s := range probeSections {
							v = append(v, fmt.Sprintf("%s=%d", s.kind, classifyProbe(kp.Results[s.kind], kp.Name)))
						}
						t.Logf("SUMMARY %s in-table=%v flags=%b lsmonly=%v kernel: %s", kp.Name, inTable, kf.Flags, kf.LSMOnly, strings.Join(v, " "))
					}
				}()
				for j, s := range probeSections {
					e, ok := kp.Results[s.kind]
					if !ok {
						t.Fatalf("%s: no %s result: run with -update", kp.Name, s.kind)
					}
					total++
					sleepable := strings.Contains(s.kind, ".s")
					allowed := inTable && (!kf.LSMOnly || strings.HasPrefix(s.kind, "lsm"))
					var bad string
					switch v := classifyProbe(e, kp.Name); {
					case v == probeUndetermined:
					case (v == probeNotAllowed) == allowed:
						bad = fmt.Sprintf("table allows=%v, kernel: %q", allowed, e.First)
					case v == probeNeedsSleep && !kf.Has(btfmodel.KFSleepable):
						bad = "kernel says KF_SLEEPABLE, the table does not"
					case v == probeAllowed && !sleepable && kf.Has(btfmodel.KFSleepable) && (sleepFirst || e.Accepted):
						bad = fmt.Sprintf("table says KF_SLEEPABLE, the kernel let a non-sleepable program past it: %q", e.First)
					}
					if bad != "" {
						t.Errorf("table: %s from %s: %s", kp.Name, s.kind, bad)
						badKinds = append(badKinds, s.kind)
					} else {
						tables++
					}
					for _, sh := range probeShapes {
						te, ok := (*kp.results(sh))[s.kind]
						if !ok {
							continue
						}
						if sh != (probeShape{}) {
							taskTotal++
						}
						if bad := probeFlags(kf, sh, te); bad != "" {
							t.Errorf("table: %s%s from %s: %s", kp.Name, sh, s.kind, bad)
						}
						if checkModel(t, profile, env, probeProgram(i, j, kp.Name, sh), kp.Name+sh.String()+"@"+s.kind, te) {
							if sh == (probeShape{}) {
								model++
							} else {
								taskModel++
							}
						}
					}
				}
			}
			t.Logf("%s (%s): %d kfuncs; tables agree on %d/%d, the model on %d/%d probe programs and on %d/%d of the task and deref shapes",
				profile, f.Release, len(f.Kfuncs), tables, total, model, total, taskModel, taskTotal)
		})
	}
}

// String names the shape in test names: "", "(task)", "(deref)", "(task,deref)".
func (sh probeShape) String() string {
	var p []string
	if sh.task {
		p = append(p, "task")
	}
	if sh.deref {
		p = append(p, "deref")
	}
	if len(p) == 0 {
		return ""
	}
	return "(" + strings.Join(p, ",") + ")"
}

var reOrNull = regexp.MustCompile(`^R0 invalid mem access '.*or_null`)

// probeFlags checks the flags a probe program shows: a leak at exit is KF_ACQUIRE's mark
// (nothing else takes a reference), a refused load through R0 KF_RET_NULL's.
func probeFlags(kf btfmodel.Kfunc, sh probeShape, e expectedProgram) string {
	leak := strings.HasPrefix(e.First, "Unreleased reference")
	if leak != kf.Has(btfmodel.KFAcquire) && (leak || e.Accepted) {
		return fmt.Sprintf("KF_ACQUIRE=%v, kernel: accepted=%v %q", kf.Has(btfmodel.KFAcquire), e.Accepted, e.First)
	}
	if !sh.deref {
		return ""
	}
	orNull := reOrNull.MatchString(e.First)
	if orNull != kf.Has(btfmodel.KFRetNull) && (orNull || e.Accepted || leak) {
		return fmt.Sprintf("KF_RET_NULL=%v, kernel: accepted=%v %q", kf.Has(btfmodel.KFRetNull), e.Accepted, e.First)
	}
	return ""
}

// checkModel compares the model's verdict on a probe program with the kernel's, reports a
// difference unless kfuncProbeGaps names it, and says whether they agree.
func checkModel(t *testing.T, profile string, env verifier.Env, p verifier.Program, name string, e expectedProgram) bool {
	t.Helper()
	p.Name = name
	d := truthDiff(e, verifier.Check(p, env))
	if d == "" {
		return true
	}
	if why, known := kfuncProbeGaps[profile+"/"+name]; known {
		t.Logf("%s: known gap (%s): %s", name, why, d)
	} else if why, known := kfuncProbeGaps[name]; known {
		t.Logf("%s: known gap (%s): %s", name, why, d)
	} else {
		t.Errorf("model: %s: %s", name, d)
	}
	return false
}

// kfuncProbeGaps are probe programs ("<profile>/<kfunc>@<kind>" or "<kfunc>@<kind>", with
// the shape after the kfunc, e.g. "(task,deref)") whose
// messages the model does not reproduce, each explained in KNOWN_GAPS.md.
var kfuncProbeGaps = map[string]string{}
