package verifier_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/kernel/wire"
	"github.com/trampjit/trampjit/verifier"
)

// The ground truth: every program of testdata/verifier, as the real kernels judged it
// (expected-<profile>.json, written by `go test ./verifier -run TestGroundTruth -update`,
// which boots each profile's kernel once), against the model.

var (
	update         = flag.Bool("update", false, "boot the kernels and rewrite testdata/verifier/expected-*.json")
	updateProfiles = flag.String("updateprofiles", "", "with -update: only these profiles (comma-separated, e.g. 7.2-amd64,7.2-arm64)")
	updateFiles    = flag.String("updatefiles", "", "with -update: boot only the programs of these files (comma-separated base names, e.g. subprog.bpf.o,kfunc.json) and keep the other entries")
)

const truthDir = "../testdata/verifier"

// truthProfiles are the kernels the expected results come from.
var truthProfiles = []string{"6.1-amd64", "6.12-amd64", "6.12-arm64", "6.12-riscv64", "7.2-amd64", "7.2-arm64", "7.2-riscv64"}

// expectedFile is one profile's kernel results.
type expectedFile struct {
	Kernel   string            `json:"kernel"` // "6.12-amd64"
	Programs []expectedProgram `json:"programs"`
}

type expectedProgram struct {
	File     string `json:"file"`
	Name     string `json:"name"`
	Section  string `json:"section"`
	Accepted bool   `json:"accepted"`
	Errno    string `json:"errno,omitempty"`
	// First is the log's first message line (not an instruction, state or source line),
	// Error its last: the kernel's reason.
	First string `json:"first,omitempty"`
	Error string `json:"error,omitempty"`
}

// truthProgram is one program of testdata/verifier, for the model and for the kernel.
type truthProgram struct {
	file string
	prog verifier.Program
	wire wire.VerifyProgram
}

var btfCache = map[string]*btf.Spec{}

// profileEnv is the model's environment for a profile, with the BTF the kernel booted.
func profileEnv(t testing.TB, profile string) verifier.Env {
	t.Helper()
	spec, ok := btfCache[profile]
	if !ok {
		var err error
		spec, err = btfmodel.LoadFile(filepath.Join("../testdata/kernel", profile, "vmlinux.btf.xz"), nil)
		if err != nil {
			t.Fatal(err)
		}
		btfCache[profile] = spec
	}
	k, a, _ := strings.Cut(profile, "-")
	return verifier.Env{Kernel: btfmodel.Kernel(k), Arch: btfmodel.Arch(a), BTF: spec}
}

// truthPrograms loads every object and JSON list of testdata/verifier for a profile (CO-RE
// relocations depend on its BTF). withWire also converts them for the guest.
func truthPrograms(t testing.TB, env verifier.Env, withWire bool) []truthProgram {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(truthDir, "*.bpf.o"))
	jsons, _ := filepath.Glob(filepath.Join(truthDir, "*.json"))
	for _, j := range jsons {
		if !strings.HasPrefix(filepath.Base(j), "expected-") {
			files = append(files, j)
		}
	}
	sort.Strings(files)
	var out []truthProgram
	for _, f := range files {
		var progs []verifier.Program
		var wps []wire.VerifyProgram
		var err error
		if strings.HasSuffix(f, ".json") {
			data, rerr := os.ReadFile(f)
			if rerr != nil {
				t.Fatal(rerr)
			}
			progs, err = verifier.ParseJSON(data)
			if err == nil && withWire {
				for _, p := range progs {
					wp, werr := wireFromJSON(p)
					if werr != nil {
						t.Fatalf("%s: %s: %v", f, p.Name, werr)
					}
					wps = append(wps, wp)
				}
			}
		} else {
			progs, _, err = verifier.LoadELFWith(f, env.BTF, elfOptions(string(env.Kernel)+"-"+string(env.Arch)))
			if err == nil && withWire {
				wps, err = kernel.ProgramsFromELF(f, kernel.ELFOptions{KernelBTF: env.BTF, Profile: string(env.Kernel) + "-" + string(env.Arch)})
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if withWire && len(wps) != len(progs) {
			t.Fatalf("%s: %d programs for the model, %d for the kernel", f, len(progs), len(wps))
		}
		for i, p := range progs {
			tp := truthProgram{file: filepath.Base(f), prog: p}
			if withWire {
				if wps[i].Name != p.Name {
					t.Fatalf("%s: program %d is %s for the model, %s for the kernel", f, i, p.Name, wps[i].Name)
				}
				tp.wire = wps[i]
			}
			out = append(out, tp)
		}
	}
	return out
}

// wireFromJSON converts a JSON-listed program for the guest, as `trampjit verify` does.
func wireFromJSON(p verifier.Program) (wire.VerifyProgram, error) {
	wp, err := kernel.ProgramForSection(p.Name, p.Section)
	if err != nil {
		return wp, err
	}
	wp.License = p.License
	for _, m := range p.Maps {
		vm := wire.VerifyMap{Name: m.Name, Type: m.Type, KeySize: m.KeySize, ValueSize: m.ValueSize, MaxEntries: m.MaxEntries}
		if m.ReadOnly {
			vm.Flags = 1 << 7 // BPF_F_RDONLY_PROG
		}
		vm.Data, vm.Freeze = m.Data, m.Frozen // a JSON map's contents
		if len(vm.Data) > 0 && len(vm.Data) < int(m.ValueSize) {
			vm.Data = append(append([]byte(nil), vm.Data...), make([]byte, int(m.ValueSize)-len(vm.Data))...) // zeros after it: the agent writes value_size bytes
		}
		wp.Maps = append(wp.Maps, vm)
	}
	return kernel.ProgramFromInstructions(wp, p.Instructions)
}

// TestGroundTruth runs the model on every program of testdata/verifier for each profile and
// compares with what the real kernel said: the verdict, and the first and last message
// lines modulo instruction and register numbers. Known gaps (knownGaps) are skipped by name.
func TestGroundTruth(t *testing.T) {
	if *update {
		updateGroundTruth(t)
	}
	for _, profile := range truthProfiles {
		t.Run(profile, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(truthDir, "expected-"+profile+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var exp expectedFile
			if err := json.Unmarshal(data, &exp); err != nil {
				t.Fatal(err)
			}
			want := map[string]expectedProgram{}
			for _, e := range exp.Programs {
				want[e.File+":"+e.Name] = e
			}
			env := profileEnv(t, profile)
			progs := truthPrograms(t, env, false)
			if len(progs) != len(exp.Programs) {
				t.Errorf("%d programs in testdata/verifier, %d in expected-%s.json: run with -update", len(progs), len(exp.Programs), profile)
			}
			agree := 0
			for _, p := range progs {
				key := p.file + ":" + p.prog.Name
				e, ok := want[key]
				if !ok {
					t.Errorf("%s: no kernel result: run with -update", key)
					continue
				}
				got := verifier.Check(p.prog, env)
				diff := truthDiff(e, got)
				if diff == "" {
					agree++
					continue
				}
				if why, known := knownGaps[profile+"/"+p.prog.Name]; known {
					t.Logf("%s: known gap (%s): %s", key, why, diff)
					continue
				}
				t.Errorf("%s (%s): %s", key, p.prog.Section, diff)
			}
			t.Logf("%s: model agrees with the kernel on %d/%d programs", profile, agree, len(progs))
		})
	}
}

// truthDiff says how the model's result differs from the kernel's, or "".
func truthDiff(e expectedProgram, got verifier.Result) string {
	if e.Accepted != got.Accepted {
		return fmt.Sprintf("kernel accepted=%v (%s), model accepted=%v (%s)", e.Accepted, e.Error, got.Accepted, got.Error)
	}
	if e.Accepted {
		return ""
	}
	if NormalizeLine(e.Error) != NormalizeLine(got.Error) {
		return fmt.Sprintf("last line: kernel %q, model %q", e.Error, got.Error)
	}
	if first := firstMessage(got.Log); e.First != "" && NormalizeLine(e.First) != NormalizeLine(first) {
		return fmt.Sprintf("first line: kernel %q, model %q", e.First, first)
	}
	return ""
}

// updateGroundTruth boots each profile's kernel and rewrites its expected file. With
// -updatefiles only those files' programs are loaded; the other entries stay as they were.
// A lock file serialises concurrent updates of the same expected files.
func updateGroundTruth(t *testing.T) {
	only := map[string]bool{}
	for _, f := range strings.Split(*updateFiles, ",") {
		if f = strings.TrimSpace(f); f != "" {
			only[f] = true
		}
	}
	lock, err := os.OpenFile(filepath.Join(truthDir, ".expected.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	for _, profile := range truthProfiles {
		if *updateProfiles != "" && !strings.Contains(","+*updateProfiles+",", ","+profile+",") {
			continue
		}
		env := profileEnv(t, profile)
		all := truthPrograms(t, env, true)
		var progs []truthProgram
		for _, p := range all {
			if len(only) == 0 || only[p.file] {
				progs = append(progs, p)
			}
		}
		for f := range only {
			if !slices.ContainsFunc(all, func(p truthProgram) bool { return p.file == f }) {
				t.Fatalf("-updatefiles %s: no such file with programs in %s", f, truthDir)
			}
		}
		old := map[string]expectedProgram{}
		path := filepath.Join(truthDir, "expected-"+profile+".json")
		if len(only) > 0 {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var prev expectedFile
			if err := json.Unmarshal(data, &prev); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			for _, e := range prev.Programs {
				old[e.File+":"+e.Name] = e
			}
		}
		wps := make([]wire.VerifyProgram, len(progs))
		for i, p := range progs {
			wps[i] = p.wire
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		res, err := kernel.Verify(ctx, kernel.VerifyOptions{Kernel: string(env.Kernel), Arch: string(env.Arch), Programs: wps, Progress: os.Stderr})
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", profile, err)
		}
		fresh := map[string]expectedProgram{}
		for i, r := range res {
			if r.Stage == "guest" || r.Stage == "agent" || r.Stage == "request" {
				t.Fatalf("%s: %s: not verified (%s): %s", profile, progs[i].prog.Name, r.Stage, r.Error)
			}
			e := expectedProgram{File: progs[i].file, Name: progs[i].prog.Name,
				Section: progs[i].prog.Section, Accepted: r.Accepted, Errno: r.Errno, Error: r.Error}
			if !r.Accepted {
				e.First = firstMessage(r.Log)
			}
			fresh[e.File+":"+e.Name] = e
		}
		exp := expectedFile{Kernel: profile}
		for _, p := range all {
			key := p.file + ":" + p.prog.Name
			if e, ok := fresh[key]; ok {
				exp.Programs = append(exp.Programs, e)
			} else if e, ok := old[key]; ok {
				exp.Programs = append(exp.Programs, e)
			}
		}
		data, err := json.MarshalIndent(exp, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		// Whole or nothing: a reader never sees half a file.
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
}
