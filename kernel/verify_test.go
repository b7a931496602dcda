package kernel

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/asm"

	"github.com/trampjit/trampjit/kernel/wire"
)

// verifyCase is a program and what each kernel said about it (observed, then pinned).
type verifyCase struct {
	prog     wire.VerifyProgram
	insns    asm.Instructions
	accepted map[string]bool   // by kernel-arch; "" is the default
	errno    map[string]string // when rejected
	reason   map[string]string // the reason line, a regexp (instruction and BTF ids vary)
	logHas   string            // a line the log must hold besides the reason
}

func (c verifyCase) want(m map[string]string, k string) string {
	if v, ok := m[k]; ok {
		return v
	}
	return m[""]
}

func verifyCases(t *testing.T) []verifyCase {
	ret := func(v int32) asm.Instructions { return asm.Instructions{asm.Mov.Imm(asm.R0, v), asm.Return()} }
	prog := func(name, at, target string) wire.VerifyProgram {
		return wire.VerifyProgram{Name: name, AttachType: at, AttachTo: target}
	}
	all := func(v bool) map[string]bool { return map[string]bool{"": v} }
	one := func(s string) map[string]string { return map[string]string{"": s} }
	return []verifyCase{
		{prog: prog("fentry_ctx0", "fentry", "bpf_fentry_test1"),
			insns:    append(asm.Instructions{asm.LoadMem(asm.R2, asm.R1, 0, asm.DWord)}, ret(0)...),
			accepted: all(true)},
		{prog: prog("fentry_past_args", "fentry", "bpf_fentry_test2"),
			insns:    append(asm.Instructions{asm.LoadMem(asm.R2, asm.R1, 16, asm.DWord)}, ret(0)...),
			accepted: all(false), errno: one("EACCES"),
			reason: one(`^invalid bpf_context access off=16 size=8$`),
			logHas: "func 'bpf_fentry_test2' doesn't have 3-th argument"},
		{prog: prog("fexit_ret1", "fexit", "bpf_fentry_test1"), insns: ret(1),
			accepted: all(false), errno: one("EINVAL"),
			reason: map[string]string{"": `^At program exit the register R0 has smin=1 smax=1 should have been in \[0, 0\]$`,
				"6.1-amd64": `^At program exit the register R0 has value \(0x1; 0x0\) should have been in \(0x0; 0x0\)$`}},
		{prog: prog("fmod_ret_tcp_v4_connect", "fmod_ret", "tcp_v4_connect"), insns: ret(0),
			accepted: all(false), errno: one("EINVAL"), reason: one(`^tcp_v4_connect\(\) is not modifiable$`)},
		{prog: wire.VerifyProgram{Name: "lsm_disabled_hook", Type: "lsm", AttachType: "lsm_mac", AttachTo: "vm_enough_memory"}, insns: ret(0),
			accepted: map[string]bool{"": false, "6.1-amd64": true}, errno: one("EINVAL"),
			reason: one(`^attach_btf_id \d+ points to disabled hook bpf_lsm_vm_enough_memory$`)},
		// 6.12 lets sleepable programs attach to bpf_fentry_test1; 6.1 does not.
		{prog: wire.VerifyProgram{Name: "sleepable_fentry", AttachType: "fentry", AttachTo: "bpf_fentry_test1", Sleepable: true}, insns: ret(0),
			accepted: map[string]bool{"": true, "6.1-amd64": false}, errno: one("EINVAL"), reason: one(`^bpf_fentry_test1 is not sleepable$`)},
		{prog: prog("no_such_function", "fentry", "trampjit_no_such_function"), insns: ret(0),
			accepted: all(false), errno: one("ESRCH"),
			reason: one(`^failed to find kernel BTF type ID of 'trampjit_no_such_function': -ESRCH$`)},
		{prog: wire.VerifyProgram{Name: "map_lookup", AttachType: "fentry", AttachTo: "bpf_fentry_test1",
			Maps: []wire.VerifyMap{{Name: "counts", Type: "hash", KeySize: 4, ValueSize: 8, MaxEntries: 16}}},
			insns: asm.Instructions{
				asm.StoreImm(asm.R10, -4, 0, asm.Word),
				asm.LoadMapPtr(asm.R1, 0),
				asm.Mov.Reg(asm.R2, asm.R10),
				asm.Add.Imm(asm.R2, -4),
				asm.FnMapLookupElem.Call(),
				asm.Mov.Imm(asm.R0, 0),
				asm.Return(),
			},
			accepted: all(true)},
		// struct_ops: attach_btf_id the ops struct, expected_attach_type the member's index
		// (get_info is 9 on 6.1 and 6.12, 10 on 7.2), both resolved in the guest.
		{prog: wire.VerifyProgram{Name: "so_ssthresh", Type: "struct_ops", AttachType: "struct_ops", AttachTo: "tcp_congestion_ops:ssthresh"},
			insns: ret(2), accepted: all(true)},
		{prog: wire.VerifyProgram{Name: "so_get_info", Type: "struct_ops", AttachType: "struct_ops", AttachTo: "tcp_congestion_ops:get_info"},
			insns: ret(0), accepted: all(false), errno: one("ENOTSUPP"),
			reason: one(`^attach to unsupported member get_info of struct tcp_congestion_ops$`)},
		{prog: wire.VerifyProgram{Name: "so_no_member", Type: "struct_ops", AttachType: "struct_ops", AttachTo: "tcp_congestion_ops:trampjit_none"},
			insns: ret(0), accepted: all(false), errno: one("ENOTSUP"),
			reason: one(`^struct_ops init_kern tcp_congestion_ops: Cannot find member trampjit_none in kernel BTF$`)},
	}
}

// elfExpect: the committed object's programs.
var elfExpect = map[string]bool{"count_test1": true, "exit_ret1": false, "lsm_file_open": true, "core_family": true}

// TestGuestVerify loads programs through the real verifier of each kernel in one boot per
// kernel, and checks verdicts, errnos and that the reason is the log's last line.
func TestGuestVerify(t *testing.T) {
	if testing.Short() {
		t.Skip("boots qemu guests; skipped with -short")
	}
	cases := verifyCases(t)
	var progs []wire.VerifyProgram
	for _, c := range cases {
		p, err := ProgramFromInstructions(c.prog, c.insns)
		if err != nil {
			t.Fatalf("%s: %v", c.prog.Name, err)
		}
		progs = append(progs, p)
	}
	elf, err := ProgramsFromELF(progsObject, ELFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	progs = append(progs, elf...)
	t0 := time.Now()
	for _, k := range []struct{ kernel, arch, qemu string }{
		{"6.12", "amd64", "qemu-system-x86_64"}, {"6.1", "amd64", "qemu-system-x86_64"}, {"6.12", "arm64", "qemu-system-aarch64"},
	} {
		tag := k.kernel + "-" + k.arch
		t.Run(tag, func(t *testing.T) {
			if _, err := exec.LookPath(k.qemu); err != nil {
				t.Skipf("%s is not installed; cannot boot the %s guest", k.qemu, tag)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			// CO-RE relocations are applied against each kernel's own BTF.
			core, err := ProgramsFromELF(coreObject, ELFOptions{KernelBTF: corpusBTF(t, tag)})
			if err != nil {
				t.Fatal(err)
			}
			t1 := time.Now()
			res, err := Verify(ctx, VerifyOptions{Kernel: k.kernel, Arch: k.arch, Programs: append(slices.Clone(progs), core...), Progress: testWriter{t}})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d programs verified in %v", tag, len(res), time.Since(t1).Round(100*time.Millisecond))
			for i, r := range res {
				t.Logf("%s: %-24s accepted=%-5v errno=%-6s stage=%-6s error=%q", tag, r.Name, r.Accepted, r.Errno, r.Stage, r.Error)
				if testing.Verbose() && !r.Accepted && len(r.Log) > 0 {
					t.Logf("%s: %s: log:\n\t%s", tag, r.Name, strings.Join(r.Log, "\n\t"))
				}
				if i < len(cases) {
					checkVerify(t, tag, cases[i], r)
				} else if want := elfExpect[r.Name]; r.Accepted != want {
					t.Errorf("%s: accepted=%v, want %v: %s\n%s", r.Name, r.Accepted, want, r.Error, strings.Join(r.Log, "\n"))
				}
			}
		})
	}
	t.Logf("all kernels: %v", time.Since(t0).Round(100*time.Millisecond))
}

func checkVerify(t *testing.T, tag string, c verifyCase, r VerifyResult) {
	t.Helper()
	want, ok := c.accepted[tag]
	if !ok {
		want = c.accepted[""]
	}
	if r.Name != c.prog.Name || r.Accepted != want {
		t.Errorf("%s: accepted=%v, want %v: %s\n%s", c.prog.Name, r.Accepted, want, r.Error, strings.Join(r.Log, "\n"))
		return
	}
	if r.Accepted {
		if r.Error != "" || r.Errno != "" {
			t.Errorf("%s: accepted with error %q %s", r.Name, r.Error, r.Errno)
		}
		return
	}
	if e := c.want(c.errno, tag); r.Errno != e {
		t.Errorf("%s: errno %s, want %s", r.Name, r.Errno, e)
	}
	if re := c.want(c.reason, tag); !regexp.MustCompile(re).MatchString(r.Error) {
		t.Errorf("%s: reason %q, want /%s/\n%s", r.Name, r.Error, re, strings.Join(r.Log, "\n"))
	}
	// The reason is the log's last line, once the verifier's statistics are set aside.
	if r.Stage == "load" {
		if len(r.Log) == 0 || wire.ReasonLine(r.Log) != r.Error || !isLastBeforeStats(r.Log, r.Error) {
			t.Errorf("%s: reason %q is not the log's last line:\n%s", r.Name, r.Error, strings.Join(r.Log, "\n"))
		}
	}
	if c.logHas != "" && !containsLine(r.Log, c.logHas) {
		t.Errorf("%s: log lacks %q:\n%s", r.Name, c.logHas, strings.Join(r.Log, "\n"))
	}
}

func isLastBeforeStats(log []string, reason string) bool {
	for i := len(log) - 1; i >= 0; i-- {
		if strings.HasPrefix(log[i], "processed ") {
			continue
		}
		return log[i] == reason
	}
	return false
}

func containsLine(log []string, s string) bool {
	for _, l := range log {
		if l == s {
			return true
		}
	}
	return false
}

// TestGuestVerifyLogLevel2 checks that level-2 logs longer than the first buffer come
// back whole, and that a log past the limit comes back truncated with the right verdict.
func TestGuestVerifyLogLevel2(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a qemu guest; skipped with -short")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("qemu-system-x86_64 is not installed; cannot boot the 6.12-amd64 guest")
	}
	const n = 8000 // about 45 bytes of log each at level 2: more than the first 256 KiB
	long := func(name string, ret int32) wire.VerifyProgram {
		insns := asm.Instructions{asm.Mov.Imm(asm.R0, 0)}
		for i := 0; i < n; i++ {
			insns = append(insns, asm.Add.Imm(asm.R0, 0))
		}
		insns = append(insns, asm.Mov.Imm(asm.R0, ret), asm.Return())
		p, err := ProgramFromInstructions(wire.VerifyProgram{Name: name, AttachType: "fexit", AttachTo: "bpf_fentry_test1"}, insns)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	progs := []wire.VerifyProgram{long("long_ok", 0), long("long_ret1", 1)}
	const reason = "At program exit the register R0 has smin=1 smax=1 should have been in [0, 0]"
	for _, run := range []struct {
		kernel string
		limit  uint32
	}{{"6.12", 0}, {"6.12", 64 << 10}, {"6.1", 64 << 10}} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		res, err := Verify(ctx, VerifyOptions{Kernel: run.kernel, Arch: "amd64", Programs: progs, LogLevel: 2, LogLimit: run.limit, Progress: testWriter{t}})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		// 6.4+ keeps the end of a log that outgrows its buffer; 6.1 keeps the start.
		tail := run.kernel != "6.1" || run.limit == 0
		for i, r := range res {
			size := 0
			for _, l := range r.Log {
				size += len(l) + 1
			}
			t.Logf("%s-amd64, limit %d: %s: accepted=%v errno=%s truncated=%v error=%q, %d log lines (%d bytes), first %q, last %q",
				run.kernel, run.limit, r.Name, r.Accepted, r.Errno, r.Truncated, r.Error, len(r.Log), size, first(r.Log), last(r.Log))
			if r.Accepted != (i == 0) || r.Truncated != (run.limit != 0) {
				t.Errorf("%s: accepted=%v truncated=%v", r.Name, r.Accepted, r.Truncated)
			}
			if i == 1 && (r.Errno != "EINVAL" || (r.Error == reason) != (run.kernel == "6.12") || (r.Error == "") != !tail) {
				t.Errorf("%s: %s %q, want EINVAL and, when the log kept its end, %q", r.Name, r.Errno, r.Error, reason)
			}
			if got := strings.HasPrefix(last(r.Log), fmt.Sprintf("processed %d insns", n+3)); got != tail {
				t.Errorf("%s: last line %q", r.Name, last(r.Log))
			}
			if run.limit == 0 && (len(r.Log) < n || first(r.Log) != "func#0 @0") {
				t.Errorf("%s: %d lines from %q: not the whole log", r.Name, len(r.Log), first(r.Log))
			}
			if run.limit != 0 && size > int(run.limit) {
				t.Errorf("%s: %d bytes of log past the %d-byte limit", r.Name, size, run.limit)
			}
		}
	}
}

func first(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return l[0]
}

func last(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return l[len(l)-1]
}

// TestVerifyHost runs the same loader on the running kernel; where the kernel does not
// permit BPF (EPERM), the test reports that and skips.
func TestVerifyHost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the agent on the host; skipped with -short")
	}
	c := verifyCases(t)[0]
	p, err := ProgramFromInstructions(c.prog, c.insns)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := VerifyHost(ctx, VerifyOptions{Programs: []wire.VerifyProgram{p}, Progress: testWriter{t}})
	if errors.Is(err, ErrHostNotPermitted) {
		t.Skipf("host verify not possible here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("host: %s accepted=%v errno=%s error=%q", res[0].Name, res[0].Accepted, res[0].Errno, res[0].Error)
}
