package kernel

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	_ "github.com/trampjit/trampjit/amd64" // registers the x86_64 backend
	_ "github.com/trampjit/trampjit/arm64" // registers the arm64 backend
	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	_ "github.com/trampjit/trampjit/riscv64" // registers the riscv64 backend
)

// Bounds on what ReadCorpus accepts: a corpus of the whole catalogue is a few MiB and a few
// hundred cases; one case (image, log, runs) stays well under a MiB.
const (
	maxCorpusSize  = 256 << 20
	maxCorpusLine  = 16 << 20
	maxCorpusCases = 100000
)

// ReadCorpus reads a corpus directory's cases.jsonl; each request's BTF resolves against dir.
func ReadCorpus(dir string) ([]CorpusCase, error) {
	if _, err := os.Stat(filepath.Join(dir, PartialNote)); err == nil {
		return nil, fmt.Errorf("read corpus: %s is an interrupted capture (its %s file lists the missing cases), not a corpus", dir, PartialNote)
	}
	path := filepath.Join(dir, "cases.jsonl")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read corpus: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read corpus: %s is not a regular file", path)
	} else if err == nil && fi.Size() > maxCorpusSize {
		return nil, fmt.Errorf("read corpus: %s is %d MiB, more than the %d MiB a corpus may have", path, fi.Size()>>20, maxCorpusSize>>20)
	}
	return ParseCorpus(io.LimitReader(f, maxCorpusSize), path, dir)
}

// ParseCorpus reads cases.jsonl from r (name is for messages). Every case's request passes
// jit's validation, ids are unique, and a corpus without cases is an error: a comparison of
// nothing must not pass.
func ParseCorpus(r io.Reader, name, dir string) ([]CorpusCase, error) {
	var out []CorpusCase
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxCorpusLine)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if len(out) == maxCorpusCases {
			return nil, fmt.Errorf("%s:%d: more than %d cases", name, n, maxCorpusCases)
		}
		var c CorpusCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		switch {
		case c.ID == "":
			return nil, fmt.Errorf("%s:%d: case has no id", name, n)
		case seen[c.ID] != 0:
			return nil, fmt.Errorf("%s:%d: case id %q already used on line %d", name, n, c.ID, seen[c.ID])
		case c.Request == nil:
			return nil, fmt.Errorf("%s:%d: case %s has no request", name, n, c.ID)
		}
		seen[c.ID] = n
		if err := c.Request.Validate(); err != nil {
			return nil, fmt.Errorf("%s:%d: case %s: %w", name, n, c.ID, err)
		}
		if c.Image != "" {
			if _, err := hex.DecodeString(c.Image); err != nil {
				return nil, fmt.Errorf("%s:%d: case %s: image: %w", name, n, c.ID, err)
			}
		}
		c.Request.SetDir(dir)
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s: a line longer than %d MiB", name, maxCorpusLine>>20)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no cases: an empty corpus compares nothing", name)
	}
	return out, nil
}

// Verdicts of comparing a corpus case with the model.
const (
	Match       = "match"  // same bytes, or refused for the same reason
	Differ      = "differ" // both produced an image, and the bytes differ
	ModelRefuse = "model-refused"
	ModelAccept = "model-accepted" // the kernel refused, the model did not
	Unmodelled  = "unmodelled"     // a refusal the model cannot predict from BTF (see Note)
	NotCaptured = "not-captured"   // the guest died before the case was done: no result to compare
)

// DiffResult compares one corpus case with what trampjit generates for its request.
type DiffResult struct {
	ID      string `json:"id"`
	Verdict string `json:"verdict"`
	Size    int    `json:"size,omitempty"` // kernel image bytes
	// Offset of the first differing byte, and the instructions there, model vs kernel.
	Offset int    `json:"offset,omitempty"`
	Model  string `json:"model,omitempty"`
	Kernel string `json:"kernel,omitempty"`
	Note   string `json:"note,omitempty"`
}

// KernelMessage is the kernel's own reason for a refused case: the verifier log's last line
// for a refused load, else the errno.
func (c *CorpusCase) KernelMessage() string {
	lines := strings.Split(strings.TrimSpace(c.Log), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && !strings.HasPrefix(l, "processed ") && !strings.HasPrefix(l, "verification time") && !strings.HasPrefix(l, "stack depth") {
			return l
		}
	}
	return ""
}

// Diff regenerates one case and compares it with the kernel's bytes or refusal.
func Diff(c *CorpusCase) DiffResult {
	r := DiffResult{ID: c.ID}
	req := c.Request
	if !c.Captured() {
		r.Verdict, r.Note = NotCaptured, "the guest failed on this case: "+firstLine(c.Error)
		return r
	}
	img, tr, err := generate(req)
	if c.Error != "" {
		return diffRefusal(c, r, err)
	}
	want, herr := hex.DecodeString(c.Image)
	if herr != nil || len(want) == 0 {
		r.Verdict, r.Note = Differ, "corpus case has neither an image nor an error"
		return r
	}
	r.Size = len(want)
	if err != nil {
		r.Verdict, r.Note = ModelRefuse, err.Error()
		return r
	}
	if bytes.Equal(img.Code, want) {
		r.Verdict = Match
		return r
	}
	r.Verdict = Differ
	off := 0
	for off < len(img.Code) && off < len(want) && img.Code[off] == want[off] {
		off++
	}
	_, dis, _ := jit.Lookup(req.Arch)
	syms := tr.Symbols()
	start := insnAt(img.Code, off, img.Base, dis)
	r.Offset = off
	r.Model = describeAt(img.Code, start, img.Base, dis, syms)
	r.Kernel = describeAt(want, start, img.Base, dis, syms)
	if len(img.Code) != len(want) {
		r.Note = fmt.Sprintf("model %d bytes, kernel %d", len(img.Code), len(want))
	}
	return r
}

// DiffAs is Diff with the case's request generated as profile instead of the profile it
// names: a capture of a kernel no profile was built from against the nearest model, or an
// older kernel's capture against a newer model (what the newer kernel changed). "" is Diff.
func DiffAs(c *CorpusCase, profile btfmodel.Kernel) DiffResult {
	if profile == "" || profile == c.Request.Kernel {
		return Diff(c)
	}
	cc, req := *c, *c.Request
	req.Kernel = profile
	cc.Request = &req
	return Diff(&cc)
}

func generate(req *jit.Request) (*jit.Image, *jit.Tramp, error) {
	tr, img, err := jit.Generate(req)
	return img, tr, err
}

// notFtraceManaged is how each arch's bpf_arch_text_poke refuses a function ftrace does not
// manage (notrace code), where register_fentry falls back to patching the text itself: BTF
// does not say which functions those are.
var notFtraceManaged = map[btfmodel.Arch]struct{ errno, why string }{
	// x86_64 finds no fentry NOP at the entry.
	btfmodel.AMD64: {"EBUSY", "EBUSY: not ftrace-managed"},
	// arm64 patches only BPF text.
	btfmodel.ARM64: {"ENOTSUPP", "arm64 ENOTSUPP: not ftrace-managed, bpf_arch_text_poke patches only BPF text"},
	// riscv64 expects the two NOPs of a patchable entry and finds other code.
	btfmodel.RISCV64: {"EFAULT", "riscv64 EFAULT: not ftrace-managed, bpf_arch_text_poke finds no NOPs at the entry"},
}

// diffRefusal checks that the model refuses a case the kernel refused, for the same reason.
func diffRefusal(c *CorpusCase, r DiffResult, err error) DiffResult {
	if nf, ok := notFtraceManaged[c.Request.Arch]; ok && c.Stage == "attach" && c.Errno == nf.errno && modelBuildsAttach(c, err) {
		r.Verdict, r.Note = Unmodelled, "the kernel cannot patch this function ("+nf.why+")"
		if err != nil {
			r.Note += fmt.Sprintf("; the model refuses only a later attach than the kernel's %d: %v", c.AttachIndex(), err)
		}
		return r
	}
	if err == nil {
		r.Verdict, r.Note = ModelAccept, "kernel: "+firstOf(c.KernelMessage(), c.Errno, c.Error)
		return r
	}
	if c.NoBTFTarget() && strings.Contains(err.Error(), "not found in BTF") {
		// The loader looked the target up in the kernel's BTF and found no FUNC (an inlined
		// or renamed function): the same reason as the model's, in the loader's words.
		r.Verdict, r.Note = Match, "no BTF FUNC for the target: "+err.Error()
		return r
	}
	msg := c.KernelMessage()
	var ae *jit.AttachError
	var se *jit.StructOpsError
	var errno jit.Errno
	switch {
	case msg != "" && strings.Contains(err.Error(), msg):
		r.Verdict = Match
	case errors.As(err, &ae) && msg == "" && ae.Verdict.Errno == c.Errno:
		r.Verdict = Match // refused with no log line (btf_id_deny): same errno
	case errors.As(err, &errno) && errno.Name() == c.Errno:
		r.Verdict = Match
	case errors.As(err, &se) && se.Verdict.Stage == btfmodel.Stage(c.Stage) && sameErrno(se.Verdict.Errno, c.Errno) && !se.Verdict.KernelMsg:
		// A refusal without a verifier line (a struct_ops map update): same stage, same errno.
		r.Verdict = Match
	default:
		r.Verdict = Differ
		r.Note = fmt.Sprintf("kernel: %s %s; model: %v", c.Errno, firstOf(msg, c.Error), err)
	}
	return r
}

// sameErrno compares errno names, ENOTSUP being EOPNOTSUPP's other name (both 95 on Linux; Go
// names it ENOTSUP, the kernel's sources say EOPNOTSUPP).
func sameErrno(a, b string) bool {
	alias := func(s string) string {
		if s == "ENOTSUP" {
			return "EOPNOTSUPP"
		}
		return s
	}
	return alias(a) == alias(b)
}

// attachIndex matches the agent's refusal at attach: "attach program N (kind) to func: ..."
// (capture), "attach program N: ..." (cost).
var attachIndex = regexp.MustCompile(`^attach program (\d+)[ :]`)

// AttachIndex is the 1-based attach the kernel refused a case at, 0 when the case was not
// refused at attach or its error does not say.
func (c *CorpusCase) AttachIndex() int { return c.progIndex("attach", attachIndex) }

// LoadIndex is the 1-based program the kernel refused to load, 0 when the case was not
// refused at load or its error does not say.
func (c *CorpusCase) LoadIndex() int { return c.progIndex("load", loadIndex) }

// progIndex is the program number re finds in the error of a case refused at stage.
func (c *CorpusCase) progIndex(stage string, re *regexp.Regexp) int {
	if c.Stage != stage {
		return 0
	}
	m := re.FindStringSubmatch(c.Error)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0
	}
	return n
}

var loadIndex = regexp.MustCompile(`^load program (\d+) \(`)

// modelBuildsAttach reports whether the model builds the trampoline the kernel's refused attach
// would have built: the agent loads every program, then attaches them one at a time, so
// attach N builds the first N. The model's refusal of the whole set (err) may come at a later
// attach, as the link limit does (BPF_MAX_TRAMP_LINKS counts the links so far); a refusal at
// load is a disagreement, the kernel loaded them all.
func modelBuildsAttach(c *CorpusCase, err error) bool {
	if err == nil {
		return true
	}
	var ae *jit.AttachError
	if errors.As(err, &ae) && ae.Verdict.Stage != btfmodel.StageAttach {
		return false
	}
	n := c.AttachIndex()
	if n <= 0 || n >= len(c.Request.Progs) {
		return false
	}
	req := *c.Request
	req.Progs = req.Progs[:n]
	if req.Addrs != nil {
		a := *req.Addrs
		a.Progs = a.Progs[:min(n, len(a.Progs))]
		req.Addrs = &a
	}
	_, _, e := generate(&req)
	return e == nil
}

// Captured reports whether the case has a result: an image or the kernel's refusal. A case
// the guest died on (stage "guest": a panic, a hang) has neither.
func (c *CorpusCase) Captured() bool { return c.Stage != "guest" }

// noTarget matches the loader's refusal of a target its kernel's BTF has no FUNC for:
// cilium/ebpf turns the failed lookup into "<attach kind> <func> not supported", the agent's
// fsession loader says "fsession target <func>: not found".
var noTarget = regexp.MustCompile(`(?:^|: )(?:fentry|fexit|fmod_ret|lsm|fsession|tp_btf) (\S+) not supported$|fsession target (\S+): not found$`)

// NoBTFTarget reports whether the case was refused at load because the kernel's BTF has no
// function of its target's name.
func (c *CorpusCase) NoBTFTarget() bool {
	if c.Stage != "load" {
		return false
	}
	m := noTarget.FindStringSubmatch(strings.TrimSpace(c.Error))
	return m != nil && (m[1] == c.Request.Func || m[2] == c.Request.Func)
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// insnAt finds the start of the instruction containing byte off.
func insnAt(code []byte, off int, base uint64, dis jit.Disassembler) int {
	start := 0
	for start < len(code) {
		in, err := dis.Decode(code[start:], base+uint64(start))
		if err != nil || in.Len <= 0 || start+in.Len > off {
			return start
		}
		start += in.Len
	}
	return start
}

// describeAt prints the instruction at off, symbolized, for a side-by-side report.
func describeAt(code []byte, off int, base uint64, dis jit.Disassembler, syms map[uint64]string) string {
	if off >= len(code) {
		return "(end of code)"
	}
	lines, _ := jit.BuildListing(&jit.Image{Base: base, Code: code}, dis, syms)
	for _, l := range lines {
		if l.Offset == off {
			return fmt.Sprintf("%x: %s  %s", off, l.Bytes, l.Asm)
		}
	}
	return fmt.Sprintf("%x: % x (not an instruction boundary)", off, code[off:min(off+8, len(code))])
}
