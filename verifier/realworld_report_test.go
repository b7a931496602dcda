package verifier_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/trampjit/trampjit/internal/realworld"
)

// rwReport is one profile's figures and disagreements (the JSON file of TestRealWorld).
type rwReport struct {
	Profile      string              `json:"profile"`
	Kernel       string              `json:"kernel,omitempty"` // release and Debian package
	Date         string              `json:"date"`
	Commit       string              `json:"commit"` // HEAD of the tree measured (which may have had edits)
	Packages     []realworld.Fetched `json:"packages"`
	Objects      int                 `json:"objects"`    // distinct objects
	Duplicates   int                 `json:"duplicates"` // identical copies not counted again
	Unreadable   []string            `json:"unreadable,omitempty"`
	Skipped      map[string]int      `json:"skipped_by_type"` // other program types, by section kind
	Programs     int                 `json:"programs"`        // fentry/fexit/fmod_ret/lsm/tp_btf
	NotJudged    []*rwCase           `json:"not_judged,omitempty"`
	Compared     int                 `json:"compared"` // programs the kernel judged
	Accepted     int                 `json:"kernel_accepted"`
	Rejected     int                 `json:"kernel_rejected"`
	Verdicts     int                 `json:"verdicts_agree"`
	VerdictPct   float64             `json:"verdicts_agree_pct"`
	Messages     int                 `json:"messages_agree"` // of the kernel's rejections: the model rejects with the same first and last lines
	MessagePct   float64             `json:"messages_agree_pct"`
	NotModel     int                 `json:"model_not_modelled"` // the model's "model: ..." answers
	Panics       int                 `json:"model_panics"`
	Kinds        []rwKind            `json:"disagreement_kinds"`
	Disagree     []*rwCase           `json:"disagreements"`
	ModelSeconds float64             `json:"model_seconds"`
	Stages       map[string]int      `json:"kernel_stages,omitempty"` // rejections by the backend step that failed
	ByPackage    map[string]*rwCount `json:"by_package"`
}

// rwCount is one package's share of the figures.
type rwCount struct {
	Programs int `json:"programs"`
	Compared int `json:"compared"`
	Rejected int `json:"kernel_rejected"`
	Verdicts int `json:"verdicts_agree"`
	Messages int `json:"messages_agree"`
}

// rwKind groups disagreements whose kernel and model answers are the same modulo numbers.
type rwKind struct {
	Count  int    `json:"count"`
	Kernel string `json:"kernel"`
	Model  string `json:"model"`
	Sample string `json:"sample"` // one program: package object program
}

func (r *rwReport) count(cases []*rwCase) {
	kinds := map[[2]string]*rwKind{}
	r.Stages = map[string]int{}
	r.ByPackage = map[string]*rwCount{}
	for _, c := range cases {
		pc := r.ByPackage[c.Package+" "+c.Version]
		if pc == nil {
			pc = &rwCount{}
			r.ByPackage[c.Package+" "+c.Version] = pc
		}
		pc.Programs++
		if c.compared() {
			pc.Compared++
			if !c.Kernel.Accepted {
				pc.Rejected++
			}
			if c.Kernel.Accepted == c.Model.Accepted {
				pc.Verdicts++
			}
			if !c.Kernel.Accepted && c.Diff == "" {
				pc.Messages++
			}
		}
		if strings.HasPrefix(c.Model.Error, "model: ") {
			r.NotModel++
		}
		if strings.HasPrefix(c.Model.Error, "model panic: ") {
			r.Panics++
		}
		if !c.compared() {
			r.NotJudged = append(r.NotJudged, c)
			continue
		}
		r.Compared++
		if c.Kernel.Accepted {
			r.Accepted++
		} else {
			r.Rejected++
			if c.Kernel.Stage != "" {
				r.Stages[c.Kernel.Stage]++
			}
		}
		if c.Kernel.Accepted == c.Model.Accepted {
			r.Verdicts++
		}
		if !c.Kernel.Accepted && c.Diff == "" {
			r.Messages++
		}
		if c.Diff == "" {
			continue
		}
		r.Disagree = append(r.Disagree, c)
		k := [2]string{answerText(c.Kernel), answerText(c.Model)}
		if kinds[k] == nil {
			kinds[k] = &rwKind{Kernel: k[0], Model: k[1], Sample: c.Package + " " + c.Object + " " + c.Program}
		}
		kinds[k].Count++
	}
	for _, k := range kinds {
		r.Kinds = append(r.Kinds, *k)
	}
	sort.Slice(r.Kinds, func(i, j int) bool {
		if r.Kinds[i].Count != r.Kinds[j].Count {
			return r.Kinds[i].Count > r.Kinds[j].Count
		}
		return r.Kinds[i].Kernel+r.Kinds[i].Model < r.Kinds[j].Kernel+r.Kinds[j].Model
	})
	r.VerdictPct = pct(r.Verdicts, r.Compared)
	r.MessagePct = pct(r.Messages, r.Rejected)
}

// answerText is an answer modulo numbers: "accepted", or the first and last lines.
func answerText(a rwAnswer) string {
	if a.Accepted {
		return "accepted"
	}
	if a.First == "" || a.First == a.Error {
		return NormalizeLine(a.Error)
	}
	return NormalizeLine(a.First) + " … " + NormalizeLine(a.Error)
}

func pct(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(int(1000*float64(n)/float64(d)+0.5)) / 10
}

func (r *rwReport) line() string {
	return fmt.Sprintf("%d programs (%d judged by the kernel, %d rejected): verdicts agree %d (%.1f%%), rejection messages %d/%d (%.1f%%), model: answers %d, panics %d",
		r.Programs, r.Compared, r.Rejected, r.Verdicts, r.VerdictPct, r.Messages, r.Rejected, r.MessagePct, r.NotModel, r.Panics)
}

// writeReport writes path (JSON) and the markdown table beside it (.md).
func writeReport(path string, r *rwReport) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(strings.TrimSuffix(path, ".json")+".md", []byte(r.markdown()), 0o644)
}

func (r *rwReport) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Real-world objects on %s\n\n%s, kernel %s, tree at %s.\n\n", r.Profile, r.Date, r.Kernel, r.Commit)
	fmt.Fprintf(&b, "%s.\n\n", r.line())
	fmt.Fprintf(&b, "%d distinct objects (%d identical copies not counted again); other program types skipped: %s.\n\n", r.Objects, r.Duplicates, skippedText(r.Skipped))
	b.WriteString("| package | version | files | objects | note |\n|---|---|---|---|---|\n")
	for _, p := range r.Packages {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s |\n", p.Package, p.Version, p.Files, p.Objects, cell(p.Error))
	}
	b.WriteString("\n| package (in-scope programs) | programs | judged | kernel rejected | verdicts agree | messages agree |\n|---|---|---|---|---|---|\n")
	var pk []string
	for k := range r.ByPackage {
		pk = append(pk, k)
	}
	sort.Strings(pk)
	for _, k := range pk {
		c := r.ByPackage[k]
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d/%d |\n", k, c.Programs, c.Compared, c.Rejected, c.Verdicts, c.Messages, c.Rejected)
	}
	if len(r.NotJudged) > 0 {
		fmt.Fprintf(&b, "\n## Not judged by the kernel (%d)\n\n| program | object | package | why |\n|---|---|---|---|\n", len(r.NotJudged))
		for _, c := range r.NotJudged {
			fmt.Fprintf(&b, "| %s | %s | %s | %s: %s |\n", c.Program, c.Object, c.Package, c.Kernel.Stage, cell(c.Kernel.Error))
		}
	}
	fmt.Fprintf(&b, "\n## Disagreements by kind (%d programs)\n\n| count | kernel | model | e.g. |\n|---|---|---|---|\n", len(r.Disagree))
	for _, k := range r.Kinds {
		fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", k.Count, cell(k.Kernel), cell(k.Model), cell(k.Sample))
	}
	b.WriteString("\n## Every disagreement\n\n| program | section | object | package | kernel | model |\n|---|---|---|---|---|---|\n")
	for _, c := range r.Disagree {
		fmt.Fprintf(&b, "| %s | %s | %s | %s %s | %s | %s |\n", c.Program, c.Section, c.Object, c.Package, c.Version,
			cell(answerText(c.Kernel)), cell(answerText(c.Model)))
	}
	return b.String()
}

func skippedText(m map[string]int) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return m[ks[i]] > m[ks[j]] || m[ks[i]] == m[ks[j]] && ks[i] < ks[j] })
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// cell makes s fit in a markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// writeSummary writes dir/summary.md from every profile's JSON report in dir.
func writeSummary(dir string) error {
	var b strings.Builder
	b.WriteString("| profile | programs | judged | kernel rejected | verdicts agree | messages agree | `model:` answers | panics | date | tree |\n|---|---|---|---|---|---|---|---|---|---|\n")
	n := 0
	for _, p := range truthProfiles {
		data, err := os.ReadFile(filepath.Join(dir, p+".json"))
		if err != nil {
			continue
		}
		var r rwReport
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		n++
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d (%.1f%%) | %d/%d (%.1f%%) | %d | %d | %s | %s |\n", r.Profile, r.Programs, r.Compared, r.Rejected,
			r.Verdicts, r.VerdictPct, r.Messages, r.Rejected, r.MessagePct, r.NotModel, r.Panics, r.Date, r.Commit)
	}
	if n == 0 {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, "summary.md"), []byte(b.String()), 0o644)
}

// gitHead names the commit measured ("" outside a git tree).
func gitHead() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
