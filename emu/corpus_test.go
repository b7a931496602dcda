package emu_test

import (
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/emu"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/kernel/wire"
)

// corpora lists the committed kernel corpora (testdata/kernel/<kernel>-<arch>).
func corpora(t *testing.T) []string {
	dirs, err := filepath.Glob("../testdata/kernel/*/cases.jsonl")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no kernel corpus found: %v", err)
	}
	var out []string
	for _, d := range dirs {
		d = filepath.Dir(d)
		// A corpus is committed before its profile is modelled (7.2): skip those.
		k, a, _ := strings.Cut(filepath.Base(d), "-")
		if !btfmodelKnows(k) {
			t.Logf("%s: profile %s is not modelled yet", d, k)
			continue
		}
		// An arch the emulator runs is tested once its backend is linked in, before
		// btfmodel.Arches lists it (riscv64).
		if _, _, err := jit.Lookup(btfmodel.Arch(a)); err != nil && !slices.Contains(btfmodel.Arches, btfmodel.Arch(a)) {
			t.Logf("%s: no %s backend yet; its corpus is not run", d, a)
			continue
		}
		out = append(out, d)
	}
	return out
}

func btfmodelKnows(kernel string) bool {
	_, err := btfmodel.ParseKernel(kernel)
	return err == nil
}

// TestCorpus runs every captured image, the kernel's bytes at the kernel's addresses, and
// trampjit's image for the same request: both must satisfy the oracle. Where the guest
// recorded a call (BPF_PROG_TEST_RUN), the harness reproduces it: the same argument words,
// and an original that returns what the real function returned (the synthetic body cannot
// compute bpf_fentry_test2's a+b, so its value is taken from the fexit program's record);
// then what each program saw must equal the kernel's record. While a profile's generators
// are being written (some of its images are not byte-identical to the kernel's), only
// trampjit's byte-identical images are held to this; the others are counted and logged.
func TestCorpus(t *testing.T) {
	for _, dir := range corpora(t) {
		cases, err := kernel.ReadCorpus(dir)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(dir)
		type ours struct {
			img *jit.Image
			err error
		}
		gen := map[string]ours{}
		var withImage, identical int
		for _, c := range cases {
			if c.Image == "" {
				continue
			}
			withImage++
			img, _, err := emu.Generate(c.Request)
			gen[c.ID] = ours{img, err}
			if err == nil && hex.EncodeToString(img.Code) == c.Image {
				identical++
			}
		}
		strictAll := identical == withImage
		var images, oursOK, runs, pending int
		for _, c := range cases {
			if c.Image == "" {
				continue
			}
			code, err := hex.DecodeString(c.Image)
			if err != nil {
				t.Fatalf("%s: %v", c.ID, err)
			}
			opts := emu.Options{Clobber: true}
			if c.Run != nil && c.Run.Error == "" {
				opts = reproduce(c.Run, opts)
			}
			if c.Run != nil {
				opts.Trace = true // record with Go hooks where there is a recording to match
			}
			kr, err := emu.RunImage(c.Request, code, opts)
			if err != nil {
				t.Errorf("%s/%s: kernel image: %v", name, c.ID, err)
				continue
			}
			if !kr.OK {
				t.Errorf("%s/%s: kernel image fails the oracle:%s", name, c.ID, failures(kr))
				continue
			}
			images++
			g := gen[c.ID]
			strict := strictAll || g.err == nil && hex.EncodeToString(g.img.Code) == c.Image
			report := t.Errorf
			if !strict {
				report = t.Logf
			}
			or, err := emu.Run(c.Request, opts)
			if err != nil {
				report("%s/%s: trampjit image: %v", name, c.ID, err)
				pending++
				continue
			}
			if !or.OK {
				report("%s/%s: trampjit image fails the oracle:%s", name, c.ID, failures(or))
				pending++
				continue
			}
			oursOK++
			if c.Run != nil && c.Run.Error == "" {
				for who, r := range map[string]*emu.Report{"kernel image": kr, "trampjit image": or} {
					if d := matchRun(c.Request, c.Run, r); d != "" {
						t.Errorf("%s/%s: %s does not reproduce the kernel's run: %s", name, c.ID, who, d)
					}
				}
				runs++
			}
		}
		t.Logf("%s: %d kernel images and %d trampjit images pass the oracle (%d of %d byte-identical; %d not yet generated or passing); %d run recordings reproduced by both",
			name, images, oursOK, identical, withImage, pending, runs)
	}
}

// reproduce sets the arguments and the original's return value from a recording.
func reproduce(run *wire.Run, o emu.Options) emu.Options {
	for _, p := range run.Progs {
		if p.Calls > 0 {
			o.Args = append([]uint64{}, p.Ctx...)
			break
		}
	}
	for _, p := range run.Progs {
		if p.Kind == jit.Fexit && p.Ret != nil {
			v := *p.Ret
			o.TargetRet = &v
		}
	}
	return o
}

// matchRun compares a report with the kernel's recording: per program (attach order) the
// argument count, the arguments, the return value seen by fexit/fmod_ret, the IP; and the
// traced BPF function's return value, which BPF_PROG_TEST_RUN passes back for tj_args*.
func matchRun(req *jit.Request, run *wire.Run, r *emu.Report) string {
	if len(run.Progs) != len(r.Programs) {
		return fmt.Sprintf("%d programs recorded, %d reported", len(run.Progs), len(r.Programs))
	}
	for i, rp := range run.Progs {
		p := r.Programs[i]
		if (rp.Calls > 0) != p.Ran {
			return fmt.Sprintf("program %d ran: kernel %v, emulated %v", i, rp.Calls > 0, p.Ran)
		}
		if !p.Ran {
			continue
		}
		if p.NArgs != rp.NArgs {
			return fmt.Sprintf("program %d nr_args: kernel %d, emulated %d", i, rp.NArgs, p.NArgs)
		}
		n := int(rp.NArgs)
		if len(p.Ctx) < n || fmt.Sprint(p.Ctx[:n]) != fmt.Sprint(append([]uint64{}, rp.Ctx...)) {
			return fmt.Sprintf("program %d ctx: kernel %v, emulated %v", i, rp.Ctx, p.Ctx)
		}
		if rp.Ret != nil && (len(p.Ctx) != n+1 || p.Ctx[n] != *rp.Ret) {
			return fmt.Sprintf("program %d return value: kernel %d, emulated ctx %v", i, *rp.Ret, p.Ctx)
		}
		if req.Progs[i].FuncIP && p.IP != rp.IP {
			return fmt.Sprintf("program %d ip: kernel %#x, emulated %#x", i, rp.IP, p.IP)
		}
	}
	if req.Target == "bpf" && r.Ret&0xffffffff != run.Ret&0xffffffff {
		return fmt.Sprintf("return value: kernel %d, emulated %d", run.Ret, r.Ret)
	}
	return ""
}

func failures(r *emu.Report) string {
	var b strings.Builder
	for _, c := range r.Failed() {
		fmt.Fprintf(&b, "\n\t%s: %s", c.Name, c.Detail)
	}
	return b.String()
}
