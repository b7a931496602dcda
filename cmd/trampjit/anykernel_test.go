package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/kernel/vm"
)

// A kernel no profile was built from, captured through --vmlinuz and compared with the
// nearest lower model and with that profile's corpus: the end-to-end test. The
// expected verdicts are what the real kernels did (captured by this test, one boot each);
// where a kernel differs from the profile, the reason is in the kernel's source.

// anyCase is one catalogue case and how it must compare.
type anyCase struct {
	id string
	// model is `diff --corpus` against the model of the profile: kernel.Match (same bytes,
	// or refused for the same reason), kernel.Differ, ...
	model string
	// kernel is `diff DIR PROFILE_CORPUS`: same shape at other addresses, identical
	// refusals (refused-by-both), or a named difference.
	kernel kernel.CaseVerdict
	// modelNote is in diff --corpus's note (what the model said of a refusal).
	modelNote string
	// changed are the sections that differ (kernel.Differs), why the reason.
	changed []string
	why     string
	// build: the verdict belongs to the build the expectations were captured from
	// (anyKernel.release), not to the series: a later build may inline other functions.
	build bool
}

// anyKernel is one Debian kernel of a suite's backports.
type anyKernel struct {
	name, suite, pkg string
	profile          string // the nearest lower profile, the model it is compared with
	corpus           string // that profile's corpus
	// release is the build the expectations come from; the suite keeps only its newest
	// build, so a later one is tested on the cases that do not depend on the build.
	release string
	// flaky says why the kernel runs only with -anykernel all (make anykernel).
	flaky string
	cases []anyCase
	// tables are struct_ops tables captured whole (--only struct_ops-<ops>-*): every
	// function-pointer member of the kernel's own BTF, listed in the profile's catalogue
	// or not, must be byte-identical to the model or refused for the model's reason.
	tables []anyTable
}

// anyTable is one whole struct_ops table and what the kernel's BTF has that the profile's has not.
type anyTable struct {
	ops string
	// members the kernel has that the profile's catalogue does not, and the reverse
	added, gone []string
	// refused are the members the kernel refuses, with its words
	refused map[string]string
}

// The kinds the catalogue covers, a case each: fentry+fexit, fmod_ret, LSM (int and void),
// cookies, sleepable, func-ip with many arguments (stack slots), a struct by value, a BPF
// program as the target, the link limit, and refusals at load and attach.
var anyKernels = []anyKernel{
	{name: "6.12-bookworm-backports", suite: "bookworm-backports", pkg: "linux-image-6.12.*-cloud-amd64",
		profile: "6.12", corpus: "../../testdata/kernel/6.12-amd64", release: "6.12.95+deb12-cloud-amd64",
		// Debian 12's gcc-12 build panics on its own under qemu 7.2's TCG in about 4 boots of
		// 10, outside any BPF code (saved EFLAGS are garbage, as if the emulated flags were);
		// trixie's 6.12.117 never does.
		flaky: "panics on its own under qemu 7.2's TCG in about 4 boots of 10",
		cases: []anyCase{
			{id: "bpf_fentry_test1-fentry-fexit", model: kernel.Match, kernel: kernel.SameShape},
			{id: "bpf_modify_return_test-fentry-fmod_ret-fexit", model: kernel.Match, kernel: kernel.SameShape},
			{id: "bpf_fentry_test2-cookies-64bit", model: kernel.Match, kernel: kernel.SameShape},
			{id: "bpf_fentry_test1-sleepable-fentry-fexit", model: kernel.Match, kernel: kernel.SameShape},
			{id: "__audit_tk_injoffset-fentry-fexit", model: kernel.Match, kernel: kernel.SameShape},
			{id: "ZSTD_compress_usingCDict_advanced-fentry-fexit-func-ip", model: kernel.Match, kernel: kernel.SameShape},
			{id: "tcp_v4_connect-fentry2-fexit2-func-ip", model: kernel.Match, kernel: kernel.SameShape},
			{id: "bpf_lsm_file_open-lsm", model: kernel.Match, kernel: kernel.SameShape},
			{id: "bpf_lsm_task_free-lsm-void", model: kernel.Match, kernel: kernel.SameShape},
			{id: "bpf-tj_args2-fentry-fexit", model: kernel.Match, kernel: kernel.SameShape},
			{id: "bpf_fentry_test2-links-38-mixed", model: kernel.Match, kernel: kernel.SameShape},
			{id: "bpf_fentry_test2-links-39-e2big", model: kernel.Match, kernel: kernel.RefusedByBoth},
			{id: "do_exit-fexit", model: kernel.Match, kernel: kernel.RefusedByBoth},
			{id: "net_dim-fentry", model: kernel.Match, kernel: kernel.RefusedByBoth},
			// Both refuse, for other reasons: 6.12.117 has rtnl_fill_ifinfo in BTF with 14
			// arguments (btf_distill_func_proto: "has 14 arguments. Too many."), 6.12.95's
			// BTF has no FUNC for it at all (net/core/rtnetlink.c, static; Debian 12's gcc 12
			// build, where pahole leaves out a function whose compiled signature is not its
			// declared one), so the loader finds no target. The model, given 6.12.95's BTF,
			// refuses it as not in BTF: the same reason.
			{id: "rtnl_fill_ifinfo-fexit", model: kernel.Match, modelNote: "no BTF FUNC for the target", build: true,
				kernel: kernel.RefusedDifferently, why: "rtnl_fill_ifinfo has no BTF FUNC in 6.12.95, 14 arguments in 6.12.117"},
		}},
	{name: "7.3-trixie-backports", suite: "trixie-backports", pkg: "linux-image-7.3.*-cloud-amd64",
		profile: "7.2", corpus: "../../testdata/kernel/7.2-amd64", release: "7.3.4+deb13-cloud-amd64",
		cases: []anyCase{
			{id: "bpf_fentry_test1-fentry-fexit", model: kernel.Match, kernel: kernel.SameShape},
			{id: "bpf_modify_return_test-fentry-fmod_ret-fexit", model: kernel.Match, kernel: kernel.SameShape},
			{id: "bpf_fentry_test2-cookies-64bit", model: kernel.Match, kernel: kernel.SameShape},
			{id: "bpf_fentry_test1-sleepable-fentry-fexit", model: kernel.Match, kernel: kernel.SameShape},
			{id: "__audit_tk_injoffset-fentry-fexit", model: kernel.Match, kernel: kernel.SameShape},
			{id: "__vring_new_virtqueue_split-fentry-fexit-func-ip", model: kernel.Match, kernel: kernel.SameShape},
			{id: "bpf_fentry_test2-fsession-cookie", model: kernel.Match, kernel: kernel.SameShape},
			{id: "bpf_lsm_file_open-lsm", model: kernel.Match, kernel: kernel.SameShape},
			{id: "bpf_lsm_task_free-lsm-void", model: kernel.Match, kernel: kernel.SameShape},
			{id: "bpf-tj_args2-fentry-fexit", model: kernel.Match, kernel: kernel.SameShape},
			{id: "bpf_fentry_test2-links-36-mixed", model: kernel.Match, kernel: kernel.SameShape},
			{id: "bpf_fentry_test2-links-37-fentry", model: kernel.Match, kernel: kernel.RefusedByBoth},
			{id: "do_exit-fexit", model: kernel.Match, kernel: kernel.RefusedByBoth},
			{id: "net_dim-fentry", model: kernel.Match, kernel: kernel.SameShape},
			// 7.3.4's vmlinux BTF has no FUNC __bpf_sk_lookup (nor bpf_sk_lookup): the static
			// helper of the bpf_sk_lookup_tcp/udp helpers in net/core/filter.c is inlined in
			// this build, while its sibling __bpf_skc_lookup keeps a BTF FUNC. With no BTF id
			// there is nothing to attach to: the agent's loader finds no target ("fentry
			// __bpf_sk_lookup not supported") where 7.2.13 built a 325-byte trampoline. The
			// model, given 7.3's BTF, refuses it for the same reason ("not found in BTF").
			{id: "__bpf_sk_lookup-fentry-fexit-func-ip", model: kernel.Match, modelNote: "no BTF FUNC for the target", build: true,
				kernel: kernel.RefusedByA, why: "__bpf_sk_lookup has no BTF FUNC in 7.3.4 (inlined)"},
		},
		// 7.3 renames sched_ext_ops_cid's cgroup_* callbacks cpuctl_* and adds the
		// sub-scheduler capability callbacks and init_cids; set_cmask and sub_caps_updated
		// take a cid mask in an arena (their CFI stubs' __arena parameters), so a program
		// without an arena map is refused at load.
		tables: []anyTable{{ops: "sched_ext_ops_cid",
			added: []string{"cpuctl_init", "cpuctl_set_bandwidth", "sub_caps_updated", "sub_ecaps_updated", "init_cids"},
			gone:  []string{"cgroup_init", "cgroup_set_bandwidth"},
			refused: map[string]string{
				"set_cmask":        "arena argument of set_cmask requires a program with an associated arena",
				"sub_caps_updated": "arena argument of sub_caps_updated requires a program with an associated arena",
			}}}},
}

func (k anyKernel) ids() string {
	var s []string
	for _, c := range k.cases {
		s = append(s, c.id)
	}
	return strings.Join(s, ",")
}

// only is what the capture selects: the cases and the tables.
func (k anyKernel) only() string {
	s := k.ids()
	for _, t := range k.tables {
		s += ",struct_ops-" + t.ops + "-*"
	}
	return s
}

// TestAnyKernel fetches each kernel with `kernel fetch --debian`, captures its cases through
// `kernel capture --vmlinuz` (one boot, BTF in the corpus), and asserts every case's verdict
// against the model (`diff --corpus`) and against the profile's corpus (`diff DIR_A DIR_B`).
func TestAnyKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("fetches Debian kernels and boots them under qemu; skipped with -short")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("qemu-system-x86_64 is not installed")
	}
	for _, k := range anyKernels {
		t.Run(k.name, func(t *testing.T) {
			if k.flaky != "" && *anyKernelSet != "all" {
				t.Skipf("runs with -anykernel all (make anykernel): %s", k.flaky)
			}
			testAnyKernel(t, k)
		})
	}
}

var anyKernelSet = flag.String("anykernel", "", `"all": TestAnyKernel also boots the kernels that fail on their own now and then`)

func testAnyKernel(t *testing.T, k anyKernel) {
	t0 := time.Now()
	code, out, errOut := trampjit("kernel", "fetch", "--debian", k.pkg, "--suite", k.suite, "--arch", "amd64", "--format", "json")
	if code != 0 {
		t.Skipf("cannot fetch %s from %s: %s", k.pkg, k.suite, errOut)
	}
	var got []vm.KernelImage
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 {
		t.Fatalf("kernel fetch --format json: %v\n%s", err, out)
	}
	img := got[0]
	if !vm.MatchDebian(k.pkg, filepath.Base(filepath.Dir(img.Path))[:strings.IndexByte(filepath.Base(filepath.Dir(img.Path)), '_')]) {
		t.Errorf("fetched %s, which %s does not match", img.Path, k.pkg)
	}
	t.Logf("%s: %s %s (%s), fetched in %.1fs", k.name, img.Package, img.Version, img.Release, time.Since(t0).Seconds())

	dir := filepath.Join(t.TempDir(), "capture")
	t1 := time.Now()
	// A guest whose kernel panics on its own, outside any BPF code, is booted again (Debian's
	// gcc-12 build of 6.12.95 does, under qemu 7.2's TCG, in init as well as later: the
	// saved EFLAGS are garbage, as if the emulated flags were). A panic in a trampoline or
	// a program fails the test; so does any other once every boot panicked.
	const boots = 4
	var panics []string
	for attempt := 1; ; attempt++ {
		code, out, errOut = trampjit("kernel", "capture", "--vmlinuz", img.Path, "--config", img.Config,
			"--only", k.only(), "-o", dir, "--color", "never")
		where := guestPanic(dir, code, errOut)
		if where == "" {
			break
		}
		if strings.Contains(where, "bpf") {
			t.Fatalf("%s panicked in BPF code: %s\n%s", img.Release, where, errOut)
		}
		panics = append(panics, where)
		if attempt == boots {
			t.Fatalf("%s panicked on its own in each of %d boots:\n%s", img.Release, boots, strings.Join(panics, "\n"))
		}
		t.Logf("%s: boot %d: the kernel panicked on its own (%s); booting again", k.name, attempt, where)
		os.RemoveAll(dir)
	}
	if code != 0 {
		t.Fatalf("kernel capture --vmlinuz %s: exit %d\n%s\n%s", img.Path, code, out, errOut)
	}
	t.Logf("%s: captured %d cases in %.1fs", k.name, len(k.cases), time.Since(t1).Seconds())
	// The profile is the nearest lower one, and the run says so before it boots.
	if !strings.Contains(errOut, "model profile: "+k.profile) {
		t.Errorf("capture does not state the model profile %s:\n%s", k.profile, errOut)
	}
	checkVmlinuzCorpus(t, dir, img, k.profile)

	// The model of the profile against the capture.
	code, out, errOut = trampjit("diff", "--corpus", dir, "--format", "json")
	if code != 0 && code != exitDisagree {
		t.Fatalf("diff --corpus: exit %d: %s", code, errOut)
	}
	var vsModel diffJSON
	if err := json.Unmarshal([]byte(out), &vsModel); err != nil {
		t.Fatalf("diff --corpus --format json: %v\n%s", err, out)
	}
	if vsModel.Profile != k.profile {
		t.Errorf("diff --corpus compared with profile %q, want %s", vsModel.Profile, k.profile)
	}
	model := map[string]kernel.DiffResult{}
	for _, d := range vsModel.Cases {
		model[d.ID] = d
	}

	// The capture against the profile's corpus.
	code, out, errOut = trampjit("diff", dir, k.corpus, "--only", k.ids(), "--format", "json")
	if code != 0 && code != exitDisagree {
		t.Fatalf("diff %s %s: exit %d: %s", dir, k.corpus, code, errOut)
	}
	var vsCorpus kernel.Comparison
	if err := json.Unmarshal([]byte(out), &vsCorpus); err != nil {
		t.Fatalf("diff DIR_A DIR_B --format json: %v\n%s", err, out)
	}
	if vsCorpus.A.Release != img.Release {
		t.Errorf("diff: A's release %q, want %s", vsCorpus.A.Release, img.Release)
	}
	other := map[string]kernel.CaseDiff{}
	for _, d := range vsCorpus.Cases {
		other[d.ID] = d
	}

	counts := map[string]int{}
	for _, c := range k.cases {
		if c.build && img.Release != k.release {
			t.Logf("%s: not checked: its verdict is %s's, this is %s", c.id, k.release, img.Release)
			continue
		}
		m, ok := model[c.id]
		switch {
		case !ok:
			t.Errorf("%s: not in diff --corpus", c.id)
		case m.Verdict != c.model:
			t.Errorf("%s: against the %s model: %s (%s; model %s, kernel %s); want %s", c.id, k.profile, m.Verdict, m.Note, m.Model, m.Kernel, c.model)
		case !strings.Contains(m.Note, c.modelNote):
			t.Errorf("%s: against the %s model: note %q, want %q", c.id, k.profile, m.Note, c.modelNote)
		}
		o, ok := other[c.id]
		switch {
		case !ok:
			t.Errorf("%s: not in diff %s %s", c.id, dir, k.corpus)
			continue
		case o.Verdict != c.kernel:
			t.Errorf("%s: against %s: %s, sections %v (%s); want %s %v: %s", c.id, k.corpus, o.Verdict, o.Changed, o.Note, c.kernel, c.changed, c.why)
		case c.kernel == kernel.Differs && strings.Join(o.Changed, ",") != strings.Join(c.changed, ","):
			t.Errorf("%s: changed sections %v, want %v: %s", c.id, o.Changed, c.changed, c.why)
		case c.kernel == kernel.RefusedByA && (o.A == nil || o.A.Refusal == "" || o.B == nil || o.B.Size == 0):
			t.Errorf("%s: refused by A only, but A %+v, B %+v: %s", c.id, o.A, o.B, c.why)
		}
		counts["model "+m.Verdict]++
		counts["corpus "+string(o.Verdict)]++
	}
	for _, tb := range k.tables {
		checkAnyTable(t, dir, k, tb, model)
	}
	t.Logf("%s: %v in %.1fs", k.name, counts, time.Since(t0).Seconds())
}

// checkAnyTable checks a whole struct_ops table of the capture: its cases are the
// function-pointer members of the kernel's own BTF (vmlinux.btf.xz), and each is
// byte-identical to the model or refused for the model's reason, the listed ones in the
// kernel's words.
func checkAnyTable(t *testing.T, dir string, k anyKernel, tb anyTable, model map[string]kernel.DiffResult) {
	t.Helper()
	spec, err := btfmodel.LoadFile(filepath.Join(dir, "vmlinux.btf.xz"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var st *btf.Struct
	if err := spec.TypeByName(tb.ops, &st); err != nil {
		t.Fatalf("%s: %v", tb.ops, err)
	}
	var want []string
	for _, m := range st.Members {
		if p, ok := btf.UnderlyingType(m.Type).(*btf.Pointer); ok {
			if _, ok := btf.UnderlyingType(p.Target).(*btf.FuncProto); ok {
				want = append(want, m.Name)
			}
		}
	}
	cases, err := kernel.ReadCorpus(dir)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "struct_ops-" + tb.ops + "-"
	var got []string
	images, refusals := 0, 0
	for _, c := range cases {
		member, ok := strings.CutPrefix(c.ID, prefix)
		if !ok {
			continue
		}
		got = append(got, member)
		d, ok := model[c.ID]
		switch {
		case !ok:
			t.Errorf("%s: not in diff --corpus", c.ID)
		case d.Verdict != kernel.Match:
			t.Errorf("%s: against the %s model: %s (%s)", c.ID, k.profile, d.Verdict, d.Note)
		}
		if c.Error == "" {
			images++
			continue
		}
		refusals++
		if words, ok := tb.refused[member]; !ok || !strings.Contains(c.Error, words) {
			t.Errorf("%s: refused (%s %s), want %q", c.ID, c.Errno, c.Error, words)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%s: captured members\n%v\nwant the kernel's BTF's, in index order\n%v", tb.ops, got, want)
	}
	listed := map[string]bool{}
	for _, c := range kernel.StructOpsCatalog(k.profile, "amd64") {
		if m, ok := strings.CutPrefix(c.ID, prefix); ok {
			listed[m] = true
		}
	}
	for _, m := range tb.added {
		if listed[m] || !slices.Contains(got, m) {
			t.Errorf("%s.%s: in the catalogue %v, captured %v; want captured though the %s catalogue does not list it", tb.ops, m, listed[m], slices.Contains(got, m), k.profile)
		}
	}
	for _, m := range tb.gone {
		if !listed[m] || slices.Contains(got, m) {
			t.Errorf("%s.%s: in the catalogue %v, captured %v; want only in the catalogue", tb.ops, m, listed[m], slices.Contains(got, m))
		}
	}
	if refusals != len(tb.refused) {
		t.Errorf("%s: %d refusals, want %d (%v)", tb.ops, refusals, len(tb.refused), tb.refused)
	}
	t.Logf("%s: %s whole: %d members, %d images byte-identical, %d refusals as the model's", k.name, tb.ops, len(got), images, refusals)
}

// guestPanic returns the panic line of a capture whose guest's kernel panicked ("" if none):
// a failed boot, or a corpus with cases the guest died in (stage "guest").
func guestPanic(dir string, code int, errOut string) string {
	line := func(s string) string {
		if !strings.Contains(s, "Kernel panic") {
			return ""
		}
		for _, l := range strings.Split(s, "\n") {
			if strings.Contains(l, "RIP: 0010:") { // where the kernel was
				return strings.TrimSpace(l)
			}
		}
		return "Kernel panic"
	}
	if code != 0 {
		return line(errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, "boots.json"))
	if err != nil {
		return ""
	}
	var boots []kernel.BootStat
	if json.Unmarshal(b, &boots) != nil {
		return ""
	}
	for _, bt := range boots {
		if l := line(bt.Err); l != "" {
			return l
		}
	}
	return ""
}

// checkVmlinuzCorpus checks what a --vmlinuz capture wrote: the usual files, the BTF, and a
// kernel.json naming the file (no Debian package: a re-capture needs the file again).
func checkVmlinuzCorpus(t *testing.T, dir string, img vm.KernelImage, profile string) {
	t.Helper()
	for _, f := range []string{"cases.jsonl", "info.json", "kernel.json", "boots.json", "vmlinux.btf.xz"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("capture: %s: %v", f, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "kernel.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if rec["kernel"] != profile || rec["release"] != img.Release || rec["source"] != "vmlinuz" || rec["arch"] != "amd64" {
		t.Errorf("kernel.json = %s", b)
	}
	var boots []kernel.BootStat
	if b, err := os.ReadFile(filepath.Join(dir, "boots.json")); err != nil || json.Unmarshal(b, &boots) != nil || len(boots) != 1 {
		t.Errorf("boots.json: want one boot: %s", b)
	}
}

// updateCaptureDoc rewrites docs/capture-your-kernel.md's requirements table.
var updateCaptureDoc = flag.Bool("update-capture-doc", false, "rewrite the requirements table of docs/capture-your-kernel.md from vm.Requirements")

const (
	captureDoc      = "../../docs/capture-your-kernel.md"
	requirementsBeg = "<!-- requirements: generated from vm.Requirements (kernel/vm/requirements.go); go test ./cmd/trampjit -run TestCaptureDocRequirements -update-capture-doc -->\n"
	requirementsEnd = "<!-- end of requirements -->\n"
)

// requirementsTable renders vm.Requirements as the doc's table.
func requirementsTable() string {
	var b strings.Builder
	b.WriteString("| option | architecture | if it is missing |\n|---|---|---|\n")
	for _, r := range vm.Requirements {
		var opts []string
		for _, o := range r.Options {
			opts = append(opts, "`CONFIG_"+o+"`")
		}
		arch := r.Arch
		if arch == "" {
			arch = "all"
		}
		cost := r.Cost
		if r.Fatal {
			cost = "**refused before boot**: " + cost
		} else {
			cost = "the capture runs; " + cost
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", strings.Join(opts, ", "), arch, strings.ReplaceAll(cost, "|", `\|`))
	}
	return b.String()
}

// TestCaptureDocRequirements: the doc lists every requirement CheckConfig enforces, as
// vm.Requirements says it (the table is generated; -update-capture-doc rewrites it).
func TestCaptureDocRequirements(t *testing.T) {
	b, err := os.ReadFile(captureDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, requirementsBeg), strings.Index(doc, requirementsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no generated requirements table (%q ... %q)", captureDoc, requirementsBeg, requirementsEnd)
	}
	want := requirementsTable()
	if *updateCaptureDoc {
		doc = doc[:i+len(requirementsBeg)] + want + doc[j:]
		if err := os.WriteFile(captureDoc, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := doc[i+len(requirementsBeg) : j]; got != want {
		t.Errorf("%s: the requirements table is not vm.Requirements'; run go test ./cmd/trampjit -run TestCaptureDocRequirements -update-capture-doc\ngot:\n%s\nwant:\n%s", captureDoc, got, want)
	}
	// Every option is named, independently of the table's layout.
	for _, r := range vm.Requirements {
		for _, o := range r.Options {
			if !strings.Contains(doc[i:j], "`CONFIG_"+o+"`") {
				t.Errorf("%s does not list CONFIG_%s", captureDoc, o)
			}
		}
	}
}
