package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/trampjit/trampjit/kernel/vm"
	"github.com/trampjit/trampjit/kernel/wire"
)

// Case is one attachment to capture (id, function, programs in attach order).
type Case = wire.Case

// CaptureOptions configure Capture.
type CaptureOptions struct {
	Kernel   string        // profile: a btfmodel.Kernel, e.g. "6.12"
	Arch     string        // "amd64" or "arm64"
	Cases    []Case        // what to capture
	OutDir   string        // if set: cases.jsonl, info.json, kernel.json, boots.json (and vmlinux.btf.xz), replaced whole; its ExtraCasesFile checked first, then updated (see CaptureCases)
	WorkDir  string        // agent, initramfs and console logs; default a temporary directory, removed
	Jobs     int           // guests run in parallel (default 1; keep <= 2 on small hosts)
	Timeout  time.Duration // per guest boot (default 90 s plus 5 s per case, 2 min more for the BTF); a hard limit when set
	BTF      string        // the "btf" path written into each request (default "vmlinux.btf.xz")
	CopyBTF  bool          // copy the guest's /sys/kernel/btf/vmlinux out (~20 s more on x86)
	Progress io.Writer     // progress lines (optional)
	// Pin is the build to boot (a corpus's kernel.json, CorpusPin): kept while the archive
	// has it, else the newest of the series with a note; zero means the newest.
	Pin vm.Pin
	// Local, when set, is booted instead of the profile's Debian kernel (capture --vmlinuz);
	// Kernel is then only the model profile the requests name, and Arch must be the file's.
	// Its config is checked before anything boots: a fatal miss is a *ConfigError.
	Local *LocalKernel
	// Merge adds the captured cases to OutDir's cases.jsonl instead of replacing the corpus:
	// a case whose id is there already is replaced in place, new ones are appended, the rest
	// is kept; OutDir's other files stay (info.json, kernel.json and boots.json are written
	// only where missing). The directory is still replaced in one rename. Without a Pin the
	// build booted is the one OutDir's kernel.json names; another build merges nothing.
	Merge bool
	// Only is the --only selection the cases came from: a struct_ops table is captured
	// whole, and the members and tables the catalogue does not list are kept where it
	// selects them (planStructOps); "" keeps every one.
	Only string
}

// CaptureReport is what Capture found, cases in the order they were given.
type CaptureReport struct {
	Kernel *vm.KernelImage
	Info   *wire.Info
	Cases  []CorpusCase
	Boots  []BootStat
	BTF    []byte // the guest's vmlinux BTF, with CopyBTF
	// Results are the agent's reports by case id, with what the corpus leaves out (the
	// patch site's bytes, the bytes after the code).
	Results map[string]wire.CaptureResult

	boot   *vm.KernelImage // what was booted: Kernel, but with the files this machine reads
	btfErr string          // why the BTF copy failed
}

// BootStat describes one guest boot.
type BootStat struct {
	Cases    int           `json:"cases"`
	BootTime time.Duration `json:"boot_time"`
	Duration time.Duration `json:"duration"`
	Err      string        `json:"error,omitempty"`
}

// Fetch returns the cached Debian kernel for a profile and architecture, downloading it
// through a private apt configuration on first use (see kernel/vm).
func Fetch(ctx context.Context, kernel, arch string, progress io.Writer) (*vm.KernelImage, error) {
	return vm.Fetch(ctx, kernel, arch, progress)
}

// Capture boots the kernel under qemu (Jobs guests in parallel, the cases split between
// them) and captures every case. A case the kernel refuses is a result, not an error; a
// guest that crashes or hangs fails the case it was on (with the reason) and the rest are
// retried in a fresh guest. The error is for setup failures only (fetch, agent build, qemu
// missing, a kernel that does not boot); it is a *vm.RunError for the guest ones.
//
// OutDir is checked before anything boots and replaced only when every case is in (see
// commitDir). When ctx ends first, the guests are stopped, OutDir is left as it was, the
// cases that completed go to OutDir.partial (see interrupted), and the error wraps ctx.Err().
func Capture(ctx context.Context, o CaptureOptions) (*CaptureReport, error) {
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	progress = &syncWriter{w: progress}
	if o.Jobs < 1 {
		o.Jobs = 1
	}
	if o.BTF == "" {
		o.BTF = "vmlinux.btf.xz"
	}
	if err := validateCases(o.Cases); err != nil {
		return nil, err
	}
	if o.OutDir != "" {
		if err := CheckOutDir(o.OutDir); err != nil {
			return nil, err
		}
		if err := checkRecapture(o.OutDir, o.Local != nil); err != nil {
			return nil, err
		}
		if _, err := ReadExtraCases(o.OutDir, o.Kernel, o.Arch); err != nil {
			return nil, err
		}
		if o.Merge && o.Local == nil && o.Pin == (vm.Pin{}) {
			// Merged cases must come from the corpus's own build.
			pin, err := CorpusPin(o.OutDir)
			if err != nil {
				return nil, err
			}
			o.Pin = pin
		}
	}
	if l := o.Local; l != nil {
		if o.Arch != l.File.Arch {
			return nil, fmt.Errorf("--arch %s, but %s is %s kernel (%s)", o.Arch, l.File.Path, an(l.File.Arch), l.File.Format)
		}
		if err := checkLocalConfig(l, o.Arch, o.Cases, progress); err != nil {
			return nil, err
		}
	}
	var k, record *vm.KernelImage
	var agent, work string
	var cleanup func()
	var err error
	if o.Local != nil {
		k, record, agent, work, cleanup, err = localSetup(ctx, o.Local, o.Kernel, o.Arch, o.WorkDir)
	} else {
		k, agent, work, cleanup, err = guestSetup(ctx, o.Kernel, o.Arch, o.Pin, o.WorkDir, progress)
		record = k
	}
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if o.Local != nil {
		fmt.Fprintf(progress, "%s-%s: %s (%s %s), %d cases, %d guests\n", o.Kernel, o.Arch, k.Release, o.Local.File.Format, o.Local.File.Path, len(o.Cases), o.Jobs)
	} else {
		fmt.Fprintf(progress, "%s-%s: %s (%s %s), %d cases, %d guests\n", o.Kernel, o.Arch, k.Release, k.Package, k.Version, len(o.Cases), o.Jobs)
	}

	only, err := ParseOnly(o.Only)
	if err != nil {
		return nil, err
	}
	given := o.Cases // what ExtraCasesFile records: before the struct_ops tables expand
	sent, plan := planStructOps(o.Cases, only, o.Kernel, o.Arch)

	rep := &CaptureReport{Kernel: record, boot: k}
	results := map[string]wire.CaptureResult{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var fatal error
	chunks := split(sent, o.Jobs)
	for j, chunk := range chunks {
		wg.Add(1)
		go func(j int, chunk []Case) {
			defer wg.Done()
			r := &runner{k: k, agent: agent, timeout: o.Timeout, progress: progress,
				dir: filepath.Join(work, "boots", fmt.Sprintf("job%d", j)), wantBTF: o.CopyBTF && j == 0}
			res, info, boots, err := r.run(ctx, chunk)
			mu.Lock()
			defer mu.Unlock()
			for id, x := range res {
				results[id] = x
			}
			if info != nil && rep.Info == nil {
				rep.Info = info
			}
			if r.btf != nil {
				rep.BTF = r.btf
			} else if r.btfErr != "" {
				rep.btfErr = r.btfErr
			}
			rep.Boots = append(rep.Boots, boots...)
			if err != nil && fatal == nil {
				fatal = err
			}
		}(j, chunk)
	}
	wg.Wait()
	o.Cases = plan.expand(o.Cases, results, progress)
	if len(sent) == 0 && fatal == nil {
		// No cases: one boot for the machine facts alone.
		r := &runner{k: k, agent: agent, timeout: o.Timeout, progress: progress, dir: filepath.Join(work, "boots", "info"), wantBTF: o.CopyBTF}
		_, rep.Info, rep.Boots, fatal = r.run(ctx, nil)
		rep.BTF, rep.btfErr = r.btf, r.btfErr
	}
	if ctx.Err() != nil {
		return rep, interrupted(ctx, o, rep, results)
	}
	if fatal != nil && o.Local != nil {
		return rep, fmt.Errorf("%s (%s %s): %w", o.Local.File.Path, o.Local.File.Format, o.Local.File.Release, fatal)
	}
	if fatal != nil {
		return rep, fatal
	}
	if o.Local != nil && rep.Info != nil && rep.Info.Release != o.Local.File.Release {
		// The corpus records what ran; a file that names another release is worth a shout.
		rep.Kernel.Note = fmt.Sprintf("the guest ran %s, but %s says %s", rep.Info.Release, o.Local.File.Path, o.Local.File.Release)
		fmt.Fprintf(progress, "WARNING: RELEASE MISMATCH: %s\n", rep.Kernel.Note)
	}
	for _, c := range o.Cases {
		rep.Cases = append(rep.Cases, toCorpus(k, rep.Info, c, results[c.ID], o.BTF))
		if rep.Results == nil {
			rep.Results = map[string]wire.CaptureResult{}
		}
		rep.Results[c.ID] = results[c.ID]
	}
	if o.CopyBTF && rep.BTF == nil {
		// Every request names vmlinux.btf.xz: a corpus without it cannot be read back.
		return rep, fmt.Errorf("%s-%s: the guest's BTF (/sys/kernel/btf/vmlinux) was not copied out (%s); nothing written", o.Kernel, o.Arch, orDefault(rep.btfErr, "the guest sent none"))
	}
	if o.OutDir != "" {
		if o.Merge && o.Pin.Version != "" && rep.Kernel != nil && rep.Kernel.Version != o.Pin.Version {
			return rep, fmt.Errorf("--merge: %s was captured from %s %s, but the guest ran %s %s (that build left the archive): nothing merged",
				o.OutDir, o.Pin.Package, o.Pin.Version, rep.Kernel.Package, rep.Kernel.Version)
		}
		files, err := corpusFiles(rep)
		if err == nil && o.Merge {
			files, err = mergeFiles(o.OutDir, files)
		}
		if err == nil {
			files, err = withExtraFile(files, o.OutDir, o.Kernel, o.Arch, given)
		}
		if err != nil {
			return rep, err
		}
		if err := commitDir(ctx, o.OutDir, files, true); err != nil {
			if ctx.Err() != nil {
				rep.Cases = nil
				return rep, interrupted(ctx, o, rep, results)
			}
			return rep, err
		}
	}
	return rep, nil
}

// runner boots guests for one share of the cases until each has a result.
type runner struct {
	k        *vm.KernelImage
	agent    string
	timeout  time.Duration
	progress io.Writer
	dir      string
	boots    int
	wantBTF  bool   // ask the first boot for the BTF
	btf      []byte // what it sent
	btfErr   string // why the last copy failed
}

func (r *runner) run(ctx context.Context, cases []Case) (map[string]wire.CaptureResult, *wire.Info, []BootStat, error) {
	results := map[string]wire.CaptureResult{}
	var info *wire.Info
	var stats []BootStat
	pending := cases
	for first := true; first || len(pending) > 0; first = false {
		if err := ctx.Err(); err != nil {
			return results, info, stats, err
		}
		timeout := r.timeout
		r.boots++
		req := wire.Request{Kernel: r.k.Kernel, Arch: r.k.Arch, Info: true, Cases: pending, BTF: r.wantBTF && r.btf == nil}
		if timeout <= 0 {
			timeout = 90*time.Second + time.Duration(caseWeight(pending))*5*time.Second
			if req.BTF {
				timeout += 2 * time.Minute
			}
		}
		res, err := vm.Boot(ctx, r.k, r.agent, req, filepath.Join(r.dir, fmt.Sprint(r.boots)), timeout, r.progress)
		st := BootStat{Cases: len(pending)}
		if res != nil {
			st.BootTime, st.Duration = res.BootTime, res.Duration
			if req.BTF && hasHello(res) {
				if b, berr := assembleBlob(res.Frames, "/sys/kernel/btf/vmlinux"); berr == nil {
					r.btf = b
				} else {
					r.btfErr = berr.Error()
					fmt.Fprintf(r.progress, "%s-%s: BTF copy-out: %v\n", r.k.Kernel, r.k.Arch, berr)
				}
			}
			for _, f := range res.Frames {
				switch f.Kind {
				case wire.KindInfo:
					var in wire.Info
					if json.Unmarshal(f.JSON, &in) == nil {
						info = &in
					}
				case wire.KindCapture:
					var c wire.CaptureResult
					if json.Unmarshal(f.JSON, &c) == nil {
						results[c.ID] = c
						fmt.Fprintf(r.progress, "%s-%s: case %s: %s\n", r.k.Kernel, r.k.Arch, c.ID, summary(c))
					}
				}
			}
		}
		if ctx.Err() != nil { // stopped, not failed: blame no case
			stats = append(stats, st)
			return results, info, stats, fmt.Errorf("%s-%s: guest stopped: %w", r.k.Kernel, r.k.Arch, ctx.Err())
		}
		var next []Case
		for _, c := range pending {
			if _, ok := results[c.ID]; !ok {
				next = append(next, c)
			}
		}
		if err != nil {
			st.Err = err.Error()
		}
		stats = append(stats, st)
		if err == nil {
			pending = next
			if len(pending) > 0 { // agent said done but skipped cases: never loop forever
				for _, c := range pending {
					results[c.ID] = wire.CaptureResult{ID: c.ID, Func: c.Func, Stage: "guest", Error: "the agent finished without reporting this case"}
				}
				pending = nil
			}
			continue
		}
		var re *vm.RunError
		if !errors.As(err, &re) || !hasHello(res) {
			return results, info, stats, err // qemu or the kernel: a retry would fail the same way
		}
		if len(next) == 0 {
			pending = nil
			continue
		}
		if len(next) == len(pending) && re.Reason == vm.ReasonAgentCrashed {
			// The agent gave up before its first case (e.g. no memory reader): same every boot.
			for _, c := range next {
				results[c.ID] = wire.CaptureResult{ID: c.ID, Func: c.Func, Stage: "guest",
					Error: fmt.Sprintf("%s: %s", re.Reason, re.Detail)}
			}
			pending = nil
			continue
		}
		// The guest died on the first unreported case: blame it and retry the others.
		fmt.Fprintf(r.progress, "%s-%s: case %s: %s\n", r.k.Kernel, r.k.Arch, next[0].ID, re.Reason)
		results[next[0].ID] = wire.CaptureResult{ID: next[0].ID, Func: next[0].Func, Stage: "guest",
			Error: fmt.Sprintf("%s: %s", re.Reason, re.Detail)}
		pending = next[1:]
	}
	return results, info, stats, nil
}

// assembleBlob joins the blob frames of one guest file, checking they cover it exactly.
func assembleBlob(frames []wire.Frame, name string) ([]byte, error) {
	var out []byte
	total := int64(-1)
	for _, f := range frames {
		if f.Kind != wire.KindBlob {
			continue
		}
		var b wire.Blob
		if err := json.Unmarshal(f.JSON, &b); err != nil {
			return nil, err
		}
		if b.Name != name {
			continue
		}
		if b.Offset != int64(len(out)) {
			return nil, fmt.Errorf("%s: chunk at %d, expected %d", name, b.Offset, len(out))
		}
		out = append(out, b.Data...)
		total = b.Total
	}
	if total < 0 || int64(len(out)) != total {
		return nil, fmt.Errorf("%s: got %d bytes of %d", name, len(out), total)
	}
	return out, nil
}

func hasHello(res *vm.RunResult) bool {
	if res == nil {
		return false
	}
	for _, f := range res.Frames {
		if f.Kind == wire.KindHello {
			return true
		}
	}
	return false
}

func summary(c wire.CaptureResult) string {
	if c.Error != "" {
		return fmt.Sprintf("%s failed: %s", c.Stage, c.Error)
	}
	return fmt.Sprintf("%d bytes at %#x (%s)", len(c.Code), c.Image, c.Locate)
}

// split deals cases into n contiguous shares (fewer when there are fewer cases).
func split(cases []Case, n int) [][]Case {
	var out [][]Case
	for i := 0; i < n && len(cases) > 0; i++ {
		k := (len(cases) + (n - i) - 1) / (n - i)
		out = append(out, cases[:k])
		cases = cases[k:]
	}
	return out
}

// syncWriter serialises progress lines from parallel guests.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
