package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// modelJSON is `trampjit model --format json`.
type modelJSON struct {
	Func      string             `json:"func"`
	Kernel    string             `json:"kernel"`
	Arch      string             `json:"arch"`
	BTFID     uint32             `json:"btf_id,omitempty"`
	Prototype string             `json:"prototype,omitempty"`
	Args      []argJSON          `json:"args,omitempty"`
	Ret       *retJSON           `json:"ret,omitempty"`
	NrArgs    int                `json:"nr_args"`
	NrRegs    int                `json:"nr_regs"`
	Error     string             `json:"error,omitempty"`
	Attach    []btfmodel.Verdict `json:"attach"`
}

type argJSON struct {
	Index int      `json:"index"`
	Name  string   `json:"name,omitempty"`
	Type  string   `json:"type"`
	Size  int      `json:"size"`
	Slots int      `json:"slots"`
	Flags []string `json:"flags"`
}

type retJSON struct {
	Type  string   `json:"type"`
	Size  int      `json:"size"`
	Flags []string `json:"flags"`
}

func flagList(f btfmodel.ArgFlags) []string {
	if f == 0 {
		return []string{}
	}
	return strings.Split(f.String(), "|")
}

// modelTarget is a function to model: from BTF, or from a prototype string.
type modelTarget struct {
	btfPath, basePath, funcName, proto string
	kernel                             btfmodel.Kernel
	arch                               btfmodel.Arch
}

// resolve loads the function and distils it. A distill error is returned in derr with the
// (partial) identity filled in, so callers can still report the attach verdicts.
func (t *modelTarget) resolve() (name string, id uint32, m *btfmodel.FuncModel, derr, err error) {
	var fn *btf.Func
	switch {
	case t.proto != "" && (t.btfPath != "" || t.funcName != ""):
		return "", 0, nil, nil, usageErr("give either --proto or --btf/--func, not both")
	case t.proto != "":
		if fn, err = btfmodel.ParseProto(t.proto); err != nil {
			return "", 0, nil, nil, fmt.Errorf("--proto: %w", err)
		}
	case t.funcName == "":
		return "", 0, nil, nil, usageErr("need --func NAME (with --btf FILE) or --proto 'C prototype'")
	default:
		path := t.btfPath
		if path == "" {
			path = "/sys/kernel/btf/vmlinux"
		}
		var base *btf.Spec
		if t.basePath != "" {
			if base, err = btfmodel.LoadFile(t.basePath, nil); err != nil {
				return "", 0, nil, nil, err
			}
		}
		spec, err := btfmodel.LoadFile(path, base)
		if err != nil {
			return "", 0, nil, nil, err
		}
		if fn, err = btfmodel.FuncByName(spec, t.funcName); err != nil {
			return "", 0, nil, nil, err
		}
		if tid, err := spec.TypeID(fn); err == nil {
			id = uint32(tid)
		}
	}
	m, derr = btfmodel.Distill(fn, t.kernel)
	return fn.Name, id, m, derr, nil
}

func runModel(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("model", stderr)
	var t modelTarget
	var kernel, arch, eiPath string
	var sleepable bool
	var structOps string
	var out output
	fs.StringVar(&t.btfPath, "btf", "", "BTF file: raw vmlinux BTF, an ELF object's .BTF, optionally xz-compressed (default /sys/kernel/btf/vmlinux)")
	fs.StringVar(&t.basePath, "base", "", "base BTF when --btf is split (module) BTF")
	fs.StringVar(&t.funcName, "func", "", "function name in the BTF")
	fs.StringVar(&t.proto, "proto", "", "C prototype instead of BTF, e.g. 'struct pair { u64 a; u32 b; }; int f(struct pair p, int x)'")
	fs.StringVar(&kernel, "kernel", string(btfmodel.DefaultKernel), "kernel profile: "+btfmodel.KernelNames())
	fs.StringVar(&arch, "arch", "amd64", "architecture: amd64, arm64 or riscv64")
	fs.StringVar(&eiPath, "error-injection", "", "the error-injection list (/sys/kernel/debug/error_injection/list) of a kernel built with CONFIG_FUNCTION_ERROR_INJECTION; without it the list is empty, as on Debian's kernels: fmod_ret attaches only to security_* hooks and the kernel's fmod_ret id sets, sleepable only to those sets' sleepable members (6.1 and 6.12 have no syscall-wrapper fallback)")
	fs.BoolVar(&sleepable, "sleepable", false, "judge sleepable programs (BPF_F_SLEEPABLE)")
	fs.StringVar(&structOps, "struct-ops", "", "OPS.MEMBER instead of --func: the model of that ops table member (e.g. tcp_congestion_ops.cong_avoid), its index and image flags, and whether BPF may implement it")
	out.register(fs, "text or json")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := out.check("text", "json"); err != nil {
		return err
	}
	if t.basePath != "" && t.btfPath == "" {
		return usageErr("--base is the base of split BTF given with --btf; give --btf too")
	}
	var err error
	if t.kernel, err = btfmodel.ParseKernel(kernel); err != nil {
		return usageErr("--kernel: %v", err)
	}
	if t.arch, err = btfmodel.ParseArch(arch); err != nil {
		return usageErr("--arch: %v", err)
	}
	if structOps != "" {
		if t.funcName != "" || t.proto != "" || sleepable || eiPath != "" {
			return usageErr("--struct-ops names the member: drop --func, --proto, --sleepable and --error-injection")
		}
		return runModelStructOps(&t, structOps, &out, stdout)
	}
	env := btfmodel.AttachEnv{Kernel: t.kernel, Arch: t.arch, Sleepable: sleepable}
	if eiPath != "" {
		if env.ErrorInjection, err = readErrorInjection(eiPath); err != nil {
			return err
		}
	}
	name, id, m, derr, err := t.resolve()
	if err != nil {
		return err
	}
	env.BTFID = id
	res := modelJSON{Func: name, Kernel: string(t.kernel), Arch: string(t.arch), BTFID: id}
	for _, at := range t.kernel.AttachTypes() {
		res.Attach = append(res.Attach, btfmodel.CheckAttach(name, m, derr, at, env))
	}
	if derr != nil {
		res.Error = derr.Error()
	} else {
		fillModel(&res, m)
	}
	if out.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		printModel(stdout, palette(out.colorful(stdout)), &res)
	}
	if derr != nil {
		// The model could not be built: the kernel refuses every attachment.
		if out.format == "json" {
			return &exitError{code: 1, err: errReported}
		}
		return derr
	}
	return nil
}

func fillModel(res *modelJSON, m *btfmodel.FuncModel) {
	res.Prototype = m.Prototype()
	res.NrArgs, res.NrRegs = m.NrArgs(), m.NrRegs()
	res.Args = []argJSON{}
	for i, a := range m.Args {
		res.Args = append(res.Args, argJSON{Index: i, Name: a.Name, Type: a.TypeName,
			Size: a.Size, Slots: a.Slots(), Flags: flagList(a.Flags)})
	}
	res.Ret = &retJSON{Type: m.RetTypeName, Size: m.RetSize, Flags: flagList(m.RetFlags)}
}

func printModel(w io.Writer, p palette, r *modelJSON) {
	fmt.Fprintf(w, "%s  %s\n", p.bold(r.Func), p.dim(fmt.Sprintf("(Linux %s, %s)", r.Kernel, r.Arch)))
	if r.Error == "" {
		fmt.Fprintf(w, "%s\n\n", r.Prototype)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ARG\tNAME\tTYPE\tSIZE\tSLOTS\tFLAGS")
		slot := 0
		for _, a := range r.Args {
			slots := fmt.Sprint(a.Slots)
			if a.Slots > 1 {
				slots = fmt.Sprintf("%d (ctx[%d..%d])", a.Slots, slot, slot+a.Slots-1)
			} else {
				slots = fmt.Sprintf("1 (ctx[%d])", slot)
			}
			slot += a.Slots
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", a.Index, a.Name, a.Type, a.Size, slots, strings.Join(a.Flags, "|"))
		}
		fmt.Fprintf(tw, "ret\t\t%s\t%d\t\t%s\n", r.Ret.Type, r.Ret.Size, strings.Join(r.Ret.Flags, "|"))
		tw.Flush()
		fmt.Fprintf(w, "\nnr_args %d, register slots %d\n\n", r.NrArgs, r.NrRegs)
	} else {
		fmt.Fprintf(w, "%s %s\n\n", p.red("model:"), r.Error)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, v := range r.Attach {
		verdict := p.green("ok")
		detail := v.Note
		if !v.OK {
			verdict = p.red("refused")
			detail = fmt.Sprintf("at %s, %s: %s", v.Stage, v.Errno, v.Msg)
			if v.Note != "" {
				detail += " (" + v.Note + ")"
			}
		}
		if detail != "" {
			detail = p.dim(detail)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.cyan(string(v.Type)), verdict, detail)
	}
	tw.Flush()
}

// readErrorInjection reads /sys/kernel/debug/error_injection/list: "name\tERRNO" per line
// (the format of kernel/fail_function.c / lib/error-inject.c).
func readErrorInjection(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--error-injection: %w", err)
	}
	defer f.Close()
	set := map[string]bool{}
	// The list of a kernel with every function annotated is tens of KiB.
	sc := bufio.NewScanner(io.LimitReader(f, 16<<20))
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 0 {
			set[fields[0]] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--error-injection: %w", err)
	}
	return set, nil
}

// structOpsJSON is `trampjit model --struct-ops --format json`.
type structOpsJSON struct {
	modelJSON
	Ops      string           `json:"ops"`
	Member   string           `json:"member"`
	OpsBTFID uint32           `json:"ops_btf_id"`
	Index    int              `json:"index"`
	Offset   uint32           `json:"offset"`
	Flags    string           `json:"flags"`
	Verdict  btfmodel.Verdict `json:"verdict"`
}

func runModelStructOps(t *modelTarget, name string, out *output, stdout io.Writer) error {
	so, err := parseStructOps(name)
	if err != nil {
		return err
	}
	path := t.btfPath
	if path == "" {
		path = "/sys/kernel/btf/vmlinux"
	}
	var base *btf.Spec
	if t.basePath != "" {
		if base, err = btfmodel.LoadFile(t.basePath, nil); err != nil {
			return err
		}
	}
	spec, err := btfmodel.LoadFile(path, base)
	if err != nil {
		return err
	}
	m, err := btfmodel.StructOpsModel(spec, so.Ops, so.Member, t.kernel, t.arch)
	if err != nil {
		return err
	}
	res := structOpsJSON{Ops: m.Ops, Member: m.Member, OpsBTFID: m.OpsBTFID, Index: m.Index,
		Offset: m.Offset, Flags: jit.Flags(m.Flags).String(), Verdict: m.Verdict}
	res.Func, res.Kernel, res.Arch = so.String(), string(t.kernel), string(t.arch)
	res.Attach = []btfmodel.Verdict{m.Verdict}
	if m.Model != nil {
		fillModel(&res.modelJSON, m.Model)
	} else {
		res.Error = "no function model: " + so.Member + " is no function pointer"
	}
	if out.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		p := palette(out.colorful(stdout))
		printModel(stdout, p, &res.modelJSON)
		fmt.Fprintf(stdout, "\nmember index %d (expected_attach_type), offset %d, struct %s BTF id %d, image flags %s\n",
			m.Index, m.Offset, m.Ops, m.OpsBTFID, res.Flags)
	}
	if !m.Verdict.OK {
		return &exitError{code: 1, err: errReported}
	}
	return nil
}
