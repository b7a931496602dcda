package mutation

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// Tally is one package's figures.
type Tally struct {
	Dir                                             string
	Mutants, Killed, TimedOut, Equivalent, Survived int
	Gone                                            int // not counted in Mutants
}

// Score is killed (timeouts included) over the non-equivalent mutants, in percent.
func (t Tally) Score() float64 {
	n := t.Mutants - t.Equivalent
	if n == 0 {
		return 100
	}
	return 100 * float64(t.Killed+t.TimedOut) / float64(n)
}

// Count tallies one target's results.
func Count(dir string, rs []Result) Tally {
	t := Tally{Dir: dir}
	for _, r := range rs {
		if r.Outcome == Gone {
			t.Gone++
			continue
		}
		t.Mutants++
		switch r.Outcome {
		case Killed:
			t.Killed++
		case TimedOut:
			t.TimedOut++
		case Equivalent:
			t.Equivalent++
		case Survived:
			t.Survived++
		}
	}
	return t
}

// WriteMarkdown writes the figures table, the survivors and the equivalents.
func WriteMarkdown(w io.Writer, tallies []Tally, results map[string][]Result) {
	fmt.Fprintln(w, "| package | mutants | killed | timed out | equivalent | survived | score |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	var sum Tally
	sum.Dir = "total"
	for _, t := range append(tallies, Tally{}) {
		if t.Dir == "" {
			t = sum
		} else {
			sum.Mutants += t.Mutants
			sum.Killed += t.Killed
			sum.TimedOut += t.TimedOut
			sum.Equivalent += t.Equivalent
			sum.Survived += t.Survived
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %.1f%% |\n", t.Dir, t.Mutants, t.Killed, t.TimedOut, t.Equivalent, t.Survived, t.Score())
	}
	for _, t := range tallies {
		var surv, eq, gone []string
		for _, r := range results[t.Dir] {
			switch r.Outcome {
			case Gone:
				gone = append(gone, "- `"+r.Mutant.File+"`")
			case Survived:
				surv = append(surv, "- `"+r.Mutant.ID()+"`")
			case Equivalent:
				eq = append(eq, "- `"+r.Mutant.ID()+"` — "+r.Reason)
			}
		}
		if len(surv) > 0 {
			fmt.Fprintf(w, "\nSurvivors in %s:\n\n%s\n", t.Dir, strings.Join(surv, "\n"))
		}
		if len(eq) > 0 {
			fmt.Fprintf(w, "\nEquivalent in %s:\n\n%s\n", t.Dir, strings.Join(eq, "\n"))
		}
		if len(gone) > 0 {
			fmt.Fprintf(w, "\nNo longer generated in %s (the line changed since the first run; not counted):\n\n%s\n", t.Dir, strings.Join(gone, "\n"))
		}
	}
}

// ReadEquivalents reads the equivalent mutants from a markdown file: lines
// "- `ID` — reason", as WriteMarkdown writes them under "Equivalent in".
func ReadEquivalents(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	eq := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "- `")
		if !ok {
			continue
		}
		id, why, ok := strings.Cut(rest, "` — ")
		if !ok || strings.TrimSpace(why) == "" {
			continue
		}
		eq[id] = strings.TrimSpace(why)
	}
	return eq, sc.Err()
}
