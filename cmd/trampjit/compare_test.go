package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel"
)

// corpusCase reads one case of a committed corpus.
func corpusCase(t *testing.T, dir, id string) *kernel.CorpusCase {
	t.Helper()
	cases, err := kernel.ReadCorpus(corpora + dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cases {
		if cases[i].ID == id {
			return &cases[i]
		}
	}
	t.Fatalf("%s has no case %s", dir, id)
	return nil
}

// sectionSizes is End-Start of an image's sections, by name.
func sectionSizes(img *jit.Image) map[string]int {
	m := map[string]int{}
	for _, s := range img.Sections {
		m[s.Name] += s.End - s.Start
	}
	return m
}

// TestCompareColumnsAreTheKernels: a column of a captured request has the kernel's bytes
// (the corpus image), and its per-section counts are the generated image's section sizes, on
// all six arch x profile corpora.
func TestCompareColumnsAreTheKernels(t *testing.T) {
	const id = "bpf_fentry_test1-fentry-fexit"
	for _, dir := range []string{"6.12-amd64", "7.2-amd64", "6.12-arm64", "7.2-arm64", "6.12-riscv64", "7.2-riscv64"} {
		c := corpusCase(t, dir, id)
		cols, _, err := modelColumns([]*jit.Request{c.Request})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		col := cols[0]
		var code strings.Builder
		for _, in := range col.Insns {
			code.WriteString(in.Bytes)
		}
		if code.String() != c.Image {
			t.Errorf("%s: the column's bytes are not the kernel's image:\n%s\nwant\n%s", dir, code.String(), c.Image)
		}
		_, img, err := jit.Generate(c.Request)
		if err != nil {
			t.Fatal(err)
		}
		want := sectionSizes(img)
		got := map[string]int{}
		for _, s := range col.Sections {
			got[s.Name] += s.Bytes
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: section bytes %v, the image's sections %v", dir, got, want)
		}
		if col.Size != len(c.Image)/2 || col.Against != nil {
			t.Errorf("%s: size %d (kernel %d), compared with %v", dir, col.Size, len(c.Image)/2, col.Against)
		}
	}
}

// TestCompareMarksWhatDiffReports: the instructions compare marks between 6.12 and 7.2 on
// one architecture are the ones `trampjit diff DIR_A DIR_B` reports for the case
// (kernel.CompareCorpora on the two captures), on each architecture.
func TestCompareMarksWhatDiffReports(t *testing.T) {
	const id = "bpf_fentry_test1-fentry-fexit"
	only, err := kernel.ParseOnly(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"amd64", "arm64", "riscv64"} {
		a, err := kernel.ReadCorpus(corpora + "6.12-" + arch)
		if err != nil {
			t.Fatal(err)
		}
		b, err := kernel.ReadCorpus(corpora + "7.2-" + arch)
		if err != nil {
			t.Fatal(err)
		}
		cmp, err := kernel.CompareCorpora(a, b, &kernel.CompareOptions{Only: only})
		if err != nil {
			t.Fatal(err)
		}
		d := cmp.Cases[0]
		if d.Verdict != kernel.Differs {
			t.Fatalf("%s: verdict %s; the test needs a case whose images differ", arch, d.Verdict)
		}
		var wantA, wantB []string
		for _, s := range d.Sections {
			for _, r := range s.Rows {
				if r.Differs && r.A != nil {
					wantA = append(wantA, s.Name+"/"+r.A.String())
				}
				if r.Differs && r.B != nil {
					wantB = append(wantB, s.Name+"/"+r.B.String())
				}
			}
		}
		ca, cb := corpusCase(t, "6.12-"+arch, id), corpusCase(t, "7.2-"+arch, id)
		cols, _, err := modelColumns([]*jit.Request{ca.Request, cb.Request})
		if err != nil {
			t.Fatal(err)
		}
		markColumns(cols)
		if cols[1].Against == nil || *cols[1].Against != 0 {
			t.Fatalf("%s: 7.2 compared with %v, want column 0", arch, cols[1].Against)
		}
		gotA, gotB := marked(cols[0]), marked(cols[1])
		if len(wantA)+len(wantB) == 0 {
			t.Fatalf("%s: diff reports no differing instruction", arch)
		}
		if fmt.Sprint(gotA) != fmt.Sprint(sorted(wantA)) || fmt.Sprint(gotB) != fmt.Sprint(sorted(wantB)) {
			t.Errorf("%s: marked\n 6.12 %q\n 7.2  %q\ndiff reports\n 6.12 %q\n 7.2  %q", arch, gotA, gotB, sorted(wantA), sorted(wantB))
		}
	}
}

func marked(c compareColumn) []string {
	var out []string
	for _, in := range c.Insns {
		if in.Differs {
			out = append(out, in.Section+"/"+in.Insn.String())
		}
	}
	return sorted(out)
}

func sorted(s []string) []string { sort.Strings(s); return s }

// TestCompareRefusal: a request the 6.12 arm64 kernel refused (ENOTSUPP: more argument
// registers than its trampoline saves) is a column with the refusal, not a listing, and the
// other architectures' columns still have images.
func TestCompareRefusal(t *testing.T) {
	c := corpusCase(t, "6.12-arm64", "__bpf_sk_lookup-fentry")
	if c.Errno != "ENOTSUPP" {
		t.Fatalf("the capture says %q; the test wants a case the kernel refused with ENOTSUPP", c.Errno)
	}
	r := *c.Request
	r.Addrs = nil
	amd := r
	amd.Arch = "amd64"
	cols, _, err := modelColumns([]*jit.Request{&r, &amd})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cols[0].Refusal, c.Errno) || len(cols[0].Insns) != 0 {
		t.Errorf("arm64 column: refusal %q, %d instructions; the kernel said %s", cols[0].Refusal, len(cols[0].Insns), c.Errno)
	}
	if cols[1].Refusal != "" || len(cols[1].Insns) == 0 {
		t.Errorf("amd64 column: refusal %q, %d instructions", cols[1].Refusal, len(cols[1].Insns))
	}
}

// TestCompareCommand runs the command: JSON has every column's sections and counts (the
// generated images' section sizes), a corpus column is compared with the model of its
// profile, and bad flags exit 2.
func TestCompareCommand(t *testing.T) {
	btf := corpora + "7.2-riscv64/vmlinux.btf.xz"
	code, out, errOut := trampjit("compare", "--btf", btf, "--func", "bpf_fentry_test1", "--fentry", "1", "--fexit", "1",
		"--kernel", "6.12,7.2", "--arch", "riscv64", "--corpus", corpora+"7.2-riscv64", "--case", "bpf_fentry_test1-fentry-fexit", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res compareJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Columns) != 3 || res.Columns[2].Against == nil || *res.Columns[2].Against != 1 || res.Columns[1].Against == nil || *res.Columns[1].Against != 0 {
		t.Fatalf("columns: %s", out)
	}
	kc := corpusCase(t, "7.2-riscv64", "bpf_fentry_test1-fentry-fexit")
	for _, col := range res.Columns[:2] {
		req, err := jit.ParseRequest(strings.NewReader(fmt.Sprintf(`{"arch":"riscv64","kernel":%q,"btf":%q,"func":"bpf_fentry_test1","progs":[{"kind":"fentry"},{"kind":"fexit"}]}`, col.Kernel, btf)), ".")
		if err != nil {
			t.Fatal(err)
		}
		req.Addrs = kc.Request.Addrs // the model columns of the captured arch take the kernel's addresses
		_, img, err := jit.Generate(req)
		if err != nil {
			t.Fatal(err)
		}
		got, sum := map[string]int{}, 0
		for _, s := range col.Sections {
			got[s.Name] += s.Bytes
			sum += s.Insns
		}
		if fmt.Sprint(got) != fmt.Sprint(sectionSizes(img)) || sum != len(col.Insns) || col.Size != len(img.Code) {
			t.Errorf("%s: sections %v (%d insns of %d), image %v, %d bytes", col.Title, got, sum, len(col.Insns), sectionSizes(img), len(img.Code))
		}
		if bs, _ := hex.DecodeString(col.Insns[0].Bytes); len(bs) == 0 {
			t.Errorf("%s: first instruction has no bytes", col.Title)
		}
	}
	// The kernel's 7.2 image is the 7.2 model's at its addresses: nothing marked.
	var k, m strings.Builder
	for i, in := range res.Columns[2].Insns {
		k.WriteString(in.Bytes)
		if i < len(res.Columns[1].Insns) {
			m.WriteString(res.Columns[1].Insns[i].Bytes)
		}
		if in.Differs {
			t.Errorf("kernel column: %s marked", in.Insn.String())
		}
	}
	if k.String() != kc.Image || m.String() != kc.Image {
		t.Errorf("kernel column %s, model column %s, the capture %s", k.String(), m.String(), kc.Image)
	}

	// The 7.2 column's marks answer its comparison with 6.12 alone, whatever is compared with it.
	code, out, errOut = trampjit("compare", "--btf", btf, "--func", "bpf_fentry_test1", "--fentry", "1", "--fexit", "1",
		"--kernel", "6.12,7.2", "--arch", "riscv64", "--format", "json")
	var two compareJSON
	if err := json.Unmarshal([]byte(out), &two); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, errOut)
	}
	// (Without the kernel column the model is at other addresses: compared without offsets.)
	noOffsets := func(c compareColumn) (out []string) {
		for _, in := range c.Insns {
			if in.Differs {
				out = append(out, in.Section+"/"+in.Bytes+" "+in.Asm)
			}
		}
		return out
	}
	if a, b := noOffsets(res.Columns[1]), noOffsets(two.Columns[1]); len(b) == 0 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("7.2 marks with a kernel column %q, without %q", a, b)
	}

	for _, args := range [][]string{
		{"compare", "--proto", "int f(int)", "--fentry", "1", "--arch", "sparc"},
		{"compare", "--proto", "int f(int)", "--fentry", "1", "--kernel", "5.4"},
		{"compare", "--proto", "int f(int)", "--fentry", "1", "--corpus", corpora + "7.2-amd64"},
		{"compare", "--proto", "int f(int)", "--fentry", "1", "--format", "svg"},
		{"compare", "--proto", "int f(int)"},
		{"compare", "--proto", "int f(int)", "--fentry", "1", "--bogus"},
	} {
		if code, _, errOut := trampjit(args...); code != exitUsage || !strings.HasPrefix(errOut, "trampjit compare: ") {
			t.Errorf("%q: exit %d, %q; want exit %d and an error naming the problem", args, code, errOut, exitUsage)
		}
	}
}
