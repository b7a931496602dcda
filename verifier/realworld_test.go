package verifier_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/trampjit/trampjit/internal/realworld"
	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/kernel/vm"
	"github.com/trampjit/trampjit/kernel/wire"
	"github.com/trampjit/trampjit/verifier"
)

// The real-world measurement (issue #12): the model against the real kernels on BPF objects
// it has never seen, the ones Debian's packages ship (internal/realworld fetches and extracts
// them). Not part of `make test`: `make verifier-realworld` runs it, one guest boot per
// profile. docs/verifier-realworld.md has the figures.

var (
	realWorld         = flag.Bool("realworld", false, "run TestRealWorld: fetch Debian's BPF objects, boot each profile's kernel, compare with the model")
	realWorldProfiles = flag.String("realworld.profiles", strings.Join(truthProfiles, ","), "with -realworld: the profiles, comma-separated")
	realWorldOut      = flag.String("realworld.out", "/tmp/realworld/{profile}.json", "with -realworld: the JSON report of each profile ({profile} is replaced); a .md table is written beside it")
	realWorldPackages = flag.String("realworld.packages", "", "with -realworld: the Debian packages, comma-separated, each optionally pinned as name=version or name@N (the N-th newest); \"heldout\" is internal/realworld.HeldOut (default: internal/realworld.Packages, newest versions)")
	realWorldCommit   = flag.String("realworld.commit", "", "with -realworld: the commit measured, for the report (default: git rev-parse HEAD)")
	realWorldReuse    = flag.Bool("realworld.reuse", true, "with -realworld: reuse the kernel's cached answers for programs it has judged before (same profile, same bytes sent to the guest)")
)

// rwAnswer is one side's judgement of a program.
type rwAnswer struct {
	Accepted bool   `json:"accepted"`
	Errno    string `json:"errno,omitempty"`
	First    string `json:"first,omitempty"` // the first message line
	Error    string `json:"error,omitempty"` // the last
	Stage    string `json:"stage,omitempty"` // kernel: the step that failed
}

// rwCase is one in-scope program of one object.
type rwCase struct {
	Program string   `json:"program"`
	Section string   `json:"section"`
	Object  string   `json:"object"`
	Package string   `json:"package"`
	Version string   `json:"version"`
	Kernel  rwAnswer `json:"kernel"`
	Model   rwAnswer `json:"model"`
	Diff    string   `json:"diff,omitempty"`
	Sized   []string `json:"sized,omitempty"` // maps sized as the tool's loader would (loaderSize)

	prog     verifier.Program
	modelErr string // the model could not load the object
	wire     *wire.VerifyProgram
	wireErr  string // the backend could not load the object
	key      string // kernel answer cache key
}

// TestRealWorld measures the model on Debian's BPF objects: for every fentry, fexit,
// fmod_ret, lsm and tp_btf program, on each profile, the model's verdict and messages
// against the kernel's (the comparison TestGroundTruth makes).
func TestRealWorld(t *testing.T) {
	if !*realWorld {
		t.Skip("the real-world measurement runs with -realworld (make verifier-realworld)")
	}
	cache, err := vm.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	switch *realWorldPackages {
	case "":
	case "heldout":
		pkgs = realworld.HeldOut
	default:
		pkgs = strings.Split(*realWorldPackages, ",")
	}
	fetched := map[string]*rwObjects{}
	for _, profile := range strings.Split(*realWorldProfiles, ",") {
		profile = strings.TrimSpace(profile)
		if profile == "" {
			continue
		}
		t.Run(profile, func(t *testing.T) {
			_, arch, _ := strings.Cut(profile, "-")
			objs := fetched[arch]
			if objs == nil {
				objs = fetchObjects(t, cache, arch, pkgs)
				fetched[arch] = objs
			}
			rep := measure(t, cache, profile, objs)
			out := strings.ReplaceAll(*realWorldOut, "{profile}", profile)
			if err := writeReport(out, rep); err != nil {
				t.Fatal(err)
			}
			if err := writeSummary(filepath.Dir(out)); err != nil {
				t.Error(err)
			}
			fmt.Fprintf(os.Stderr, "realworld: %s: %s (%s)\n", profile, rep.line(), out)
			t.Logf("%s: %s", profile, rep.line())
		})
	}
}

// rwObjects are one architecture's objects.
type rwObjects struct {
	objs     []realworld.Object
	packages []realworld.Fetched
	copies   int // identical objects dropped
}

func fetchObjects(t *testing.T, cache, arch string, pkgs []string) *rwObjects {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	all, done, err := realworld.Fetch(ctx, cache, arch, pkgs, 24*time.Hour, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	objs, _ := realworld.Dedup(all)
	if len(objs) == 0 {
		t.Fatalf("no BPF objects in %d packages for %s", len(done), arch)
	}
	return &rwObjects{objs: objs, packages: done, copies: len(all) - len(objs)}
}

// inScope says whether a program is one the model and the kernel backend verify: TRACING
// attached as fentry, fexit, fmod_ret or tp_btf (raw_tp with BTF), and BPF_LSM_MAC.
func inScope(ps *ebpf.ProgramSpec) bool {
	switch ps.Type {
	case ebpf.Tracing:
		switch ps.AttachType {
		case ebpf.AttachTraceFEntry, ebpf.AttachTraceFExit, ebpf.AttachModifyReturn, ebpf.AttachTraceRawTp:
			return true
		}
	case ebpf.LSM:
		return ps.AttachType == ebpf.AttachLSMMac
	}
	return false
}

// sectionKind is what a skipped program is counted as: its section's first word.
func sectionKind(sec string) string {
	k, _, _ := strings.Cut(strings.TrimPrefix(sec, "?"), "/")
	if k == "" {
		return "(none)"
	}
	return k
}

// loadSpec reads an object's programs; cilium/ebpf may panic on what it does not expect.
func loadSpec(path string) (spec *ebpf.CollectionSpec, err error) {
	defer func() {
		if r := recover(); r != nil {
			spec, err = nil, fmt.Errorf("malformed BPF object: %v", r)
		}
	}()
	return ebpf.LoadCollectionSpec(path)
}

// measure builds one profile's cases, asks the kernel (one boot for what is not cached) and
// the model, and counts.
func measure(t *testing.T, cache, profile string, objs *rwObjects) *rwReport {
	env := profileEnv(t, profile)
	if *realWorldCommit == "" {
		*realWorldCommit = gitHead()
	}
	rep := &rwReport{Profile: profile, Date: time.Now().UTC().Format(time.RFC3339), Commit: *realWorldCommit,
		Packages: objs.packages, Objects: len(objs.objs), Duplicates: objs.copies, Skipped: map[string]int{}}
	if k, err := vm.Fetch(context.Background(), string(env.Kernel), string(env.Arch), io.Discard); err == nil {
		rep.Kernel = fmt.Sprintf("%s (%s %s)", k.Release, k.Package, k.Version)
	}
	var cases []*rwCase
	t0 := time.Now()
	for i, o := range objs.objs {
		if i%25 == 0 {
			fmt.Fprintf(os.Stderr, "realworld: %s: reading object %d of %d (CO-RE against the profile's BTF, %.0fs)\n", profile, i+1, len(objs.objs), time.Since(t0).Seconds())
		}
		spec, err := loadSpec(o.Path)
		if err != nil {
			rep.Unreadable = append(rep.Unreadable, fmt.Sprintf("%s %s: %s: %v", o.Package, o.Version, o.Name(), err))
			continue
		}
		data, err := os.ReadFile(o.Path)
		if err != nil {
			t.Fatal(err)
		}
		model := map[string]verifier.Program{}
		progs, _, merr := verifier.ParseELFWith(data, env.BTF, elfOptions(profile))
		for _, p := range progs {
			model[p.Name] = p
		}
		back := map[string]*wire.VerifyProgram{}
		wps, _, kerr := kernel.ProgramsFromELFSkipped(o.Path, kernel.ELFOptions{KernelBTF: env.BTF, Profile: profile})
		for i := range wps {
			back[wps[i].Name] = &wps[i]
		}
		names := make([]string, 0, len(spec.Programs))
		for n := range spec.Programs {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			ps := spec.Programs[n]
			if !inScope(ps) {
				rep.Skipped[sectionKind(ps.SectionName)]++
				continue
			}
			c := &rwCase{Program: n, Section: ps.SectionName, Object: o.Name(), Package: o.Package, Version: o.Version}
			if p, ok := model[n]; ok {
				loaderSizeModel(p.Maps)
				c.prog = p
			} else if merr != nil {
				c.modelErr = merr.Error()
			} else {
				c.modelErr = "verifier.ParseELF did not return this program"
			}
			if wp, ok := back[n]; ok {
				c.Sized = loaderSizeWire(wp.Maps)
				c.wire = wp
				c.key = rep.Kernel + " " + kernelKey(wp)
			} else if kerr != nil {
				c.wireErr = kerr.Error()
			} else {
				c.wireErr = "kernel.ProgramsFromELFSkipped skipped this program"
			}
			cases = append(cases, c)
		}
	}
	rep.Programs = len(cases)
	askKernel(t, cache, profile, string(env.Kernel), string(env.Arch), cases)
	t1 := time.Now()
	for _, c := range cases {
		judge(c, env)
	}
	rep.ModelSeconds = time.Since(t1).Seconds()
	rep.count(cases)
	return rep
}

// The tools' loaders size some maps at run time, before loading: the object declares
// max_entries 0 (xdp-bench's per-CPU counters, systemd's verity_devices, ...) or, for stack
// trace maps, value_size 0 (libbpf-tools set perf_max_stack_depth * 8). The kernel refuses
// to create such a map (BPF_MAP_CREATE: EINVAL), so the program would never reach the
// verifier. Both sides get the same sizes, chosen as those loaders' defaults.
const (
	loaderMaxEntries = 1024
	loaderStackValue = 127 * 8 // PERF_MAX_STACK_DEPTH u64s
	loaderRingbuf    = 256 << 10
)

// loaderSize returns the sizes a map gets, and what was changed ("" when nothing).
func loaderSize(name, typ string, value, entries uint32) (uint32, uint32, string) {
	var what []string
	if value == 0 && strings.ReplaceAll(strings.ToLower(typ), "_", "") == "stacktrace" {
		value = loaderStackValue
		what = append(what, fmt.Sprintf("value_size 0→%d", value))
	}
	switch t := strings.ReplaceAll(strings.ToLower(typ), "_", ""); {
	case entries != 0, t == "perfeventarray": // libbpf itself sizes perf event arrays (nr_cpus)
	case strings.HasSuffix(t, "ringbuf"):
		entries = loaderRingbuf // a power-of-2 multiple of the page size
		what = append(what, fmt.Sprintf("max_entries 0→%d", entries))
	default:
		entries = loaderMaxEntries
		what = append(what, fmt.Sprintf("max_entries 0→%d", entries))
	}
	if len(what) == 0 {
		return value, entries, ""
	}
	return value, entries, name + ": " + strings.Join(what, ", ")
}

func loaderSizeModel(ms []verifier.Map) {
	for i := range ms {
		ms[i].ValueSize, ms[i].MaxEntries, _ = loaderSize(ms[i].Name, ms[i].Type, ms[i].ValueSize, ms[i].MaxEntries)
	}
}

func loaderSizeWire(ms []wire.VerifyMap) []string {
	var sized []string
	for i := range ms {
		var what string
		ms[i].ValueSize, ms[i].MaxEntries, what = loaderSize(ms[i].Name, ms[i].Type, ms[i].ValueSize, ms[i].MaxEntries)
		if what != "" {
			sized = append(sized, what)
		}
	}
	return sized
}

// kernelKey identifies what the guest is asked: the bytes sent, so a changed backend or
// object asks again (the cache key also names the kernel release).
func kernelKey(wp *wire.VerifyProgram) string {
	b, _ := json.Marshal(wp)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// askKernel fills every case's kernel answer: from the cache of earlier runs where the same
// program was sent to the same profile, else from one boot.
func askKernel(t *testing.T, cache, profile, kern, arch string, cases []*rwCase) {
	path := filepath.Join(cache, "realworld", "kernel-"+profile+".json")
	known := map[string]rwAnswer{}
	if *realWorldReuse {
		known = readAnswers(t, path)
	}
	var ask []*rwCase
	var wps []wire.VerifyProgram
	queued := map[string]bool{}
	cached, unloadable := 0, 0
	for _, c := range cases {
		switch _, ok := known[c.key]; {
		case c.wire == nil:
			unloadable++
		case ok:
			cached++
		case !queued[c.key]: // the same bytes in two objects are one load
			queued[c.key] = true
			ask = append(ask, c)
			wps = append(wps, *c.wire)
		}
	}
	fmt.Fprintf(os.Stderr, "realworld: %s: %d programs: %d answers cached, %d the backend cannot load, %d distinct for the kernel\n",
		profile, len(cases), cached, unloadable, len(ask))
	if len(wps) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
		res, err := kernel.Verify(ctx, kernel.VerifyOptions{Kernel: kern, Arch: arch, Programs: wps, Progress: os.Stderr})
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", profile, err)
		}
		for i, r := range res {
			a := rwAnswer{Accepted: r.Accepted, Errno: r.Errno, Error: r.Error, Stage: r.Stage}
			if !r.Accepted {
				a.First = firstMessage(r.Log)
			}
			known[ask[i].key] = a
		}
		saveAnswers(t, path, known)
	}
	for _, c := range cases {
		if c.wire != nil {
			c.Kernel = known[c.key]
		}
	}
}

func readAnswers(t *testing.T, path string) map[string]rwAnswer {
	known := map[string]rwAnswer{}
	if data, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(data, &known); err != nil {
			t.Logf("%s: %v: asking the kernel again", path, err)
			return map[string]rwAnswer{}
		}
	}
	return known
}

// saveAnswers merges fresh answers into the cache file, under the cache's lock (another run
// may have added its own meanwhile).
func saveAnswers(t *testing.T, path string, fresh map[string]rwAnswer) {
	unlock, err := realworld.Lock(filepath.Dir(path))
	if err != nil {
		t.Log(err)
		return
	}
	defer unlock()
	all := readAnswers(t, path)
	for k, a := range fresh {
		all[k] = a
	}
	data, err := json.Marshal(all)
	if err != nil {
		t.Log(err)
		return
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		t.Log(err)
	}
}

// judge runs the model on one case (a panic is the model's answer, not the end of the run)
// and says how it differs from the kernel.
func judge(c *rwCase, env verifier.Env) {
	if c.wire == nil {
		c.Kernel = rwAnswer{Stage: "backend", Error: c.wireErr}
	}
	if c.modelErr != "" {
		c.Model = rwAnswer{Error: "model: " + c.modelErr}
	} else {
		got, perr := safeCheck(c.prog, env)
		if perr != "" {
			c.Model = rwAnswer{Error: "model panic: " + perr}
		} else {
			c.Model = rwAnswer{Accepted: got.Accepted, Errno: got.Errno, Error: got.Error}
			if !got.Accepted {
				c.Model.First = firstMessage(got.Log)
			}
		}
	}
	if !c.compared() {
		return
	}
	e := expectedProgram{Accepted: c.Kernel.Accepted, First: c.Kernel.First, Error: c.Kernel.Error}
	got := verifier.Result{Accepted: c.Model.Accepted, Error: c.Model.Error}
	if c.Model.First != "" {
		got.Log = []string{c.Model.First}
	}
	c.Diff = truthDiff(e, got)
}

// compared: the kernel's verifier judged the program. A guest that died on it, a backend that
// could not read the object, or a map the kernel would not create is no verdict: the tools'
// loaders size some maps at run time (max_entries or value_size 0 in the object, e.g.
// xdp-bench's per-CPU counters, libbpf-tools' stack maps), which libbpf alone cannot load
// either.
func (c *rwCase) compared() bool {
	switch c.Kernel.Stage {
	case "backend", "map", "guest", "agent", "request":
		return false
	}
	return true
}

func safeCheck(p verifier.Program, env verifier.Env) (res verifier.Result, panicked string) {
	defer func() {
		if r := recover(); r != nil {
			panicked = fmt.Sprint(r)
		}
	}()
	return verifier.Check(p, env), ""
}
