package kernel

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

var (
	corpusMu    sync.Mutex
	corpusCache = map[string][]CorpusCase{}
)

// readCommitted reads testdata/kernel/<name> once per test binary.
func readCommitted(t testing.TB, name string) []CorpusCase {
	t.Helper()
	corpusMu.Lock()
	defer corpusMu.Unlock()
	if c, ok := corpusCache[name]; ok {
		return c
	}
	c, err := ReadCorpus(filepath.Join(corpusRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	corpusCache[name] = c
	return c
}

// editedCorpus is a committed corpus with one case's image changed by edit (its BTF still
// resolved against the committed directory).
func editedCorpus(t *testing.T, name, id string, edit func(code []byte) []byte) []CorpusCase {
	t.Helper()
	return editedCase(t, name, id, func(m map[string]json.RawMessage) {
		var img string
		json.Unmarshal(m["image"], &img)
		code, _ := hex.DecodeString(img)
		m["image"], _ = json.Marshal(hex.EncodeToString(edit(code)))
	})
}

// editedCase is a committed corpus with one case's JSON fields changed by edit.
func editedCase(t *testing.T, name, id string, edit func(map[string]json.RawMessage)) []CorpusCase {
	t.Helper()
	dir := filepath.Join(corpusRoot, name)
	raw, err := os.ReadFile(filepath.Join(dir, "cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	found := false
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		if string(m["id"]) == `"`+id+`"` {
			edit(m)
			line, _ = json.Marshal(m)
			found = true
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	if !found {
		t.Fatalf("%s has no case %s", name, id)
	}
	cases, err := ParseCorpus(&out, name+"(edited)", dir)
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

func caseDiff(t *testing.T, cmp *Comparison, id string) *CaseDiff {
	t.Helper()
	for i := range cmp.Cases {
		if cmp.Cases[i].ID == id {
			return &cmp.Cases[i]
		}
	}
	t.Fatalf("no case %s in the comparison", id)
	return nil
}

func imageHex(t *testing.T, cases []CorpusCase, id string, off, n int) string {
	t.Helper()
	for _, c := range cases {
		if c.ID == id {
			return c.Image[2*off : 2*(off+n)]
		}
	}
	t.Fatalf("no case %s", id)
	return ""
}

// TestCompare612With72 compares the committed 6.12 and 7.2 captures. The expected values
// were read off the captures: the verdict counts from the two cases.jsonl files (ids, and
// which side refused), the sections from `trampjit gen` listings of
// bpf_fentry_test1-fentry-fexit's two requests. 7.2 starts every program block with a NOP
// (x86 NOP5, arm64 nop) where 6.12 had the ip_after_call NOP after the return value store,
// does not skip a frame in the epilogue (x86 add $0x8,%rsp; arm64 add x30,x9,#0 became mov
// x30,x9), and loads nr_args into w10 (arm64 movz 32-bit) where 6.12 used x10.
func TestCompare612With72(t *testing.T) {
	for _, tc := range []struct {
		arch         string
		changed      []string // bpf_fentry_test1-fentry-fexit's sections that differ
		firstOff     int
		firstA       string // the instruction bytes there, from the captures
		firstB       string
		firstSection string
		catalogue    []string // sections changed in most differing cases
	}{
		{"amd64", []string{"fentry 1", "ip_after_call", "fexit 2", "epilogue"}, 0x28, "31ff", "0f1f440000", "fentry 1",
			[]string{"fentry N", "ip_after_call", "fexit N", "epilogue"}},
		{"arm64", []string{"nr_args", "fentry 1", "ip_after_call", "fexit 2", "epilogue"}, 0x14, "2a0080d2", "2a008052", "nr_args",
			[]string{"nr_args", "fentry N", "ip_after_call", "fexit N", "epilogue"}},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			a, b := readCommitted(t, "6.12-"+tc.arch), readCommitted(t, "7.2-"+tc.arch)
			cmp, err := CompareCorpora(a, b, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Verdict classes from the captures alone.
			byID := map[string]*CorpusCase{}
			for i := range b {
				byID[b[i].ID] = &b[i]
			}
			inA := map[string]bool{}
			want := map[string]int{}
			for i := range a {
				inA[a[i].ID] = true
				cb := byID[a[i].ID]
				switch {
				case cb == nil:
					want["only-in-a"]++
				case a[i].Error != "" && cb.Error != "":
					want["both refused"]++
				case a[i].Error != "":
					want["refused-by-a"]++
				case cb.Error != "":
					want["refused-by-b"]++
				default:
					want["both images"]++
				}
			}
			for i := range b {
				if !inA[b[i].ID] {
					want["only-in-b"]++
				}
			}
			v := cmp.Summary.Verdicts
			got := map[string]int{
				"only-in-a": v[OnlyInA], "only-in-b": v[OnlyInB], "refused-by-a": v[RefusedByA], "refused-by-b": v[RefusedByB],
				"both refused": v[RefusedByBoth] + v[RefusedDifferently], "both images": v[Identical] + v[SameShape] + v[Differs],
			}
			for k, n := range want {
				if got[k] != n {
					t.Errorf("%s: %d cases, the captures have %d", k, got[k], n)
				}
			}
			if len(cmp.Cases) != len(a)+want["only-in-b"] {
				t.Errorf("%d cases compared, want the union's %d", len(cmp.Cases), len(a)+want["only-in-b"])
			}
			if cmp.Agrees() {
				t.Error("6.12 and 7.2 agree: 7.2 changed the trampoline")
			}
			if cmp.A.Release != "6.12.117+deb13-cloud-"+tc.arch || cmp.B.Release != "7.2.13+deb14-cloud-"+tc.arch {
				t.Errorf("releases %q, %q", cmp.A.Release, cmp.B.Release)
			}
			if !slices.Equal(cmp.A.Profiles, []string{"6.12"}) || !slices.Equal(cmp.B.Profiles, []string{"7.2"}) {
				t.Errorf("profiles %v, %v", cmp.A.Profiles, cmp.B.Profiles)
			}

			const id = "bpf_fentry_test1-fentry-fexit"
			d := caseDiff(t, cmp, id)
			if d.Verdict != Differs || !slices.Equal(d.Changed, tc.changed) {
				t.Errorf("%s: %s, sections %q; want differs in %q", id, d.Verdict, d.Changed, tc.changed)
			}
			if d.FirstA == nil || d.FirstB == nil || d.FirstA.Offset != tc.firstOff || d.FirstB.Offset != tc.firstOff ||
				d.FirstA.Bytes != tc.firstA || d.FirstB.Bytes != tc.firstB || d.First != tc.firstSection {
				t.Errorf("%s: first difference %v | %v in %q; want %#x %s | %s in %s", id, d.FirstA, d.FirstB, d.First, tc.firstOff, tc.firstA, tc.firstB, tc.firstSection)
			}
			if imageHex(t, a, id, tc.firstOff, len(tc.firstA)/2) != tc.firstA || imageHex(t, b, id, tc.firstOff, len(tc.firstB)/2) != tc.firstB {
				t.Errorf("%s: the expected bytes are not the captures'", id)
			}
			for _, s := range tc.catalogue {
				if n := cmp.Summary.Sections[s]; 2*n < v[Differs] {
					t.Errorf("section %q changed in %d of %d differing cases, want most: %v", s, n, v[Differs], cmp.Summary.Sections)
				}
			}
			if tc.arch == "arm64" && cmp.Summary.Sections["nr_args"] != v[Differs] {
				t.Errorf("nr_args changed in %d of %d differing cases: every 7.2 arm64 image loads it with mov w10", cmp.Summary.Sections["nr_args"], v[Differs])
			}
			for _, s := range []string{"fentry 1", "fexit 1", "?"} {
				if cmp.Summary.Sections[s] != 0 {
					t.Errorf("summary has unfolded or unlabelled section %q", s)
				}
			}
			// Refusals: the same reason but for BTF ids, and different reasons (read off the logs).
			if d := caseDiff(t, cmp, "bpf_lsm_inode_getsecurity-lsm"); d.Verdict != RefusedByBoth {
				t.Errorf("bpf_lsm_inode_getsecurity-lsm: %s (%s | %s), want refused by both", d.Verdict, d.A.Refusal, d.B.Refusal)
			}
			if d := caseDiff(t, cmp, "do_exit-fexit"); d.Verdict != RefusedDifferently || !strings.Contains(d.B.Refusal, "fsession") {
				t.Errorf("do_exit-fexit: %s (%s | %s), want refused differently", d.Verdict, d.A.Refusal, d.B.Refusal)
			}
		})
	}
}

func TestCompareSelf(t *testing.T) {
	for _, name := range []string{"6.12-amd64", "7.2-arm64"} {
		c := readCommitted(t, name)
		cmp, err := CompareCorpora(c, c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !cmp.Agrees() || len(cmp.Summary.Sections) != 0 || cmp.Summary.Verdicts[Identical]+cmp.Summary.Verdicts[RefusedByBoth] != len(c) {
			t.Errorf("%s against itself: %v, sections %v", name, cmp.Summary.Verdicts, cmp.Summary.Sections)
		}
	}
}

// TestCompareEdited changes one image of a committed corpus: an embedded address (same
// shape), or one instruction (differs there, in the section the gen listing shows).
func TestCompareEdited(t *testing.T) {
	const id = "bpf_fentry_test1-fentry-fexit"
	set := func(off int, b ...byte) func([]byte) []byte {
		return func(c []byte) []byte { copy(c[off:], b); return c }
	}
	for _, tc := range []struct {
		name, corpus string
		edit         func([]byte) []byte
		verdict      CaseVerdict
		off          int    // first differing instruction
		section      string // its section
	}{
		// 6.12-amd64 listing: 23: e8 08 e1 68 c4  callq __bpf_tramp_enter <tramp_enter>
		{"x86 call target", "6.12-amd64", set(0x24, 0x11, 0x22), SameShape, 0, ""},
		// 2e: 48 bf ...  mov $prog#1,%rdi <fentry 1>: the imm64
		{"x86 movabs", "6.12-amd64", set(0x30, 0x42), SameShape, 0, ""},
		// 5c: 48 89 de  mov %rbx,%rsi in fentry 1 becomes mov %rbx,%rdi
		{"x86 register", "6.12-amd64", set(0x5e, 0xdf), Differs, 0x5c, "fentry 1"},
		// 4: 48 83 ec 30  sub $0x30,%rsp <prologue>
		{"x86 frame size", "6.12-amd64", set(0x7, 0x38), Differs, 0x4, "prologue"},
		// 6.12-arm64 listing: 78: c8 fd ff 97  bl bpf_func#1 <fentry 1>
		{"arm64 bl", "6.12-arm64", set(0x78, 0x01, 0x02), SameShape, 0, ""},
		// 2c: 80 6e a0 f2  movk x0, #0x374, lsl #16 (im) <tramp_enter>
		{"arm64 movk", "6.12-arm64", set(0x2d, 0x7e), SameShape, 0, ""},
		// 30: movk x0, #0x1c00 removed: the same load of an address with a zero low word
		{"arm64 shorter load", "6.12-arm64", func(c []byte) []byte { return append(c[:0x30:0x30], c[0x34:]...) }, SameShape, 0, ""},
		// b0: ff 03 00 f9  str xzr, [sp] <fexit 2> becomes str xzr, [sp,#8]
		{"arm64 store", "6.12-arm64", set(0xb1, 0x07), Differs, 0xb0, "fexit 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := readCommitted(t, tc.corpus)
			edited := editedCorpus(t, tc.corpus, id, tc.edit)
			cmp, err := CompareCorpora(orig, edited, nil)
			if err != nil {
				t.Fatal(err)
			}
			d := caseDiff(t, cmp, id)
			if d.Verdict != tc.verdict {
				t.Fatalf("%s, want %s (%s)", d.Verdict, tc.verdict, d.Note)
			}
			if n := cmp.Summary.Verdicts[Identical] + cmp.Summary.Verdicts[RefusedByBoth]; n != len(orig)-1 {
				t.Errorf("%d other cases identical, want %d", n, len(orig)-1)
			}
			if tc.verdict != Differs {
				return
			}
			if d.FirstA == nil || d.FirstA.Offset != tc.off || d.First != tc.section || !slices.Equal(d.Changed, []string{tc.section}) {
				t.Errorf("first difference %v in %q, sections %q; want %#x in %q only", d.FirstA, d.First, d.Changed, tc.off, tc.section)
			}
			if cmp.Summary.Sections[foldSection(tc.section)] != 1 {
				t.Errorf("summary %v, want %s once", cmp.Summary.Sections, foldSection(tc.section))
			}
		})
	}
}

func TestCompareBadInput(t *testing.T) {
	amd, arm := readCommitted(t, "6.12-amd64"), readCommitted(t, "6.12-arm64")
	if _, err := CompareCorpora(amd, arm, nil); err == nil || !strings.Contains(err.Error(), "amd64") || !strings.Contains(err.Error(), "arm64") {
		t.Errorf("amd64 against arm64: %v", err)
	}
	only, _ := ParseOnly("bpf_fentry_test1-*,no_such_case")
	if _, err := CompareCorpora(amd, amd, &CompareOptions{Only: only}); err == nil || !strings.Contains(err.Error(), "no_such_case") {
		t.Errorf("--only with an unmatched id: %v", err)
	}
	only, _ = ParseOnly("bpf_fentry_test1-*")
	cmp, err := CompareCorpora(amd, amd, &CompareOptions{Only: only})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range cmp.Cases {
		if !strings.HasPrefix(d.ID, "bpf_fentry_test1-") {
			t.Errorf("--only bpf_fentry_test1-* compared %s", d.ID)
		}
	}
	if len(cmp.Cases) < 3 {
		t.Errorf("--only bpf_fentry_test1-*: %d cases", len(cmp.Cases))
	}
}

func TestFoldSection(t *testing.T) {
	for in, want := range map[string]string{"fentry 12": "fentry N", "fexit 1": "fexit N", "fmod_ret 3": "fmod_ret N",
		"retval stash": "retval stash", "nr_args": "nr_args", "?": "?",
		"struct_ops 1": "struct_ops N"} {
		if got := foldSection(in); got != want {
			t.Errorf("foldSection(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCompareOneSideUnlabelled: B's request names 6.12, whose model has no fsession programs,
// so B's image has no sections of its own and takes A's through the alignment; the one
// changed instruction (0x67: mov %rbx,%rsi in fentry 1 of the 7.2 gen listing, made mov
// %rbx,%rdi) is then the only difference.
func TestCompareOneSideUnlabelled(t *testing.T) {
	const id = "bpf_fentry_test1-fsession"
	a := readCommitted(t, "7.2-amd64")
	b := editedCase(t, "7.2-amd64", id, func(m map[string]json.RawMessage) {
		var req map[string]json.RawMessage
		json.Unmarshal(m["request"], &req)
		req["kernel"] = json.RawMessage(`"6.12"`)
		m["request"], _ = json.Marshal(req)
		var img string
		json.Unmarshal(m["image"], &img)
		code, _ := hex.DecodeString(img)
		code[0x69] = 0xdf
		m["image"], _ = json.Marshal(hex.EncodeToString(code))
	})
	cmp, err := CompareCorpora(a, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := caseDiff(t, cmp, id)
	if d.Verdict != Differs || d.FirstB == nil || d.FirstB.Offset != 0x67 || !slices.Equal(d.Changed, []string{"fentry 1"}) ||
		!strings.Contains(d.B.Note, "6.12 model refuses") || !strings.Contains(d.B.Note, "labelled through A's image") || d.A.Note != "" {
		t.Errorf("%s at %v, sections %q; notes %q, %q", d.Verdict, d.FirstB, d.Changed, d.A.Note, d.B.Note)
	}
}
