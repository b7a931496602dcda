package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/internal/suggest"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/kernel/vm"
)

// kernelCommands are the subcommands of `trampjit kernel`.
var kernelCommands = map[string]command{
	"fetch":   {"fetch Debian kernel images (all four profiles with --all)", runKernelFetch},
	"cases":   {"print the corpus case catalogue for a kernel and arch (JSON lines, --format json or text)", runKernelCases},
	"capture": {"boot a kernel under qemu and capture trampolines, runs and verdicts", runKernelCapture},
	"cost":    {"count the instructions each attach mechanism costs per hit, in a guest under qemu -icount", runKernelCost},
	"fuzz":    {"draw random attach requests from a kernel's BTF, capture them in guests and diff them with the model", runKernelFuzz},
	"verify":  {"load programs (ELF objects, JSON instruction lists) through a real kernel's verifier", runKernelVerify},
}

func runKernel(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		w := stderr
		if len(args) > 0 {
			w = stdout
		}
		fmt.Fprintln(w, "usage: trampjit kernel <fetch|cases|capture|verify> [flags]")
		names := make([]string, 0, len(kernelCommands))
		for n := range kernelCommands {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(w, "  %-8s %s\n", n, kernelCommands[n].summary)
		}
		if len(args) == 0 {
			return &exitError{code: 2, err: errReported}
		}
		return nil
	}
	cmd, ok := kernelCommands[args[0]]
	if !ok {
		names := make([]string, 0, len(kernelCommands))
		for n := range kernelCommands {
			names = append(names, n)
		}
		sort.Strings(names)
		return usageErr("unknown kernel subcommand %q%s; run 'trampjit kernel -h' for the subcommands", args[0], suggest.Hint(args[0], names, ""))
	}
	return cmd.run(args[1:], stdout, stderr)
}

// profileFlags are --kernel and --arch, checked. fetchable admits every profile kernel/vm
// can fetch (fetch, cases, capture), including ones the model does not know yet.
type profileFlags struct {
	kernel, arch string
	fetchable    bool
}

func (p *profileFlags) register(fsKernel func(*string, string, string, string)) {
	help := "kernel profile: " + btfmodel.KernelNames()
	if p.fetchable {
		help = "kernel profile: " + strings.Join(vm.Profiles, ", ")
		if only := fetchOnly(); len(only) > 0 {
			help += " (" + strings.Join(only, ", ") + ": captured only; the model does not know it yet)"
		}
	}
	fsKernel(&p.kernel, "kernel", string(btfmodel.DefaultKernel), help)
	fsKernel(&p.arch, "arch", "amd64", "architecture: amd64, arm64 or riscv64")
}

func (p *profileFlags) check() error {
	if p.fetchable {
		if !slices.Contains(vm.Profiles, p.kernel) {
			return usageErr("--kernel: unknown kernel profile %q (want one of %s)", p.kernel, strings.Join(vm.Profiles, ", "))
		}
	} else if _, err := btfmodel.ParseKernel(p.kernel); err != nil {
		return usageErr("--kernel: %v", err)
	}
	a, err := btfmodel.ParseArch(p.arch)
	if err != nil {
		return usageErr("--arch: %v", err)
	}
	p.arch = string(a)
	return nil
}

// interruptible cancels the context on SIGINT or SIGTERM, so that guests are stopped and
// their work directories removed before trampjit exits (asInterrupt then gives 130).
// Later signals are absorbed: the shutdown takes well under a second.
func interruptible() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			cancel(&interruptError{s})
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel(nil) }
}

// interruptError is the cause of a context that interruptible ended.
type interruptError struct{ sig os.Signal }

func (e *interruptError) Error() string {
	if s, ok := e.sig.(syscall.Signal); ok {
		return "interrupted by " + unix.SignalName(s)
	}
	return fmt.Sprintf("interrupted by %v", e.sig)
}

// asInterrupt turns the error of a command whose context a signal ended into exit 130.
func asInterrupt(ctx context.Context, err error) error {
	var ie *interruptError
	if err == nil || !errors.As(context.Cause(ctx), &ie) {
		return err
	}
	return &exitError{code: exitInterrupted, err: fmt.Errorf("%v: %w", ie, err)}
}

// kernelExitStatus is the exit-status paragraph of the guest commands' help.
const kernelExitStatus = `Exit status: 0 done; 1 bad input or a failed run; 2 usage;
130 interrupted (SIGINT or SIGTERM): the guests are stopped and nothing is left behind.
`

func runKernelCases(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("kernel cases", stderr)
	p := profileFlags{fetchable: true}
	var only, format, vmlinuz, profile string
	p.register(fs.StringVar)
	fs.StringVar(&vmlinuz, "vmlinuz", "", "the catalogue for this kernel file: its architecture, and the profile nearest below its release")
	fs.StringVar(&profile, "profile", "", "with --vmlinuz: the model profile ("+btfmodel.KernelNames()+")")
	fs.StringVar(&only, "only", "", "only these cases: comma-separated exact ids or globs ('bpf_fentry_test2-*')")
	fs.StringVar(&format, "format", "jsonl", "output format: jsonl (one case a line, the --cases format), json (one array) or text (a table)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch format {
	case "jsonl", "json", "text":
	default:
		return usageErr("unknown --format %q (want jsonl, json or text)", format)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	t := captureTarget{profile: p.kernel, arch: p.arch}
	switch {
	case vmlinuz != "" && set["kernel"]:
		return usageErr("--kernel or --vmlinuz: a profile's catalogue or a kernel file's, not both")
	case vmlinuz == "" && set["profile"]:
		return usageErr("--profile chooses the model profile of a --vmlinuz kernel; a profile's own catalogue is --kernel")
	case vmlinuz != "":
		f, err := kernel.IdentifyKernel(vmlinuz)
		if err != nil {
			return err
		}
		if t, err = fileTarget(fs, p, f, profile); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "kernel: %s (%s, %s); model profile: %s\n", f.Release, f.Format, vmlinuz, profileWhy(profile, t.profile))
	default:
		if err := p.check(); err != nil {
			return err
		}
		t = captureTarget{profile: p.kernel, arch: p.arch}
	}
	cases, err := selectCases(kernel.FullCatalog(t.profile, t.arch), only)
	if err != nil {
		return err
	}
	switch format {
	case "json":
		b, err := json.MarshalIndent(cases, "", "  ")
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(b, '\n'))
		return err
	case "text":
		return casesTable(stdout, cases)
	}
	enc := json.NewEncoder(stdout)
	for _, c := range cases {
		if err := enc.Encode(c); err != nil {
			return err
		}
	}
	return nil
}

// selectCases applies --only (kernel.ParseOnly): a pattern that selects none of cases is an
// error, as is a selection of nothing.
func selectCases(cases []kernel.Case, only string) ([]kernel.Case, error) {
	o, err := kernel.ParseOnly(only)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = c.ID
	}
	if err := o.Unmatched(ids); err != nil {
		return nil, usageErr("%v", err)
	}
	var keep []kernel.Case
	for _, c := range cases {
		if o.Match(c.ID) {
			keep = append(keep, c)
		}
	}
	return keep, nil
}

// casesTable prints cases as a table: id, function, programs in attach order, run.
func casesTable(w io.Writer, cases []kernel.Case) error {
	rows := [][4]string{{"ID", "FUNCTION", "PROGRAMS", "RUN"}}
	for _, c := range cases {
		fn := c.Func
		if c.Target == "bpf" {
			fn += " (bpf)"
		}
		run := "-"
		if c.Run {
			run = "yes"
		}
		rows = append(rows, [4]string{c.ID, fn, progList(c.Progs), run})
	}
	var width [3]int
	for _, r := range rows {
		for i := range width {
			width[i] = max(width[i], len(r[i]))
		}
	}
	bw := bufio.NewWriter(w)
	for _, r := range rows {
		fmt.Fprintf(bw, "%-*s  %-*s  %-*s  %s\n", width[0], r[0], width[1], r[1], width[2], r[2], r[3])
	}
	fmt.Fprintf(bw, "%d cases\n", len(cases))
	return bw.Flush()
}

// progList is "fentry,fexit(func_ip)", runs of one program shortened: "38×fentry".
func progList(progs []jit.Prog) string {
	var parts []string
	for i := 0; i < len(progs); {
		j := i + 1
		for j < len(progs) && progs[j] == progs[i] {
			j++
		}
		s := string(progs[i].Kind)
		var mods []string
		if progs[i].Sleepable {
			mods = append(mods, "sleepable")
		}
		if progs[i].Cookie != 0 {
			mods = append(mods, fmt.Sprintf("cookie=%d", progs[i].Cookie))
		}
		if progs[i].FuncIP {
			mods = append(mods, "func_ip")
		}
		if progs[i].SessionCookie {
			mods = append(mods, "session_cookie")
		}
		if len(mods) > 0 {
			s += "(" + strings.Join(mods, ",") + ")"
		}
		if j-i > 1 {
			s = fmt.Sprintf("%d×%s", j-i, s)
		}
		parts = append(parts, s)
		i = j
	}
	return strings.Join(parts, ",")
}

// captureTarget is the model profile a capture is compared with and the architecture.
type captureTarget struct{ profile, arch string }

// openVmlinuz identifies --vmlinuz, finds its config and the profile, and says all three
// before anything boots. --arch defaults to the file's; another one is an error.
func openVmlinuz(fs *flag.FlagSet, p profileFlags, path, config, profile string, stderr io.Writer) (*kernel.LocalKernel, captureTarget, error) {
	l, err := kernel.OpenLocal(path, config)
	if err != nil {
		return nil, captureTarget{}, err
	}
	t, err := fileTarget(fs, p, l.File, profile)
	if err != nil {
		return nil, captureTarget{}, err
	}
	fmt.Fprintf(stderr, "kernel: %s (%s, %s); model profile: %s\n", l.File.Release, l.File.Format, path, profileWhy(profile, t.profile))
	if l.Config == nil {
		fmt.Fprintf(stderr, "warning: %s\n", l.ConfigNote())
	} else {
		fmt.Fprintln(stderr, l.ConfigNote())
	}
	return l, t, nil
}

// fileTarget is the profile and architecture of a kernel file: --profile or the nearest
// lower one; the file's architecture, which --arch may repeat but not contradict.
func fileTarget(fs *flag.FlagSet, p profileFlags, f *vm.KernelFile, profile string) (captureTarget, error) {
	t := captureTarget{arch: f.Arch}
	setArch := false
	fs.Visit(func(fl *flag.Flag) { setArch = setArch || fl.Name == "arch" })
	if setArch {
		a, err := btfmodel.ParseArch(p.arch)
		if err != nil {
			return t, usageErr("--arch: %v", err)
		}
		if string(a) != f.Arch {
			return t, usageErr("--arch %s, but %s is a kernel for %s (%s %s)", a, f.Path, f.Arch, f.Format, f.Release)
		}
	}
	var err error
	t.profile, err = modelProfile(profile, f.Release)
	return t, err
}

func runKernelCapture(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("kernel capture", stderr)
	p := profileFlags{fetchable: true}
	var casesPath, outDir, only, profile, vmlinuz, config string
	var jobs int
	var timeout time.Duration
	var copyBTF, host, merge bool
	var out output
	p.register(fs.StringVar)
	fs.StringVar(&vmlinuz, "vmlinuz", "", "boot this kernel file instead of a profile's Debian kernel (x86 bzImage; arm64 Image, Image.gz or EFI zboot)")
	fs.StringVar(&config, "config", "", "with --vmlinuz: the kernel's .config (default: the embedded one, config-<release> beside the file, or its build tree's .config)")
	fs.StringVar(&profile, "profile", "", "with --vmlinuz or --host: the model profile to compare with ("+btfmodel.KernelNames()+"; default the nearest lower than its release)")
	fs.StringVar(&casesPath, "cases", "", "cases file (JSON array or lines); default: the corpus catalogue (trampjit kernel cases)")
	fs.StringVar(&only, "only", "", "capture only these cases: comma-separated exact ids or globs ('bpf_fentry_test2-*')")
	fs.StringVar(&outDir, "o", "", "write cases.jsonl, info.json, kernel.json, boots.json, vmlinux.btf.xz here")
	fs.IntVar(&jobs, "jobs", 1, "guests to run in parallel")
	fs.DurationVar(&timeout, "timeout", 0, "hard timeout per guest (default 90s plus 5s per case, and 2m more for the BTF)")
	fs.BoolVar(&copyBTF, "btf", true, "with -o: copy the kernel's vmlinux BTF out (vmlinux.btf.xz, which every request names)")
	fs.BoolVar(&merge, "merge", false, "with -o: add the captured cases to DIR's cases.jsonl (replacing those with the same id, keeping the rest and DIR's other files) instead of replacing DIR; the BTF is copied only with --btf")
	fs.BoolVar(&host, "host", false, "capture on the running kernel instead of a guest (root; refuses where the kernel does)")
	out.register(fs, "text or json")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: trampjit kernel capture [--kernel P | --vmlinuz FILE [--config FILE] [--profile P] | --host [--profile P]]\n"+
			"                               [--cases FILE] [--only IDS] [-o DIR] [flags]\n\n"+
			"--vmlinuz boots any kernel file; its config is checked before it boots (a missing option every\n"+
			"case needs refuses it, naming the option; one some cases need is a warning).\n"+
			"-o DIR is checked before anything boots and replaced whole, only once every case is in,\n"+
			"with the kernel's BTF (vmlinux.btf.xz; a capture whose BTF copy fails writes nothing).\n"+
			"The cases of DIR's %s (from outside the catalogue: kernel fuzz's, merged with\n"+
			"--cases FILE --merge, which adds them there) are captured again after the others.\n"+
			"An interrupted capture leaves DIR as it was and keeps the cases that completed in\n"+
			"DIR%s, whose %s file names the missing ones (nothing when none completed).\n"+
			"A cases file may hold %d MiB, %d cases, %d programs per case.\n\n%s\n",
			kernel.ExtraCasesFile, kernel.PartialSuffix, kernel.PartialNote, kernel.MaxCasesFileSize>>20, kernel.MaxCases, kernel.MaxCaseProgs, kernelExitStatus)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := out.check("text", "json"); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if host && vmlinuz != "" {
		return usageErr("--host and --vmlinuz: the running kernel or a kernel file, not both")
	}
	if set["profile"] && !host && vmlinuz == "" {
		return usageErr("--profile chooses the model profile of a --vmlinuz or --host kernel; a profile's own Debian kernel is --kernel")
	}
	if set["config"] && vmlinuz == "" {
		return usageErr("--config is the config of a --vmlinuz kernel (a profile's Debian kernel comes with its own)")
	}
	if set["kernel"] && vmlinuz != "" {
		return usageErr("--kernel names the Debian kernel of a profile to boot; with --vmlinuz the file is booted (--profile chooses the model profile)")
	}
	if set["kernel"] && host {
		return usageErr("--kernel names the Debian kernel of a profile to boot; --host captures the running kernel (--profile chooses the model profile)")
	}
	if merge && outDir == "" {
		return usageErr("--merge adds cases to the corpus in -o DIR: give -o")
	}
	if merge && !set["btf"] {
		copyBTF = false // the corpus has its BTF already
	}
	if set["btf"] && !copyBTF && outDir != "" && !merge {
		return usageErr("--btf=false with -o: a corpus without its BTF cannot be read back: its requests name vmlinux.btf.xz")
	}
	copyBTF = copyBTF && outDir != ""
	t := captureTarget{profile: p.kernel, arch: p.arch}
	var local *kernel.LocalKernel
	if vmlinuz != "" {
		var err error
		if local, t, err = openVmlinuz(fs, p, vmlinuz, config, profile, stderr); err != nil {
			return err
		}
	} else if host {
		// The running kernel is captured in place: nothing boots.
		if err := refuseFlags(fs, "with --host (the running kernel, no guest)", "jobs", "timeout", "arch"); err != nil {
			return err
		}
		hk, err := kernel.RunningKernel()
		if err != nil {
			return err
		}
		if t.profile, err = modelProfile(profile, hk.Release); err != nil {
			return err
		}
		t.arch = runtime.GOARCH
		fmt.Fprintf(stderr, "host kernel: %s (%s); model profile: %s\n", hk.Release, hk.Version, profileWhy(profile, t.profile))
	} else if err := p.check(); err != nil {
		return err
	}
	var cases []kernel.Case
	if casesPath != "" {
		var err error
		if cases, err = kernel.ReadCases(casesPath); err != nil {
			return err
		}
	} else {
		cases = kernel.FullCatalog(t.profile, t.arch)
	}
	// A corpus's cases from outside the catalogue (its extra-cases.jsonl) are captured again.
	cases, err := kernel.CaptureCases(outDir, t.profile, t.arch, cases, merge)
	if err != nil {
		return err
	}
	cases, err = selectCases(cases, only)
	if err != nil {
		return err
	}
	if len(cases) == 0 {
		return usageErr("no cases to capture")
	}
	ctx, stop := interruptible()
	defer stop()
	o := kernel.CaptureOptions{Kernel: t.profile, Arch: t.arch, Cases: cases,
		OutDir: outDir, Jobs: jobs, Timeout: timeout, CopyBTF: copyBTF, Progress: stderr, Local: local, Merge: merge, Only: only}
	var rep *kernel.CaptureReport
	if host {
		rep, err = kernel.CaptureHost(ctx, o)
		if errors.Is(err, kernel.ErrHostNotPermitted) {
			// Nothing was captured: that is not a success.
			return fmt.Errorf("--host: nothing captured: %w", err)
		}
	} else {
		rep, err = kernel.Capture(ctx, o)
	}
	if err != nil {
		return asInterrupt(ctx, err)
	}
	if out.format == "json" {
		return json.NewEncoder(stdout).Encode(rep.Cases)
	}
	pal := palette(out.colorful(stdout))
	ok, refused := 0, 0
	for _, c := range rep.Cases {
		if c.Error != "" {
			refused++
			fmt.Fprintf(stdout, "%-55s %s %s: %s\n", c.ID, pal.red("refused"), strings.TrimSpace(c.Errno+" at "+c.Stage), firstLine(c.Error))
			continue
		}
		ok++
		fmt.Fprintf(stdout, "%-55s %s %d bytes\n", c.ID, pal.green("captured"), len(c.Image)/2)
	}
	fmt.Fprintf(stdout, "%d captured, %d refused\n", ok, refused)
	return nil
}

// modelProfile is --profile when given, else the profile nearest below the release.
func modelProfile(flagValue, release string) (string, error) {
	if flagValue != "" {
		k, err := btfmodel.ParseKernel(flagValue)
		if err != nil {
			return "", usageErr("--profile: %v", err)
		}
		return string(k), nil
	}
	k, err := btfmodel.NearestProfile(release)
	if err != nil {
		return "", err
	}
	return string(k), nil
}

func profileWhy(flagValue, profile string) string {
	if flagValue != "" {
		return profile + " (--profile)"
	}
	return profile + " (the nearest lower; --profile to choose)"
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// kernelStrings are the profiles' names, oldest first.
func kernelStrings() []string {
	s := make([]string, len(btfmodel.Kernels))
	for i, k := range btfmodel.Kernels {
		s[i] = string(k)
	}
	return s
}

// fetchOnly are the profiles kernel/vm fetches that btfmodel does not model yet.
func fetchOnly() []string {
	var out []string
	for _, k := range vm.Profiles {
		if btfmodel.ProfileFor(btfmodel.Kernel(k)) == nil {
			out = append(out, k)
		}
	}
	return out
}
