package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/internal/view"
	"github.com/trampjit/trampjit/jit"
)

const modretBTF = "../../testdata/kernel/6.12-amd64/vmlinux.btf.xz"

// frameArgs is fentry + fmod_ret + fexit on bpf_modify_return_test (the make demo request).
func frameArgs(arch, kernel string, more ...string) []string {
	return append([]string{"frame", "--btf", modretBTF, "--func", "bpf_modify_return_test",
		"--fentry", "1", "--fmod-ret", "1", "--fexit", "1", "--arch", arch, "--kernel", kernel}, more...)
}

// backendFrame is what the backend says the frame is, straight from jit.FrameOf, and the
// image's listing; nil when the backend has no Framer yet.
func backendFrame(t *testing.T, arch, kernel string) (*jit.Frame, []jit.Line) {
	t.Helper()
	req := &jit.Request{Arch: btfmodel.Arch(arch), Kernel: btfmodel.Kernel(kernel), BTF: modretBTF, Func: "bpf_modify_return_test",
		Progs: []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit}, {Kind: jit.ModRet}}} // the flags' attach order
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	tr, img, err := jit.Generate(req)
	if err != nil {
		t.Fatal(err)
	}
	_, dis, _ := jit.Lookup(req.Arch)
	lines, err := jit.Listing(tr, img, dis)
	if err != nil {
		t.Fatal(err)
	}
	f, err := jit.FrameOf(tr, img)
	if err != nil {
		t.Fatal(err)
	}
	return f, lines
}

// TestFrameCommand draws each architecture's frame in every format: every slot the backend
// reports is there with its offsets, and each writer and reader with its listing section.
func TestFrameCommand(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64", "riscv64"} {
		t.Run(arch, func(t *testing.T) {
			f, lines := backendFrame(t, arch, "6.12")
			code, out, errOut := trampjit(frameArgs(arch, "6.12")...)
			if f == nil {
				if code != exitFailed || !strings.Contains(errOut, "does not describe its frame yet") {
					t.Errorf("no Framer: exit %d, %q; want exit 1 saying there is no frame", code, errOut)
				}
				t.Skipf("the %s backend has no jit.Framer yet", arch)
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			section := map[int]string{}
			for _, l := range lines {
				section[l.Offset] = l.Section
			}
			for _, s := range f.Slots {
				row := fmt.Sprintf("%8s %7s %5d  │ %s", signedHex(s.Off), signedHex(s.SPOff), s.Size, s.Name)
				i := strings.Index(out, row)
				if i < 0 {
					t.Errorf("text lacks the row of %q (%q):\n%s", s.Name, row, out)
					continue
				}
				line, _, _ := strings.Cut(out[i:], "\n")
				for _, w := range s.Writers {
					if want := fmt.Sprintf("%x <%s>", w, section[w]); !strings.Contains(line, want) {
						t.Errorf("%s: writer %q missing from %q", s.Name, want, line)
					}
				}
				for _, r := range s.Readers {
					if want := fmt.Sprintf("%x <%s>", r, section[r]); !strings.Contains(line, want) {
						t.Errorf("%s: reader %q missing from %q", s.Name, want, line)
					}
				}
			}
			// High addresses first: the rows appear in decreasing offset order.
			var offs []int
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "│ ") && strings.TrimSpace(l[:8]) != "" {
					var v int
					if _, err := fmt.Sscanf(strings.TrimSpace(strings.Replace(l[:8], "0x", "", 1)), "%x", &v); err == nil {
						offs = append(offs, v)
					}
				}
			}
			if len(offs) != len(f.Slots) {
				t.Errorf("%d slot rows, the backend has %d slots:\n%s", len(offs), len(f.Slots), out)
			}
			for i := 1; i < len(offs); i++ {
				if offs[i] > offs[i-1] {
					t.Errorf("row %d (%#x) is above a lower one (%#x): high addresses go at the top", i, offs[i], offs[i-1])
				}
			}

			code, out, errOut = trampjit(frameArgs(arch, "6.12", "--format", "json")...)
			var fj view.FrameView
			if err := json.Unmarshal([]byte(out), &fj); code != 0 || err != nil {
				t.Fatalf("json: exit %d, %v: %s", code, err, errOut)
			}
			if len(fj.Slots) != len(f.Slots) || fj.Base != f.Base || fj.Kernel != "6.12" {
				t.Errorf("json: %d slots, base %q, kernel %q; the backend has %d, %q", len(fj.Slots), fj.Base, fj.Kernel, len(f.Slots), f.Base)
			}
			for _, s := range fj.Slots {
				for _, w := range append(append([]view.Touch{}, s.Writers...), s.Readers...) {
					if w.Section != section[w.Offset] || w.Asm == "" {
						t.Errorf("json: %s touched at %x resolved to %+v, the listing says %q", s.Name, w.Offset, w, section[w.Offset])
					}
				}
			}

			code, out, errOut = trampjit(frameArgs(arch, "6.12", "--format", "svg")...)
			if code != 0 {
				t.Fatalf("svg: exit %d: %s", code, errOut)
			}
			names := svgSlotNames(t, out)
			if len(names) != len(f.Slots) {
				t.Errorf("svg: %d slot boxes %q, the backend has %d slots", len(names), names, len(f.Slots))
			}
		})
	}
}

// signedHex prints an offset as the frame text does.
func signedHex(v int) string {
	switch {
	case v == 0:
		return "0"
	case v < 0:
		return fmt.Sprintf("-%#x", -v)
	}
	return fmt.Sprintf("+%#x", v)
}

// svgSlotNames parses an SVG document strictly (encoding/xml) and returns the names drawn in
// its slot boxes.
func svgSlotNames(t *testing.T, doc string) []string {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(doc))
	d.Strict = true
	var names []string
	depth, inSlot, inName := 0, 0, false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("svg is not well-formed XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			depth++
			for _, a := range e.Attr {
				if e.Name.Local == "g" && a.Name.Local == "class" && strings.HasPrefix(a.Value, "slot ") {
					inSlot = depth
				}
				if inSlot > 0 && e.Name.Local == "text" && a.Name.Local == "class" && a.Value == "name" {
					inName = true
				}
			}
		case xml.EndElement:
			if depth == inSlot {
				inSlot = 0
			}
			depth--
			inName = false
		case xml.CharData:
			if inName {
				names = append(names, string(bytes.TrimSpace(e)))
			}
		}
	}
	return names
}

func TestFrameBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{frameArgs("amd64", "6.12", "--format", "listing"), exitUsage, "trampjit frame makes text, json, svg or html"},
		{[]string{"frame", "--proto", "int f(int a)"}, exitUsage, "no programs"},
		{[]string{"gen", "--proto", "int f(int a)", "--fentry", "1", "--format", "svg"}, exitUsage, "trampjit gen makes listing, json, hex, bin or html"},
		{[]string{"model", "--proto", "int f(int a)", "--format", "html"}, exitUsage, "trampjit model makes text or json"},
		{[]string{"verify", "x.o", "--format", "html"}, exitUsage, "unknown --format \"html\""},
		{frameArgs("amd64", "6.12", "-o", "/"), exitFailed, "is a directory"},
	} {
		code, _, errOut := trampjit(c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, %q; want exit %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}
