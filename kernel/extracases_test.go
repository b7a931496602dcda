package kernel

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel/vm"
	"github.com/trampjit/trampjit/kernel/wire"
)

// TestCorpusExtraCases: in every corpus, the cases that are neither the catalogue's nor
// struct_ops members are exactly its extra-cases.jsonl, each the catalogue case of its
// corpus line: a fresh capture (make corpus) takes them again.
func TestCorpusExtraCases(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(corpusRoot, "*-*"))
	if len(dirs) < 8 {
		t.Fatalf("%d corpora under %s", len(dirs), corpusRoot)
	}
	withExtra := 0
	for _, dir := range dirs {
		var k struct{ Kernel, Arch string }
		b, err := os.ReadFile(filepath.Join(dir, "kernel.json"))
		if err == nil {
			err = json.Unmarshal(b, &k)
		}
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		cat := map[string]bool{}
		for _, c := range FullCatalog(k.Kernel, k.Arch) {
			cat[c.ID] = true
		}
		cs, err := ReadCorpus(dir)
		if err != nil {
			t.Fatal(err)
		}
		var want []Case
		for _, cc := range cs {
			if !cat[cc.ID] && cc.Request.StructOps == nil {
				want = append(want, CaseOf(cc))
			}
		}
		got, err := ReadExtraCases(dir, k.Kernel, k.Arch)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		if len(got) > 0 {
			withExtra++
		}
		byID := func(cs []Case) { sort.Slice(cs, func(i, j int) bool { return cs[i].ID < cs[j].ID }) }
		byID(got)
		byID(want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %s holds\n%s\nbut the corpus's cases from outside the catalogue are\n%s\n(merge them with --cases FILE --merge, which writes the file)",
				dir, ExtraCasesFile, caseLines(got), caseLines(want))
		}
	}
	if withExtra < 4 {
		t.Errorf("%d corpora with extra cases; 6.12-amd64, 6.12-arm64, 7.2-amd64 and 7.2-arm64 have kernel fuzz's", withExtra)
	}
}

func caseLines(cs []Case) string {
	var b strings.Builder
	for _, c := range cs {
		j, _ := json.Marshal(c)
		b.Write(append(j, '\n'))
	}
	return b.String()
}

// TestCaseOfRoundTrip: a case captured into a corpus line (toCorpus) comes back as itself,
// a BPF-program target's tj_argsN from the request's prototype.
func TestCaseOfRoundTrip(t *testing.T) {
	k := &vm.KernelImage{Kernel: "7.2", Arch: "amd64"}
	for _, c := range []Case{
		{ID: "fuzz-a", Func: "bpf_lsm_cred_free", Progs: []jit.Prog{{Kind: jit.LSM, FuncIP: true}}},
		{ID: "fuzz-b", Func: "tj_args3", Target: "bpf", Progs: []jit.Prog{{Kind: jit.Fentry, Cookie: 7}, {Kind: jit.Fexit}}},
		{ID: "fuzz-c", Func: "tj_args0", Target: "bpf", Progs: []jit.Prog{{Kind: jit.Fexit}}},
		{ID: "fuzz-d", Func: "tcp_v4_connect", Progs: []jit.Prog{{Kind: jit.Fsession, SessionCookie: true}}},
	} {
		cc := toCorpus(k, nil, c, wire.CaptureResult{ID: c.ID, Code: []byte{0xc3}}, "vmlinux.btf.xz")
		if got := CaseOf(cc); !reflect.DeepEqual(got, c) {
			t.Errorf("CaseOf(toCorpus(%+v)) = %+v", c, got)
		}
	}
}

func writeExtra(t *testing.T, dir, content string) string {
	t.Helper()
	p := filepath.Join(dir, ExtraCasesFile)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	extraA = `{"id":"fuzz-a","func":"bpf_lsm_cred_free","progs":[{"kind":"lsm","func_ip":true}]}`
	extraB = `{"id":"fuzz-b","func":"tj_args2","progs":[{"kind":"fentry"}],"target":"bpf"}`
)

// TestCaptureCases: a capture into a directory takes the catalogue, then the directory's
// extra cases (those a --cases file has are its); --merge takes only what it was given;
// --only selects among all of them.
func TestCaptureCases(t *testing.T) {
	dir := t.TempDir()
	base := FullCatalog("6.12", "amd64")
	got, err := CaptureCases(dir, "6.12", "amd64", base, false)
	if err != nil || len(got) != len(base) {
		t.Fatalf("no extra file: %d cases of %d, %v", len(got), len(base), err)
	}
	writeExtra(t, dir, "# kernel fuzz\n"+extraA+"\n\n"+extraB+"\n")
	got, err = CaptureCases(dir, "6.12", "amd64", base, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(base)+2 || got[len(base)].ID != "fuzz-a" || got[len(base)+1].ID != "fuzz-b" ||
		got[len(base)+1].Target != "bpf" || !reflect.DeepEqual(got[:len(base)], base) {
		t.Errorf("catalogue + extras: %d cases (catalogue %d), tail %+v", len(got), len(base), got[len(base):])
	}
	if got, _ := CaptureCases(dir, "6.12", "amd64", base, true); len(got) != len(base) {
		t.Errorf("--merge: %d cases, want the %d given", len(got), len(base))
	}
	file := []Case{{ID: "fuzz-b", Func: "tj_args1", Target: "bpf", Progs: []jit.Prog{{Kind: jit.Fexit}}}}
	got, _ = CaptureCases(dir, "6.12", "amd64", file, false)
	if len(got) != 2 || got[0].Func != "tj_args1" || got[1].ID != "fuzz-a" {
		t.Errorf("--cases FILE with fuzz-b: %+v, want the file's fuzz-b then fuzz-a", got)
	}
	only, err := ParseOnly("fuzz-*")
	if err != nil {
		t.Fatal(err)
	}
	all, _ := CaptureCases(dir, "6.12", "amd64", base, false)
	var ids []string
	for _, c := range all {
		if only.Match(c.ID) {
			ids = append(ids, c.ID)
		}
	}
	if strings.Join(ids, " ") != "fuzz-a fuzz-b" {
		t.Errorf("--only 'fuzz-*' selects %v", ids)
	}
	if got, _ := CaptureCases("", "6.12", "amd64", base, false); len(got) != len(base) {
		t.Errorf("no -o: %d cases", len(got))
	}
}

// TestReadExtraCasesErrors: bad content is an error naming the file and the line.
func TestReadExtraCasesErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ content, want string }{
		{extraA + "\n{\"id\":\"fuzz-x\"\n", ":2: unexpected EOF"},
		{"\n" + `{"id":"fuzz-x","func":"f","progs":[],"extra":1}`, `:2: json: unknown field "extra"`},
		{`{"id":"fuzz-x","func":"f","progs":[{"kind":"fentry"}]} {"id":"y"}`, ":1: more than one JSON value"},
		{`{"id":"fuzz-x","func":"f","progs":[{"kind":"kprobe"}]}`, `:1: case fuzz-x: program 1: kind "kprobe"`},
		{`{"id":"fuzz-x","progs":[{"kind":"fentry"}]}`, ":1: case fuzz-x: no func"},
		{`{"id":"","func":"f","progs":[]}`, `:1: id "" is empty`},
		{extraA + "\n# x\n" + extraA + "\n", ":3: id fuzz-a is on line 1 too"},
		{`{"id":"bpf_fentry_test1-fentry","func":"bpf_fentry_test1","progs":[{"kind":"fentry"}]}`,
			":1: bpf_fentry_test1-fentry is a case of the 6.12 amd64 catalogue, which captures it: remove the line"},
		{`{"id":"s","func":"tcp_congestion_ops.ssthresh","progs":[{"kind":"struct_ops"}],"struct_ops":{"ops":"tcp_congestion_ops","member":"ssthresh","map":1}}`,
			":1: s is a struct_ops case"},
		{`[` + extraA + `]`, ":1: json: cannot unmarshal array"},
	} {
		p := writeExtra(t, dir, c.content)
		_, err := ReadExtraCases(dir, "6.12", "amd64")
		if err == nil || !strings.HasPrefix(err.Error(), p+":") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %s%s", c.content, err, p, c.want)
		}
		if _, err2 := CaptureCases(dir, "6.12", "amd64", nil, true); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("%q: CaptureCases --merge: %v", c.content, err2)
		}
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(sub, ExtraCasesFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadExtraCases(sub, "6.12", "amd64"); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory for the file: %v", err)
	}
}

// TestCaptureBadExtraWritesNothing: Capture (and CaptureHost) refuse a bad extra-cases.jsonl
// before anything boots, and the directory stays as it was.
func TestCaptureBadExtraWritesNothing(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cases.jsonl"), []byte(`{"id":"x"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := writeExtra(t, dir, extraA+"\nnot json\n")
	before := readDir(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // were the check missed, the fetch stops at once
	cases := []Case{{ID: "bpf_fentry_test1-fentry", Func: "bpf_fentry_test1", Progs: []jit.Prog{{Kind: jit.Fentry}}}}
	for name, capture := range map[string]func(context.Context, CaptureOptions) (*CaptureReport, error){"Capture": Capture, "CaptureHost": CaptureHost} {
		for _, merge := range []bool{false, true} {
			t0 := time.Now()
			_, err := capture(ctx, CaptureOptions{Kernel: "6.12", Arch: "amd64", Cases: cases, OutDir: dir, Merge: merge,
				Pin: vm.Pin{Version: "x"}, Progress: t.Output()})
			if err == nil || !strings.HasPrefix(err.Error(), p+":2: ") {
				t.Errorf("%s merge=%v: %v, want %s:2: ...", name, merge, err, p)
			}
			if d := time.Since(t0); d > 2*time.Second {
				t.Errorf("%s merge=%v: refused after %v", name, merge, d)
			}
		}
	}
	if after := readDir(t, dir); !reflect.DeepEqual(after, before) {
		t.Errorf("the directory changed: %v, was %v", after, before)
	}
}

func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// TestExtraFile: a capture's cases from outside the catalogue replace their lines or are
// appended; comments, other lines and the order stay; catalogue and struct_ops cases are not
// listed; an unchanged file is not rewritten.
func TestExtraFile(t *testing.T) {
	dir := t.TempDir()
	cat := FullCatalog("6.12", "amd64")
	var so Case
	for _, c := range cat {
		if c.StructOps != nil {
			so = c
			break
		}
	}
	so.ID = "struct_ops-not-in-catalogue"
	if _, ok, err := extraFile(dir, "6.12", "amd64", append([]Case{so}, cat[:3]...)); ok || err != nil {
		t.Errorf("catalogue and struct_ops cases only: a file (%v, %v)", ok, err)
	}
	a := Case{ID: "fuzz-a", Func: "bpf_lsm_cred_free", Progs: []jit.Prog{{Kind: jit.LSM, FuncIP: true}}}
	f, ok, err := extraFile(dir, "6.12", "amd64", []Case{cat[0], a})
	if !ok || err != nil || f.name != ExtraCasesFile || string(f.data) != extraA+"\n" {
		t.Fatalf("first merge: %v %v %q", ok, err, f.data)
	}
	writeExtra(t, dir, "# found by kernel fuzz\n"+extraA+"\n"+extraB+"\n")
	if _, ok, err := extraFile(dir, "6.12", "amd64", append(cat[:2:2], a)); ok || err != nil {
		t.Errorf("fuzz-a captured again as it is: rewritten (%v, %v)", ok, err)
	}
	a2 := a
	a2.Progs = []jit.Prog{{Kind: jit.LSM}}
	c := Case{ID: "fuzz-c", Func: "tj_args1", Target: "bpf", Progs: []jit.Prog{{Kind: jit.Fexit}}}
	f, ok, err = extraFile(dir, "6.12", "amd64", []Case{c, a2, cat[5]})
	want := "# found by kernel fuzz\n" + `{"id":"fuzz-a","func":"bpf_lsm_cred_free","progs":[{"kind":"lsm"}]}` + "\n" + extraB + "\n" +
		`{"id":"fuzz-c","func":"tj_args1","progs":[{"kind":"fexit"}],"target":"bpf"}` + "\n"
	if !ok || err != nil || string(f.data) != want {
		t.Errorf("replace fuzz-a, add fuzz-c: %v %v\n%s\nwant\n%s", ok, err, f.data, want)
	}
	writeExtra(t, dir, extraA+"\nnot json\n")
	if _, _, err := extraFile(dir, "6.12", "amd64", []Case{c}); err == nil || !strings.Contains(err.Error(), ExtraCasesFile+":2:") {
		t.Errorf("a bad file: %v", err)
	}
}

// TestExtraFileWithMerge: a --merge's files carry the updated extra-cases.jsonl through
// mergeFiles, and the directory's other files stay.
func TestExtraFileWithMerge(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "info.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := mergeFiles(dir, []outFile{{"cases.jsonl", []byte(`{"id":"fuzz-a"}` + "\n")}, {"info.json", []byte(`{"new":1}`)}})
	if err == nil {
		files, err = withExtraFile(files, dir, "6.12", "amd64", []Case{{ID: "fuzz-a", Func: "bpf_lsm_cred_free", Progs: []jit.Prog{{Kind: jit.LSM, FuncIP: true}}}})
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := commitDir(context.Background(), dir, files, true); err != nil {
		t.Fatal(err)
	}
	got := readDir(t, dir)
	if got[ExtraCasesFile] != extraA+"\n" || got["info.json"] != "{}\n" || got["cases.jsonl"] != `{"id":"fuzz-a"}`+"\n" {
		t.Errorf("after the merge: %v", got)
	}
}
