package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel/vm"
)

// FuzzOptions configure an image fuzzing campaign (ImageFuzz).
type FuzzOptions struct {
	Kernel, Arch string
	Count        int
	Seed         uint64
	// Corpus is the profile's corpus directory (testdata/kernel/<kernel>-<arch>): its
	// vmlinux.btf.xz is what the cases are drawn from and regenerated against, its
	// kernel.json the build booted.
	Corpus string
	// Batch is the cases per guest boot (default 250); a guest that dies is rebooted
	// for the rest of its batch.
	Batch    int
	Minimise bool   // minimise each disagreement (re-captured)
	OutDir   string // results.jsonl, summary.json, minimised.jsonl, minimised-cases.json
	// Resume continues the interrupted campaign in OutDir: the requests its results.jsonl
	// holds (the first of the same seed's draws) are not captured again, but for those a
	// guest died on and those Again names.
	Resume   bool
	Again    []string
	Progress io.Writer
}

// FuzzCase is one request's outcome.
type FuzzCase struct {
	Case   Case        `json:"case"`
	Diff   DiffResult  `json:"diff"`
	Corpus *CorpusCase `json:"corpus"`
}

// FuzzDisagreement is a disagreement and its minimised form, as a corpus case.
type FuzzDisagreement struct {
	Kind      string      `json:"kind"`
	Original  DiffResult  `json:"original"`
	Case      Case        `json:"case"`
	Minimised Case        `json:"minimised"`
	Diff      DiffResult  `json:"minimised_diff"`
	Corpus    *CorpusCase `json:"corpus"`
	// Confirmed: a re-capture disagreed the same way (the minimised case, or the original).
	Confirmed bool `json:"confirmed"`
	Tried     bool `json:"minimised_tried"` // minimised (the first few of each kind are)
}

// maxMinimisePerKind is how many disagreements of one kind are minimised; the others are
// listed as drawn.
const maxMinimisePerKind = 3

// fuzzDiff is Diff, with the refusal a random BTF function meets that the corpus never
// does: a FUNC in BTF with no kallsyms symbol (inlined everywhere, or discarded init
// code), which bpf_check_attach_target reports before anything else. BTF cannot say which
// functions those are.
func fuzzDiff(c *CorpusCase) DiffResult {
	r := Diff(c)
	switch {
	case c.Stage == "load" && noAddress.MatchString(c.KernelMessage()) &&
		(r.Verdict == ModelAccept || r.Verdict == Differ && (laterCheck.MatchString(r.Note) || refusesLater(c))):
		// bpf_check_attach_target looks the address up after distilling the prototype and
		// before the sleepable and fmod_ret checks: a model refusal from those comes second,
		// as does any refusal of a program the agent loads after the one that failed.
		r.Verdict, r.Note = Unmodelled, "no kallsyms address for a BTF function: "+c.KernelMessage()
	case agrees(r.Verdict):
	case c.Stage == "attach" && freedInitText[c.Request.Arch].errno == c.Errno && modelBuildsAttach(c, modelErr(c)):
		// An __init function: its text is freed after boot, ftrace dropped its record
		// (ftrace_free_init_mem), and bpf_arch_text_poke refuses an address that is neither
		// kernel text nor BPF text. A model refusal of a later attach comes second.
		r.Verdict, r.Note = Unmodelled, "the kernel cannot patch this function ("+freedInitText[c.Request.Arch].why+")"
	}
	return r
}

// freedInitText is how each arch's bpf_arch_text_poke refuses an address outside kernel text
// (is_kernel_text) and BPF text: an __init function's, freed after boot. BTF does not mark
// __init. arm64 refuses it as it refuses every non-BPF text, with the not-ftrace-managed
// ENOTSUPP Diff already counts.
var freedInitText = map[btfmodel.Arch]struct{ errno, why string }{
	btfmodel.AMD64:   {"EINVAL", "EINVAL at attach: freed __init text, not kernel text"},
	btfmodel.RISCV64: {"ENOTSUPP", "riscv64 ENOTSUPP at attach: freed __init text, not kernel text"},
}

// modelErr is the model's refusal of the case's request, nil when it builds an image.
// refusesLater reports whether the model refuses a program after the one the kernel
// failed to load (the agent loads them in attach order and stops at the first failure).
func refusesLater(c *CorpusCase) bool {
	var ae *jit.AttachError
	n := c.LoadIndex()
	return n > 0 && errors.As(modelErr(c), &ae) && ae.Prog > n
}

func modelErr(c *CorpusCase) error {
	_, _, err := generate(c.Request)
	return err
}

// RediffFuzz compares a campaign's results (dir/results.jsonl) with the model again,
// without booting: after a model fix, or to apply fuzzDiff's rules to an older run.
func RediffFuzz(dir, corpus string) (*FuzzReport, error) {
	var pool *FuzzPool
	done, _, err := readResults(dir)
	if err != nil {
		return nil, err
	}
	var old FuzzReport
	if b, err := os.ReadFile(filepath.Join(dir, fuzzSummary)); err == nil {
		json.Unmarshal(b, &old)
	}
	if old.Kernel == "" && len(done) > 0 { // killed before its first summary
		old.Kernel, old.Arch = string(done[0].Corpus.Request.Kernel), string(done[0].Corpus.Request.Arch)
	}
	// Another profile's BTF would model every request wrongly, and quietly.
	if k, a, ok := corpusProfile(corpus); ok && (k != old.Kernel || a != old.Arch) {
		return nil, fmt.Errorf("image fuzz: rediff: %s holds a %s-%s campaign, and corpus %s is %s-%s's", dir, old.Kernel, old.Arch, corpus, k, a)
	}
	if spec, err := btfmodel.LoadFile(filepath.Join(corpus, "vmlinux.btf.xz"), nil); err == nil {
		pool, _ = NewFuzzPool(spec, btfmodel.Kernel(old.Kernel), btfmodel.Arch(old.Arch))
	}
	rep := &FuzzReport{Kernel: old.Kernel, Arch: old.Arch, Seed: old.Seed, Boots: old.Boots, Duration: old.Duration,
		CaptureTime: old.CaptureTime, Shapes: old.Shapes, Uncovered: old.Uncovered, Kinds: map[string]int{}}
	for _, fc := range done {
		fc.Corpus.Request.SetDir(corpus)
		fc.Diff = fuzzDiff(fc.Corpus)
		rep.add(fc, pool)
		if !agrees(fc.Diff.Verdict) && fc.Diff.Verdict != NotCaptured {
			rep.Found = append(rep.Found, FuzzDisagreement{Kind: disagreementKind(fc.Diff), Original: fc.Diff, Case: fc.Case,
				Minimised: fc.Case, Diff: fc.Diff, Corpus: fc.Corpus})
		}
	}
	if rep.Requests > 0 {
		rep.PerCase = rep.CaptureTime / time.Duration(rep.Requests)
	}
	return rep, nil
}

// CampaignProfile is the kernel and arch of the campaign in dir (its summary, or its
// first result when it was killed before its first summary).
func CampaignProfile(dir string) (kernel, arch string, err error) {
	var old FuzzReport
	if b, err := os.ReadFile(filepath.Join(dir, fuzzSummary)); err == nil && json.Unmarshal(b, &old) == nil && old.Kernel != "" {
		return old.Kernel, old.Arch, nil
	}
	done, _, err := readResults(dir)
	if err != nil {
		return "", "", err
	}
	if len(done) == 0 {
		return "", "", fmt.Errorf("%s: no results", dir)
	}
	return string(done[0].Corpus.Request.Kernel), string(done[0].Corpus.Request.Arch), nil
}

// corpusProfile is the kernel and arch a corpus's kernel.json names, if it has one.
func corpusProfile(dir string) (kernel, arch string, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, "kernel.json"))
	if err != nil {
		return "", "", false
	}
	var k struct{ Kernel, Arch string }
	if json.Unmarshal(b, &k) != nil || k.Kernel == "" {
		return "", "", false
	}
	return k.Kernel, k.Arch, true
}

// laterCheck matches model refusals the kernel makes after the address lookup: the
// sleepable and fmod_ret checks, and any at attach (the link limit, the arch JIT's).
var laterCheck = regexp.MustCompile(`model: .*\(\) is not modifiable$|model: .* is not sleepable$|model: .*the kernel returns -E2BIG|model: .*refuses it at attach with`)

var noAddress = regexp.MustCompile(`^The address of function \S+ cannot be found$`)

// FuzzReport is a campaign's figures.
type FuzzReport struct {
	Kernel      string         `json:"kernel"`
	Arch        string         `json:"arch"`
	Seed        uint64         `json:"seed"`
	Requests    int            `json:"requests"`
	Attached    int            `json:"attached"`     // the kernel built an image
	Refused     int            `json:"refused"`      // the kernel refused (load or attach)
	NotCaptured int            `json:"not_captured"` // the guest died on it
	Agreeing    int            `json:"agreeing"`     // match, or a refusal BTF cannot predict
	Unmodelled  int            `json:"unmodelled"`   // of Agreeing: not ftrace-managed
	Kinds       map[string]int `json:"disagreements_by_kind,omitempty"`
	// ByArgs counts the attached requests by the function's argument count.
	ByArgs      map[int]int        `json:"attached_by_args,omitempty"`
	Boots       int                `json:"boots"`
	Duration    time.Duration      `json:"duration"`
	CaptureTime time.Duration      `json:"capture_time"` // without the minimisation
	PerCase     time.Duration      `json:"per_case"`
	Shapes      int                `json:"shapes"`
	Uncovered   int                `json:"shapes_not_in_catalogue"`
	Cases       []FuzzCase         `json:"-"`
	Found       []FuzzDisagreement `json:"disagreements,omitempty"`
}

// agrees is whether a verdict is an agreement with the kernel.
func agrees(v string) bool { return v == Match || v == Unmodelled }

// disagreementKind names a disagreement for the summary: the verdict and what differs.
func disagreementKind(d DiffResult) string {
	switch d.Verdict {
	case Differ:
		if d.Model != "" && d.Kernel != "" {
			if strings.HasPrefix(d.Note, "model ") {
				return "differ: image size"
			}
			return "differ: bytes"
		}
		return "differ: refusal reason"
	case ModelRefuse:
		return "model-refused: " + firstWords(d.Note, 6)
	case ModelAccept:
		return "model-accepted: " + firstWords(strings.TrimPrefix(d.Note, "kernel: "), 6)
	}
	return d.Verdict
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
	}
	return strings.Join(f, " ")
}

// ImageFuzz draws Count cases from the corpus's BTF, captures them in guests (Batch per
// boot), compares each with the model and minimises the disagreements.
func ImageFuzz(ctx context.Context, o FuzzOptions) (*FuzzReport, error) {
	t0 := time.Now()
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	if o.Batch <= 0 {
		o.Batch = 250
	}
	if o.OutDir != "" {
		if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
			return nil, err
		}
	}
	spec, err := btfmodel.LoadFile(filepath.Join(o.Corpus, "vmlinux.btf.xz"), nil)
	if err != nil {
		return nil, fmt.Errorf("image fuzz: %w", err)
	}
	pool, err := NewFuzzPool(spec, btfmodel.Kernel(o.Kernel), btfmodel.Arch(o.Arch))
	if err != nil {
		return nil, err
	}
	pin, err := CorpusPin(o.Corpus)
	if err != nil {
		return nil, err
	}
	rep := &FuzzReport{Kernel: o.Kernel, Arch: o.Arch, Seed: o.Seed, Kinds: map[string]int{}}
	rep.Shapes, rep.Uncovered = pool.Shapes()
	cases := pool.Generate(o.Seed, o.Count)
	fmt.Fprintf(progress, "%s-%s: %d requests (seed %d) from %d prototype shapes (%d not in the catalogue), %d per boot\n",
		o.Kernel, o.Arch, len(cases), o.Seed, rep.Shapes, rep.Uncovered, o.Batch)
	var before time.Duration // a resumed campaign's capture time so far
	if o.OutDir != "" {
		done, old, err := startResults(o, cases)
		if err != nil {
			return nil, err
		}
		if o.Resume {
			n, err := recaptureDied(ctx, o, pin, done, progress)
			rep.Boots += n
			if err != nil {
				return nil, err
			}
		}
		for _, fc := range done {
			fc.Diff = fuzzDiff(fc.Corpus) // the model may have changed since
			rep.add(fc, pool)
		}
		if o.Resume {
			rep.Boots, before = old.Boots, old.CaptureTime
			fmt.Fprintf(progress, "%s-%s: resuming after %d results in %s\n", o.Kernel, o.Arch, len(done), o.OutDir)
		}
	} else if o.Resume {
		return nil, fmt.Errorf("image fuzz: resume needs the campaign's directory (OutDir)")
	}
	if len(o.Again) > 0 && !o.Resume {
		return nil, fmt.Errorf("image fuzz: again needs a resumed campaign")
	}
	start := len(rep.Cases)
	for lo := start; lo < len(cases); lo += o.Batch {
		batch := cases[lo:min(lo+o.Batch, len(cases))]
		got, boots, err := fuzzCapture(ctx, o, pin, batch)
		rep.Boots += boots
		if err != nil {
			return rep, err
		}
		fcs := make([]FuzzCase, len(batch))
		for i, c := range batch {
			fcs[i] = FuzzCase{Case: c, Corpus: got[i], Diff: fuzzDiff(got[i])}
			rep.add(fcs[i], pool)
		}
		rep.CaptureTime = before + time.Since(t0)
		rep.PerCase = rep.CaptureTime / time.Duration(rep.Requests)
		if o.OutDir != "" { // as it goes: a campaign cut short keeps every batch it finished
			if err := appendResults(o.OutDir, fcs); err != nil {
				return rep, err
			}
			if err := rep.writeSummary(o.OutDir); err != nil {
				return rep, err
			}
		}
		done := lo + len(batch)
		el := time.Since(t0)
		fmt.Fprintf(progress, "%s-%s: %d/%d done, %d agree, %d disagree, %v per case\n", o.Kernel, o.Arch, done, len(cases),
			rep.Agreeing, done-rep.Agreeing-rep.NotCaptured, (el / time.Duration(done-start)).Round(time.Millisecond))
	}
	rep.CaptureTime = before + time.Since(t0)
	perKind := map[string]int{}
	var todo []*FuzzDisagreement
	for _, fc := range rep.Cases {
		if fc.Diff.Verdict == NotCaptured || agrees(fc.Diff.Verdict) {
			continue
		}
		d := FuzzDisagreement{Kind: disagreementKind(fc.Diff), Original: fc.Diff, Case: fc.Case, Minimised: fc.Case, Diff: fc.Diff, Corpus: fc.Corpus}
		rep.Found = append(rep.Found, d)
	}
	for i := range rep.Found {
		if d := &rep.Found[i]; perKind[d.Kind] < maxMinimisePerKind {
			perKind[d.Kind]++
			todo = append(todo, d)
		}
	}
	if o.Minimise && len(todo) > 0 {
		n, err := minimise(ctx, o, pin, pool, todo, progress)
		rep.Boots += n
		if err != nil {
			return rep, err
		}
		for _, d := range todo {
			// A corpus id: the campaign's, which says where it came from.
			id := d.Case.ID + "-min"
			cc := *d.Corpus
			d.Minimised.ID, cc.ID, d.Diff.ID = id, id, id
			d.Corpus = &cc
			d.Tried = true
		}
	}
	rep.Duration = time.Since(t0)
	if rep.Requests > 0 {
		rep.PerCase = rep.CaptureTime / time.Duration(rep.Requests)
	}
	if o.OutDir != "" {
		if err := rep.writeFinal(o.OutDir); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func (rep *FuzzReport) add(fc FuzzCase, pool *FuzzPool) {
	rep.Requests++
	if fc.Diff.Verdict != NotCaptured && fc.Corpus.Error == "" && pool != nil {
		if rep.ByArgs == nil {
			rep.ByArgs = map[int]int{}
		}
		rep.ByArgs[pool.nargs(fc.Case)]++
	}
	rep.Cases = append(rep.Cases, fc)
	switch {
	case fc.Diff.Verdict == NotCaptured:
		rep.NotCaptured++
	case fc.Corpus.Error != "":
		rep.Refused++
	default:
		rep.Attached++
	}
	if agrees(fc.Diff.Verdict) {
		rep.Agreeing++
		if fc.Diff.Verdict == Unmodelled {
			rep.Unmodelled++
		}
	} else if fc.Diff.Verdict != NotCaptured {
		rep.Kinds[disagreementKind(fc.Diff)]++
	}
}

// fuzzBootTimeout is the hard limit of one guest capturing n cases. It only stops a guest
// that hangs (the case in flight is not captured, a new guest takes the rest), so it is
// generous: riscv64 under TCG on a host shared with three other guests took 4.6 s a case
// (6.12, 187 cases in 14.5 minutes), over the 3 s a case once allowed, and the case the limit
// fell on (fuzz-1-687, fexit on sbi_get_mvendorid: EFAULT in 2.3 s alone) was reported as
// a hang.
func fuzzBootTimeout(n int) time.Duration {
	return 120*time.Second + time.Duration(n)*8*time.Second
}

// fuzzCapture captures cases in one guest (more when one dies) and returns their corpus
// lines in order, requests resolved against the corpus's BTF. The cases a guest died on are
// captured once more, in a guest of their own: a guest's limit (fuzzBootTimeout) can run
// out on a loaded host with no case at fault, and it blames the case in flight.
func fuzzCapture(ctx context.Context, o FuzzOptions, pin vm.Pin, cases []Case) ([]*CorpusCase, int, error) {
	out, boots, err := fuzzCaptureOnce(ctx, o, pin, cases)
	if err != nil {
		return nil, boots, err
	}
	var again []Case
	var at []int
	for i, c := range out {
		if !c.Captured() {
			again, at = append(again, cases[i]), append(at, i)
		}
	}
	if len(again) == 0 {
		return out, boots, nil
	}
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "%s-%s: capturing %d cases the guest died on again\n", o.Kernel, o.Arch, len(again))
	}
	got, n, err := fuzzCaptureOnce(ctx, o, pin, again)
	boots += n
	if err != nil {
		return nil, boots, err
	}
	for k, i := range at {
		out[i] = got[k]
	}
	return out, boots, nil
}

// recaptureDied captures again, in one guest, the requests of a resumed campaign that a
// guest died on (a hang, a damaged frame: the guest's failure, not a verdict on the
// request) and those o.Again names, and rewrites results.jsonl with what they gave in
// their places. A request that dies again stays not captured.
func recaptureDied(ctx context.Context, o FuzzOptions, pin vm.Pin, done []FuzzCase, progress io.Writer) (int, error) {
	named := map[string]bool{}
	for _, id := range o.Again {
		named[id] = true
	}
	var again []Case
	var at []int
	for i, fc := range done {
		if !fc.Corpus.Captured() || named[fc.Case.ID] {
			again, at = append(again, fc.Case), append(at, i)
			delete(named, fc.Case.ID)
		}
	}
	for _, id := range o.Again {
		if named[id] {
			return 0, fmt.Errorf("image fuzz: again: %q is not a request of the campaign's %d results in %s", id, len(done), o.OutDir)
		}
	}
	if len(again) == 0 {
		return 0, nil
	}
	fmt.Fprintf(progress, "%s-%s: capturing again %d requests (a guest died on them, or named)\n", o.Kernel, o.Arch, len(again))
	got, boots, err := fuzzCapture(ctx, o, pin, again)
	if err != nil {
		return boots, err
	}
	for k, i := range at {
		done[i].Corpus, done[i].Diff = got[k], fuzzDiff(got[k])
	}
	return boots, rewriteResults(o.OutDir, done)
}

func fuzzCaptureOnce(ctx context.Context, o FuzzOptions, pin vm.Pin, cases []Case) ([]*CorpusCase, int, error) {
	cr, err := Capture(ctx, CaptureOptions{Kernel: o.Kernel, Arch: o.Arch, Cases: cases, Pin: pin,
		Timeout: fuzzBootTimeout(len(cases)), Progress: o.Progress})
	if err != nil {
		n := 0
		if cr != nil {
			n = len(cr.Boots)
		}
		return nil, n, err
	}
	byID := map[string]*CorpusCase{}
	for i := range cr.Cases {
		c := &cr.Cases[i]
		c.Request.SetDir(o.Corpus)
		byID[c.ID] = c
	}
	out := make([]*CorpusCase, len(cases))
	for i, c := range cases {
		if out[i] = byID[c.ID]; out[i] == nil {
			return nil, len(cr.Boots), fmt.Errorf("%s-%s: case %s: no result", o.Kernel, o.Arch, c.ID)
		}
	}
	return out, len(cr.Boots), nil
}

// Summary prints the report's figures and its disagreements by kind.
func (rep *FuzzReport) Summary(w io.Writer) {
	fmt.Fprintf(w, "%s-%s seed %d: %d requests, %d attached, %d refused, %d not captured; %d agree (%d unmodelled refusals); %d boots, %v (capture %v, %v per case)\n",
		rep.Kernel, rep.Arch, rep.Seed, rep.Requests, rep.Attached, rep.Refused, rep.NotCaptured, rep.Agreeing, rep.Unmodelled,
		rep.Boots, rep.Duration.Round(time.Second), rep.CaptureTime.Round(time.Second), rep.PerCase.Round(time.Millisecond))
	if len(rep.ByArgs) > 0 {
		fmt.Fprintf(w, "  attached by argument count:")
		for n := 0; n <= btfmodel.MaxFuncArgs; n++ {
			fmt.Fprintf(w, " %d:%d", n, rep.ByArgs[n])
		}
		fmt.Fprintln(w)
	}
	kinds := make([]string, 0, len(rep.Kinds))
	for k := range rep.Kinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(w, "  %4d  %s\n", rep.Kinds[k], k)
	}
	for _, d := range rep.Found {
		if !d.Tried {
			fmt.Fprintf(w, "  %s: %s %s\n", d.Original.ID, d.Kind, d.Original.Note)
			continue
		}
		fmt.Fprintf(w, "  %s: %s %s (%d programs) -> %s %s (%d programs): %s\n", d.Original.ID, d.Kind, d.Original.Note,
			len(d.Case.Progs), d.Minimised.ID, d.Minimised.Func, len(d.Minimised.Progs), orDefault(d.Diff.Note, d.Diff.Kernel))
	}
}
