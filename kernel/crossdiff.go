package kernel

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
)

// CaseVerdict is how one case of two corpora compares (CompareCorpora).
type CaseVerdict string

// The verdicts of comparing kernel with kernel, case by case.
const (
	Identical          CaseVerdict = "identical"           // the same image bytes
	RefusedByBoth      CaseVerdict = "refused-by-both"     // both refused, with the same kernel message
	RefusedDifferently CaseVerdict = "refused-differently" // both refused, with different messages
	SameShape          CaseVerdict = "same-shape"          // the same instructions at other addresses
	Differs            CaseVerdict = "differs"             // both built an image; the instructions differ
	RefusedByA         CaseVerdict = "refused-by-a"        // A refused, B built an image
	RefusedByB         CaseVerdict = "refused-by-b"
	OnlyInA            CaseVerdict = "only-in-a" // B's catalogue has no such case
	OnlyInB            CaseVerdict = "only-in-b"
	// NotCapturedBy: the guest of one side (or both) died on the case; nothing to compare.
	NotCapturedBy CaseVerdict = "not-captured"
)

// CaseVerdicts lists the verdicts in the order a summary counts them.
var CaseVerdicts = []CaseVerdict{Identical, RefusedByBoth, SameShape, Differs, RefusedDifferently,
	RefusedByA, RefusedByB, OnlyInA, OnlyInB, NotCapturedBy}

// Agrees reports whether v means the two kernels do the same: identical bytes or refusal,
// or the same instructions at other addresses.
func (v CaseVerdict) Agrees() bool { return v == Identical || v == RefusedByBoth || v == SameShape }

// Text is the verdict as a report prints it: "refused by A only".
func (v CaseVerdict) Text() string {
	switch v {
	case RefusedByA:
		return "refused by A only"
	case RefusedByB:
		return "refused by B only"
	case OnlyInA:
		return "only in A"
	case OnlyInB:
		return "only in B"
	}
	return strings.ReplaceAll(string(v), "-", " ")
}

// CompareOptions selects what CompareCorpora compares and with which model.
type CompareOptions struct {
	Only *Only // the cases to compare (nil: all); a pattern matching no case is an error
	// Profile is the model whose sections label both kernels' images; "" labels each case
	// with its request's own profile.
	Profile btfmodel.Kernel
}

// CorpusSide describes one of the two compared corpora.
type CorpusSide struct {
	Dir      string          `json:"dir,omitempty"` // set by the caller that read it
	Arch     btfmodel.Arch   `json:"arch"`
	Release  string          `json:"release,omitempty"` // uname -r of the captured kernel
	Profiles []string        `json:"profiles"`          // the profiles its requests name
	Model    btfmodel.Kernel `json:"model,omitempty"`   // CompareOptions.Profile, if given
	Cases    int             `json:"cases"`
}

// CaseSide is one kernel's result for a case.
type CaseSide struct {
	Size    int    `json:"size,omitempty"`    // image bytes
	Refusal string `json:"refusal,omitempty"` // errno and the kernel's message
	Profile string `json:"profile,omitempty"` // the model that labelled its sections
	Note    string `json:"note,omitempty"`    // why the labels are not an alignment (Labelled.Note)
}

// Row is one line of a section's side-by-side listing: an instruction of A, of B, or of
// both (aligned). Differs marks an instruction the other kernel does not have there.
type Row struct {
	A       *Insn `json:"a,omitempty"`
	B       *Insn `json:"b,omitempty"`
	Differs bool  `json:"differs,omitempty"`
}

// SectionDiff is one trampoline section of both kernels' images.
type SectionDiff struct {
	Name    string `json:"name"`
	Changed bool   `json:"changed"`
	Rows    []Row  `json:"rows"`
}

// CaseDiff is how one case compares.
type CaseDiff struct {
	ID      string      `json:"id"`
	Verdict CaseVerdict `json:"verdict"`
	A       *CaseSide   `json:"a,omitempty"`
	B       *CaseSide   `json:"b,omitempty"`
	// For Differs: the first instruction (in offset order) where the images differ, its
	// section (A's label), the sections whose instructions differ, and every section's rows.
	FirstA   *Insn         `json:"first_a,omitempty"`
	FirstB   *Insn         `json:"first_b,omitempty"`
	First    string        `json:"first_section,omitempty"`
	Changed  []string      `json:"changed_sections,omitempty"`
	Sections []SectionDiff `json:"sections,omitempty"`
	Note     string        `json:"note,omitempty"`
}

// CompareSummary counts the verdicts, and the sections that changed across the catalogue:
// section name (per-program sections folded: "fentry N") -> cases where it differs.
type CompareSummary struct {
	Verdicts map[CaseVerdict]int `json:"verdicts"`
	Sections map[string]int      `json:"sections_changed"`
}

// Comparison is CompareCorpora's result.
type Comparison struct {
	A       CorpusSide     `json:"a"`
	B       CorpusSide     `json:"b"`
	Cases   []CaseDiff     `json:"cases"`
	Summary CompareSummary `json:"summary"`
}

// Agrees reports whether every case is identical or the same shape.
func (c *Comparison) Agrees() bool {
	for _, d := range c.Cases {
		if !d.Verdict.Agrees() {
			return false
		}
	}
	return true
}

// ChangedSections lists Summary.Sections' names, most often changed first.
func (c *Comparison) ChangedSections() []string {
	names := make([]string, 0, len(c.Summary.Sections))
	for n := range c.Summary.Sections {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		ni, nj := c.Summary.Sections[names[i]], c.Summary.Sections[names[j]]
		return ni > nj || ni == nj && names[i] < names[j]
	})
	return names
}

// CompareCorpora compares two kernels' captures case by case (the union of their ids: A's
// order, then B's extras). Two corpora of different architectures are an error.
func CompareCorpora(a, b []CorpusCase, opts *CompareOptions) (*Comparison, error) {
	if opts == nil {
		opts = &CompareOptions{}
	}
	cmp := &Comparison{A: describeCorpus(a, opts.Profile), B: describeCorpus(b, opts.Profile),
		Summary: CompareSummary{Verdicts: map[CaseVerdict]int{}, Sections: map[string]int{}}}
	if cmp.A.Arch != cmp.B.Arch {
		return nil, fmt.Errorf("A is an %s corpus and B an %s one: compare captures of one architecture", cmp.A.Arch, cmp.B.Arch)
	}
	for _, side := range [][]CorpusCase{a, b} {
		for i := range side {
			if side[i].Request.Arch != cmp.A.Arch {
				return nil, fmt.Errorf("case %s is %s in a corpus of %s cases: one corpus, one architecture", side[i].ID, side[i].Request.Arch, cmp.A.Arch)
			}
		}
	}
	inB := map[string]*CorpusCase{}
	inA := map[string]bool{}
	var ids []string
	for i := range a {
		inA[a[i].ID] = true
		ids = append(ids, a[i].ID)
	}
	for i := range b {
		inB[b[i].ID] = &b[i]
		if !inA[b[i].ID] {
			ids = append(ids, b[i].ID)
		}
	}
	if err := opts.Only.Unmatched(ids); err != nil {
		return nil, err
	}
	for i := range a {
		if opts.Only.Match(a[i].ID) {
			cmp.add(compareCase(&a[i], inB[a[i].ID], opts.Profile))
		}
	}
	for i := range b {
		if !inA[b[i].ID] && opts.Only.Match(b[i].ID) {
			cmp.add(compareCase(nil, &b[i], opts.Profile))
		}
	}
	return cmp, nil
}

func (c *Comparison) add(d CaseDiff) {
	c.Cases = append(c.Cases, d)
	c.Summary.Verdicts[d.Verdict]++
	seen := map[string]bool{}
	for _, s := range d.Changed {
		if f := foldSection(s); !seen[f] {
			seen[f] = true
			c.Summary.Sections[f]++
		}
	}
}

// foldSection names a per-program section for the whole catalogue: "fentry 2" and
// "fexit 1" become "fentry N" and "fexit N"; other names stay.
func foldSection(name string) string {
	i := strings.LastIndexByte(name, ' ')
	if i < 0 || i == len(name)-1 {
		return name
	}
	for _, r := range name[i+1:] {
		if r < '0' || r > '9' {
			return name
		}
	}
	return name[:i] + " N"
}

func describeCorpus(cases []CorpusCase, profile btfmodel.Kernel) CorpusSide {
	s := CorpusSide{Cases: len(cases), Model: profile}
	seen := map[string]bool{}
	for i := range cases {
		c := &cases[i]
		if s.Arch == "" {
			s.Arch = c.Request.Arch
		}
		if s.Release == "" && c.CPU != nil {
			s.Release = c.CPU.Release
		}
		if k := string(c.Request.Kernel); !seen[k] {
			seen[k] = true
			s.Profiles = append(s.Profiles, k)
		}
	}
	return s
}

// refusal is a refused case's errno and the kernel's message; "" for an image.
func refusal(c *CorpusCase) string {
	if c.Error == "" && c.Image != "" {
		return ""
	}
	msg := firstOf(c.KernelMessage(), c.Error, "no image and no error recorded")
	if c.Errno != "" && !strings.Contains(msg, c.Errno) {
		return c.Errno + ": " + msg
	}
	return msg
}

// btfID is a BTF type id in a kernel message ("attach_btf_id 55849 points to disabled
// hook"): each kernel's BTF numbers its types differently, as its addresses differ.
var btfID = regexp.MustCompile(`btf_id \d+`)

// sameRefusal compares two refusals by the kernel's message (the verifier log's last line,
// BTF ids aside), else by errno.
func sameRefusal(a, b *CorpusCase) bool {
	ma, mb := a.KernelMessage(), b.KernelMessage()
	if ma != "" || mb != "" {
		return btfID.ReplaceAllString(ma, "btf_id N") == btfID.ReplaceAllString(mb, "btf_id N")
	}
	return a.Errno == b.Errno
}

func side(c *CorpusCase) *CaseSide {
	s := &CaseSide{Size: len(c.Image) / 2, Refusal: refusal(c)}
	if s.Refusal != "" {
		s.Size = 0
	}
	return s
}

func compareCase(a, b *CorpusCase, profile btfmodel.Kernel) CaseDiff {
	switch {
	case b == nil:
		return CaseDiff{ID: a.ID, Verdict: OnlyInA, A: side(a)}
	case a == nil:
		return CaseDiff{ID: b.ID, Verdict: OnlyInB, B: side(b)}
	}
	d := CaseDiff{ID: a.ID, A: side(a), B: side(b)}
	if !a.Captured() || !b.Captured() {
		who := "A's"
		switch {
		case !a.Captured() && !b.Captured():
			who = "both guests"
		case !b.Captured():
			who = "B's"
		}
		if who != "both guests" {
			who += " guest"
		}
		d.Verdict, d.Note = NotCapturedBy, who+" failed on this case (stage guest): recapture it"
		return d
	}
	ra, rb := d.A.Refusal != "", d.B.Refusal != ""
	switch {
	case ra && rb && sameRefusal(a, b):
		d.Verdict = RefusedByBoth
		return d
	case ra && rb:
		d.Verdict = RefusedDifferently
		return d
	case ra:
		d.Verdict = RefusedByA
		return d
	case rb:
		d.Verdict = RefusedByB
		return d
	}
	ca, _ := hex.DecodeString(a.Image) // ParseCorpus checked both
	cb, _ := hex.DecodeString(b.Image)
	if bytes.Equal(ca, cb) {
		d.Verdict = Identical
		return d
	}
	if SameModuloAddresses(string(a.Request.Arch), cb, ca) == nil {
		d.Verdict = SameShape
		return d
	}
	if sameLoads(a.Request.Arch, ca, cb) {
		d.Verdict = SameShape
		d.Note = "an address load of another length (arm64 mov sequence): the same code at other addresses"
		return d
	}
	d.Verdict = Differs
	la, err := LabelSections(a, profile)
	if err != nil {
		d.Note = err.Error()
		return d
	}
	lb, err := LabelSections(b, profile)
	if err != nil {
		d.Note = err.Error()
		return d
	}
	// One side without sections (its model refuses the request): it takes the other's
	// through the alignment of the two images, so that only what differs is counted.
	switch {
	case la.Unlabelled && !lb.Unlabelled && labelFrom(la.Insns, lb.Insns):
		la.Note += "; labelled through B's image"
	case lb.Unlabelled && !la.Unlabelled && labelFrom(lb.Insns, la.Insns):
		lb.Note += "; labelled through A's image"
	}
	d.A.Profile, d.A.Note = string(la.Profile), la.Note
	d.B.Profile, d.B.Note = string(lb.Profile), lb.Note
	d.FirstA, d.FirstB, d.First = firstDifference(la.Insns, lb.Insns)
	d.Sections = sectionDiffs(la.Insns, lb.Insns)
	for _, s := range d.Sections {
		if s.Changed {
			d.Changed = append(d.Changed, s.Name)
		}
	}
	if pa, pb := la.prototype(), lb.prototype(); pa != pb {
		d.Note = fmt.Sprintf("the traced function differs: A %s, B %s", pa, pb)
	}
	return d
}

// sameLoads reports whether two arm64 images have the same instructions once each address
// load is one instruction (joinMovRuns): SameModuloAddresses compares word by word, so a
// load one word shorter is a difference there.
func sameLoads(arch btfmodel.Arch, a, b []byte) bool {
	if arch != "arm64" {
		return false
	}
	ia, err := decodeImage(arch, a, 0, nil)
	if err != nil {
		return false
	}
	ib, err := decodeImage(arch, b, 0, nil)
	if err != nil || len(ia) != len(ib) {
		return false
	}
	for i := range ia {
		if ia[i].key != ib[i].key {
			return false
		}
	}
	return true
}

// firstDifference is the first instruction, in offset order, where a and b differ modulo
// addresses (nil for the end of an image), and its section.
func firstDifference(a, b []Insn) (*Insn, *Insn, string) {
	i := 0
	for i < len(a) && i < len(b) && a[i].key == b[i].key {
		i++
	}
	var fa, fb *Insn
	sec := ""
	if i < len(b) {
		fb = &b[i]
		sec = b[i].Section
	}
	if i < len(a) {
		fa = &a[i]
		sec = a[i].Section
	}
	return fa, fb, sec
}

// sectionDiffs puts the two images side by side, section by section: the sections in the
// order the two images have them, each section's instructions of A and of B aligned.
func sectionDiffs(a, b []Insn) []SectionDiff {
	var out []SectionDiff
	for _, name := range mergeOrder(sectionOrder(a), sectionOrder(b)) {
		sa, sb := inSection(a, name), inSection(b, name)
		s := SectionDiff{Name: name}
		pairs, _ := align(sa, sb)
		for _, p := range zipGaps(pairs) {
			r := Row{Differs: p.gap || p.a < 0 || p.b < 0}
			if p.a >= 0 {
				r.A = &sa[p.a]
			}
			if p.b >= 0 {
				r.B = &sb[p.b]
			}
			s.Changed = s.Changed || r.Differs
			s.Rows = append(s.Rows, r)
		}
		out = append(out, s)
	}
	return out
}

// zipGaps pairs a run of A-only steps with the B-only run after it, so that a replaced
// instruction is one row (A's and B's side by side), not two.
func zipGaps(pairs []pair) []pair {
	var out []pair
	for i := 0; i < len(pairs); {
		if pairs[i].a >= 0 && pairs[i].b >= 0 {
			out = append(out, pairs[i])
			i++
			continue
		}
		var as, bs []int
		for ; i < len(pairs) && pairs[i].b < 0; i++ {
			as = append(as, pairs[i].a)
		}
		for ; i < len(pairs) && pairs[i].a < 0; i++ {
			bs = append(bs, pairs[i].b)
		}
		for k := 0; k < max(len(as), len(bs)); k++ {
			p := pair{-1, -1, true}
			if k < len(as) {
				p.a = as[k]
			}
			if k < len(bs) {
				p.b = bs[k]
			}
			out = append(out, p)
		}
	}
	return out
}

func sectionOrder(insns []Insn) []string {
	var names []string
	seen := map[string]bool{}
	for _, in := range insns {
		if !seen[in.Section] {
			seen[in.Section] = true
			names = append(names, in.Section)
		}
	}
	return names
}

func inSection(insns []Insn, name string) []Insn {
	var out []Insn
	for _, in := range insns {
		if in.Section == name {
			out = append(out, in)
		}
	}
	return out
}

// mergeOrder merges two orders of section names: the common names in A's order, each
// name only one side has placed after the names that precede it there.
func mergeOrder(a, b []string) []string {
	ia := make([]Insn, len(a))
	for i, n := range a {
		ia[i].key = n
	}
	ib := make([]Insn, len(b))
	for i, n := range b {
		ib[i].key = n
	}
	pairs, _ := align(ia, ib)
	var out []string
	seen := map[string]bool{}
	for _, p := range pairs {
		n := ""
		if p.a >= 0 {
			n = a[p.a]
		} else {
			n = b[p.b]
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
