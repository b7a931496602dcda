package verifier_test

import (
	"regexp"
	"strings"

	"github.com/trampjit/trampjit/verifier"
)

// NormalizeLine is the comparison trampjit verify --against-kernel uses.
var NormalizeLine = verifier.NormalizeLine

// notMessage matches log lines that are not messages: instructions and states ("12: ..."),
// source lines ("; ..."), branch headers and statistics.
var notMessage = regexp.MustCompile(`^(\d+:( |$)|; |from \d+ to \d+: |processed \d+ insns|verification time|stack depth|Validating |Func#|func#\d|last_idx|regs=|parent |mark_precise|propagating )`)

// firstMessage is a log's first message line.
func firstMessage(log []string) string {
	for _, l := range log {
		l = strings.TrimSpace(l)
		if l == "" || notMessage.MatchString(l) {
			continue
		}
		return l
	}
	return ""
}

// knownGaps are the programs ("<profile>/<name>") where the model is known to disagree with
// the kernel, each explained in KNOWN_GAPS.md; the ground-truth test skips exactly these.
var knownGaps = map[string]string{}
