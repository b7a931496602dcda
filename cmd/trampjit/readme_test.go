package main

// TestREADME runs every example command of the top-level README.md (and of docs/*.md) and
// compares what it prints and its exit status with what the document shows. The convention:
//
//   - An example is a line of a fenced block that starts with "$ trampjit " (or
//     "$ bin/trampjit "). A line ending in a backslash continues on the next line. The
//     command is split like a POSIX shell splits words: single and double quotes and
//     backslashes; nothing else (no variables, globs or pipes). It runs in-process through
//     run(), in the repository's top directory, so paths are the README reader's.
//   - The lines after it, up to the next "$ " line or the end of the block, are its output:
//     standard output, then standard error. Trailing blanks and trailing empty lines are
//     ignored; every other line must match exactly, but for elisions:
//     a line that is only "..." (indentation aside) stands for any number of lines (none
//     included), and "..." inside a line stands for any text within that line.
//   - The exit status is 0 unless the output's last line is "[exit N]".
//
// Examples that need a qemu guest or the host kernel (kernel capture, verify and fetch,
// --against-kernel) are listed and skipped unless the test runs with -readme.kernel.
// On a mismatch the test prints the whole actual output, ready to paste into the README.

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var readmeKernel = flag.Bool("readme.kernel", false, "also run the README's examples that boot a kernel (qemu) or use the host's")

// readmeExample is one "$ trampjit ..." command of the README and the output shown for it.
type readmeExample struct {
	file string // README.md or docs/NAME.md
	line int    // 1-based line of the "$"
	cmd  string
	args []string
	want []string
	exit int
}

var exitLine = regexp.MustCompile(`^\[exit (\d+)\]$`)

// parseREADME extracts the examples of a markdown document; file names it in errors.
func parseREADME(file, doc string) ([]readmeExample, error) {
	var out []readmeExample
	var cur *readmeExample
	inFence, cont := false, false
	flush := func() error {
		if cur == nil {
			return nil
		}
		for len(cur.want) > 0 && strings.TrimSpace(cur.want[len(cur.want)-1]) == "" {
			cur.want = cur.want[:len(cur.want)-1]
		}
		if n := len(cur.want); n > 0 {
			if m := exitLine.FindStringSubmatch(cur.want[n-1]); m != nil {
				cur.exit, _ = strconv.Atoi(m[1])
				cur.want = cur.want[:n-1]
			}
		}
		args, err := shellWords(cur.cmd)
		if err != nil {
			return fmt.Errorf("%s:%d: %v", file, cur.line, err)
		}
		cur.args = args[1:] // drop the program name
		out = append(out, *cur)
		cur = nil
		return nil
	}
	sc := bufio.NewScanner(strings.NewReader(doc))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if inFence {
				if err := flush(); err != nil {
					return nil, err
				}
			}
			inFence, cont = !inFence, false
			continue
		}
		if !inFence {
			continue
		}
		switch {
		case cont:
			cur.cmd += "\n" + line
			cont = strings.HasSuffix(line, `\`)
		case strings.HasPrefix(line, "$ "):
			if err := flush(); err != nil {
				return nil, err
			}
			cmd := strings.TrimPrefix(line, "$ ")
			if !strings.HasPrefix(cmd, "trampjit ") && !strings.HasPrefix(cmd, "bin/trampjit ") {
				continue // another program: not checked
			}
			cur = &readmeExample{file: file, line: n, cmd: cmd}
			cont = strings.HasSuffix(line, `\`)
		case cur != nil:
			cur.want = append(cur.want, line)
		}
	}
	if inFence {
		return nil, fmt.Errorf("%s: unterminated code block", file)
	}
	return out, sc.Err()
}

// shellWords splits a command line as a POSIX shell does for quotes, backslashes and
// backslash-newline; anything that would need a shell to expand is refused.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i++
		case c == '\\' && i+1 < len(s):
			w.WriteByte(s[i+1])
			i, inWord = i+1, true
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", s)
			}
			w.WriteString(s[i+1 : i+1+j])
			i, inWord = i+1+j, true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				} else if s[i] == '$' || s[i] == '`' {
					return nil, fmt.Errorf("%q needs a shell (expansion)", s)
				}
				w.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated \" in %q", s)
			}
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case strings.IndexByte("$`|&;<>*?(){}~", c) >= 0:
			return nil, fmt.Errorf("%q needs a shell (%c)", s, c)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// needsKernel says why an example cannot run without a kernel, or "".
func needsKernel(args []string) string {
	for _, a := range args {
		if a == "--against-kernel" || a == "-against-kernel" {
			return "--against-kernel boots the profile's kernel"
		}
	}
	if len(args) >= 2 && args[0] == "kernel" {
		switch args[1] {
		case "capture", "verify", "fetch":
			return "kernel " + args[1] + " needs a qemu guest, the host kernel or the network"
		}
	}
	return ""
}

// matchLines compares actual output lines with the README's, honouring the "..." elisions.
func matchLines(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if strings.TrimSpace(want[0]) == "..." {
		for i := 0; i <= len(got); i++ {
			if matchLines(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && matchLine(want[0], got[0]) && matchLines(want[1:], got[1:])
}

func matchLine(want, got string) bool {
	parts := strings.Split(want, "...")
	if len(parts) == 1 {
		return want == got
	}
	if !strings.HasPrefix(got, parts[0]) {
		return false
	}
	got = got[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(got, p)
		if i < 0 {
			return false
		}
		got = got[i+len(p):]
	}
	return strings.HasSuffix(got, last)
}

// outputLines is what the README shows: stdout then stderr, right-trimmed, without trailing
// empty lines.
func outputLines(stdout, stderr string) []string {
	var lines []string
	for _, s := range []string{stdout, stderr} {
		if s == "" {
			continue
		}
		for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
			lines = append(lines, strings.TrimRight(l, " \t"))
		}
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func TestREADME(t *testing.T) {
	t.Chdir("../..")
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var examples []readmeExample
	for _, file := range append([]string{"README.md"}, docs...) {
		doc, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		ex, err := parseREADME(file, string(doc))
		if err != nil {
			t.Fatal(err)
		}
		if file == "README.md" && len(ex) < 4 {
			t.Fatalf("README.md has %d examples; the test expects one per command section at least", len(ex))
		}
		examples = append(examples, ex...)
	}
	t.Setenv("NO_COLOR", "1")
	for _, ex := range examples {
		t.Run(fmt.Sprintf("%s:%d", strings.ReplaceAll(ex.file, "/", "-"), ex.line), func(t *testing.T) {
			if why := needsKernel(ex.args); why != "" && !*readmeKernel {
				t.Skipf("%s:%d: %s (run with -readme.kernel)", ex.file, ex.line, why)
			}
			var o, e bytes.Buffer
			code := run(ex.args, &o, &e)
			got := outputLines(o.String(), e.String())
			want := make([]string, len(ex.want))
			for i, l := range ex.want {
				want[i] = strings.TrimRight(l, " \t")
			}
			if code != ex.exit || !matchLines(want, got) {
				shown := strings.Join(got, "\n")
				if code != 0 {
					shown += fmt.Sprintf("\n[exit %d]", code)
				}
				t.Errorf("%s:%d: $ %s\nexit %d, the document says %d; it shows:\n%s\n\nactual output (paste it, eliding varying parts with ...):\n%s",
					ex.file, ex.line, ex.cmd, code, ex.exit, strings.Join(ex.want, "\n"), shown)
			}
		})
	}
}

// TestREADMEConvention checks the parser and matcher on a document with every form the
// README may use, so that a broken parser cannot pass the README by matching nothing.
func TestREADMEConvention(t *testing.T) {
	doc := "text\n```\n$ trampjit model --proto 'int f(int a)' \\\n    --kernel \"6.1\"\nline one\n...\nend ... here\n[exit 2]\n$ make demo\nignored\n```\n```\n$ bin/trampjit kernel capture --host\n```\n"
	ex, err := parseREADME("test.md", doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(ex) != 2 {
		t.Fatalf("%d examples, want 2: %+v", len(ex), ex)
	}
	a := ex[0]
	if strings.Join(a.args, "|") != "model|--proto|int f(int a)|--kernel|6.1" || a.exit != 2 || a.line != 3 ||
		strings.Join(a.want, "|") != "line one|...|end ... here" {
		t.Errorf("first example = %+v", a)
	}
	if needsKernel(ex[1].args) == "" || needsKernel(a.args) != "" {
		t.Errorf("needsKernel: %q, %q", needsKernel(ex[1].args), needsKernel(a.args))
	}
	for _, c := range []struct {
		got  []string
		want bool
	}{
		{[]string{"line one", "end of it here"}, true},
		{[]string{"line one", "x", "y", "end  here"}, true},
		{[]string{"line one", "end here"}, false}, // "end ... here" needs the spaces
		{[]string{"line two", "end x here"}, false},
		{[]string{"line one"}, false},
		{[]string{"line one", "end x here", "more"}, false},
		{[]string{"line one", "end x here"}, true},
	} {
		if matchLines(a.want, c.got) != c.want {
			t.Errorf("matchLines(%q, %q) = %v", a.want, c.got, !c.want)
		}
	}
	if !matchLines([]string{"a", "    ...", "z"}, []string{"a", "b", "c", "z"}) {
		t.Error("an indented ... line does not elide lines")
	}
	if _, err := shellWords("trampjit gen $HOME"); err == nil {
		t.Error("shellWords accepted an expansion")
	}
}
