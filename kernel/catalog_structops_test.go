package kernel

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
)

// TestStructOpsCatalogMatchesBTF checks the catalogue's tables and member lists against each
// corpus's own BTF: a table is there when bpf_struct_ops_<ops> is, its members are the ops
// struct's function pointers in index order, and every table the BTF has is captured (6.1's
// bpf_dummy_ops excepted: without BPF_F_LINK no map can build it).
func TestStructOpsCatalogMatchesBTF(t *testing.T) {
	for _, p := range btfmodel.Profiles {
		for _, a := range btfmodel.AllArches {
			tag := string(p.Kernel) + "-" + string(a)
			if _, err := os.Stat(filepath.Join("..", "testdata", "kernel", tag, "vmlinux.btf.xz")); err != nil {
				continue
			}
			spec := corpusBTF(t, tag)
			inBTF := map[string][]string{}
			for typ, err := range spec.All() {
				if err != nil {
					t.Fatal(err)
				}
				s, ok := typ.(*btf.Struct)
				if !ok || !strings.HasPrefix(s.Name, "bpf_struct_ops_") {
					continue
				}
				ops := strings.TrimPrefix(s.Name, "bpf_struct_ops_")
				var st *btf.Struct
				if spec.TypeByName(ops, &st) != nil {
					continue
				}
				var fns []string
				for _, m := range st.Members {
					if p, ok := btf.UnderlyingType(m.Type).(*btf.Pointer); ok {
						if _, ok := btf.UnderlyingType(p.Target).(*btf.FuncProto); ok {
							fns = append(fns, m.Name)
						}
					}
				}
				inBTF[ops] = fns
			}
			cat := map[string][]string{}
			for _, tb := range structOpsTables(string(p.Kernel), string(a)) {
				cat[tb.ops] = tb.members
				if _, ok := structOpsRecipes[tb.ops]; !ok {
					t.Errorf("%s: table %s has no recipe", tag, tb.ops)
				}
			}
			if p.Kernel == btfmodel.Kernel61 {
				delete(inBTF, "bpf_dummy_ops")
			}
			if !reflect.DeepEqual(inBTF, cat) {
				t.Errorf("%s: catalogue tables\n%v\nBTF\n%v", tag, cat, inBTF)
			}
			cases := StructOpsCatalog(string(p.Kernel), string(a))
			if err := validateCases(cases); err != nil {
				t.Errorf("%s: %v", tag, err)
			}
			if n := len(cases); n < 26 {
				t.Errorf("%s: %d struct_ops cases", tag, n)
			}
		}
	}
}

func TestMergeCases(t *testing.T) {
	old := []byte(`{"id":"a","image":"01"}` + "\n" + `{"id":"b","image":"02"}` + "\n" + `{"id":"c"}` + "\n")
	add := []byte(`{"id":"b","image":"ff"}` + "\n" + `{"id":"d"}` + "\n")
	got, err := mergeCases(old, add)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"a","image":"01"}` + "\n" + `{"id":"b","image":"ff"}` + "\n" + `{"id":"c"}` + "\n" + `{"id":"d"}` + "\n"
	if string(got) != want {
		t.Errorf("merged\n%s\nwant\n%s", got, want)
	}
	if _, err := mergeCases([]byte("{\"image\":\"01\"}\n"), add); err == nil || !strings.Contains(err.Error(), "without an id") {
		t.Errorf("a line without an id: %v", err)
	}
}

// TestMergeFiles: a merge keeps the directory's own info.json and writes one that is missing.
func TestMergeFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cases.jsonl"), []byte(`{"id":"x"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "info.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := mergeFiles(dir, []outFile{{"cases.jsonl", []byte(`{"id":"y"}` + "\n")}, {"info.json", []byte(`{"new":1}`)}, {"kernel.json", []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.name)
		if f.name == "cases.jsonl" && string(f.data) != `{"id":"x"}`+"\n"+`{"id":"y"}`+"\n" {
			t.Errorf("cases.jsonl: %q", f.data)
		}
	}
	if strings.Join(names, " ") != "cases.jsonl kernel.json" {
		t.Errorf("files %v, want cases.jsonl and the missing kernel.json", names)
	}
}

func TestStructOpsCaseValidation(t *testing.T) {
	ok := `{"id":"s","func":"tcp_congestion_ops.ssthresh","progs":[{"kind":"struct_ops"}],"struct_ops":{"ops":"tcp_congestion_ops","member":"ssthresh","map":1}}`
	if _, err := ParseCases(strings.NewReader(ok)); err != nil {
		t.Errorf("valid struct_ops case: %v", err)
	}
	for _, c := range []struct{ line, want string }{
		{`{"id":"s","func":"x.y","progs":[{"kind":"struct_ops"}],"struct_ops":{"ops":"x","member":"y"}}`, "ops, member and map (1, 2, ...) are required"},
		{`{"id":"s","func":"x.y","progs":[{"kind":"fentry"}],"struct_ops":{"ops":"x","member":"y","map":1}}`, "exactly one program, of kind struct_ops"},
		{`{"id":"s","func":"x.y","progs":[{"kind":"struct_ops"},{"kind":"struct_ops"}],"struct_ops":{"ops":"x","member":"y","map":1}}`, "exactly one program"},
		{`{"id":"s","func":"f","progs":[{"kind":"struct_ops"}]}`, `kind "struct_ops"`},
	} {
		if _, err := ParseCases(strings.NewReader(c.line)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.line, err, c.want)
		}
	}
}
