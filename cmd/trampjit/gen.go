package main

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	_ "github.com/trampjit/trampjit/amd64" // registers the x86_64 backend
	_ "github.com/trampjit/trampjit/arm64" // registers the arm64 backend
	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	_ "github.com/trampjit/trampjit/riscv64" // registers the riscv64 backend
)

// requestFlags are the flags that build a gen request without a file; gen and run share them.
type requestFlags struct {
	request                      string
	btf, fn, proto, kernel, arch string
	fentry, fexit, modret, lsm   int
	fsession, sessionCookies     int
	sleepable, funcIP            bool
	cookies                      string
	ibt, rethunk, callDepth      bool
	structOps                    string
	cfi                          string
	cfiHash                      string
}

func (r *requestFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.request, "request", "", "gen request file (JSON); the other request flags are then not allowed")
	fs.StringVar(&r.btf, "btf", "", "BTF file of the kernel")
	fs.StringVar(&r.fn, "func", "", "traced function in --btf")
	fs.StringVar(&r.structOps, "struct-ops", "", "OPS.MEMBER: a struct_ops image for that member of the ops table in --btf (e.g. tcp_congestion_ops.cong_avoid), with its one program (--sleepable makes it sleepable)")
	fs.StringVar(&r.proto, "proto", "", "C prototype of the traced function instead of --btf/--func (no kernel function, so the kernel's per-function attach policy — fmod_ret and sleepable sets, deny lists — does not apply)")
	fs.StringVar(&r.kernel, "kernel", string(btfmodel.DefaultKernel), "kernel profile: "+btfmodel.KernelNames())
	fs.StringVar(&r.arch, "arch", "amd64", "architecture: amd64, arm64 or riscv64")
	fs.IntVar(&r.fentry, "fentry", 0, "number of fentry programs")
	fs.IntVar(&r.fexit, "fexit", 0, "number of fexit programs")
	fs.IntVar(&r.modret, "fmod-ret", 0, "number of fmod_ret programs")
	fs.IntVar(&r.lsm, "lsm", 0, "number of lsm programs")
	fs.IntVar(&r.fsession, "fsession", 0, "number of fsession programs (profiles with BPF_TRACE_FSESSION: "+fsessionKernels()+")")
	fs.IntVar(&r.sessionCookies, "session-cookie", 0, "how many of the fsession programs (the first ones) call bpf_session_cookie")
	fs.BoolVar(&r.sleepable, "sleepable", false, "programs are sleepable")
	fs.BoolVar(&r.funcIP, "func-ip", false, "programs call bpf_get_func_ip (sets IP_ARG)")
	fs.StringVar(&r.cookies, "cookie", "", "BPF cookie for every program, or a comma list in attach order")
	fs.BoolVar(&r.ibt, "ibt", false, "features.ibt: x86 ENDBR / arm64 BTI")
	fs.BoolVar(&r.rethunk, "rethunk", false, "features.rethunk: x86 return thunk")
	fs.BoolVar(&r.callDepth, "call-depth", false, "features.call_depth: x86 call-depth accounting")
	fs.StringVar(&r.cfi, "cfi", "", "features.cfi of a struct_ops image: kcfi (CONFIG_CFI_CLANG) or fineibt (x86, cfi=fineibt); default none, as Debian's GCC builds")
	fs.StringVar(&r.cfiHash, "cfi-hash", "", "features.cfi_hash: the kCFI type hash of the member's CFI stub (32 bits, e.g. 0x2f1c3a4b)")
}

// build makes the request from a file or from the flags.
func (r *requestFlags) build(fs *flag.FlagSet) (*jit.Request, error) {
	if r.request != "" {
		var conflict []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "request", "format", "color", "o", "args", "ret-values", "engine", "count":
			default:
				conflict = append(conflict, "--"+f.Name)
			}
		})
		if len(conflict) > 0 {
			return nil, usageErr("--request already says everything; drop %s", strings.Join(conflict, ", "))
		}
		return jit.ReadRequest(r.request)
	}
	k, err := btfmodel.ParseKernel(r.kernel)
	if err != nil {
		return nil, usageErr("--kernel: %v", err)
	}
	a, err := btfmodel.ParseArch(r.arch)
	if err != nil {
		return nil, usageErr("--arch: %v", err)
	}
	req := &jit.Request{Arch: a, Kernel: k, BTF: r.btf, Func: r.fn, Proto: r.proto,
		Features: jit.Features{IBT: r.ibt, Rethunk: r.rethunk, CallDepth: r.callDepth, CFI: r.cfi}}
	if r.cfiHash != "" {
		h, err := strconv.ParseUint(r.cfiHash, 0, 32)
		if err != nil {
			return nil, usageErr("--cfi-hash %q: want a 32-bit number (a kCFI type hash)", r.cfiHash)
		}
		req.Features.CFIHash = uint32(h)
	}
	if r.structOps != "" {
		so, err := parseStructOps(r.structOps)
		if err != nil {
			return nil, err
		}
		if r.fentry+r.fexit+r.modret+r.lsm+r.fsession != 0 || r.cookies != "" || r.funcIP {
			return nil, usageErr("--struct-ops builds an image with its one struct_ops program: drop the program flags")
		}
		req.StructOps = so
		req.Progs = []jit.Prog{{Kind: jit.StructOpsProg, Sleepable: r.sleepable}}
		if err := req.Validate(); err != nil {
			return nil, err
		}
		return req, nil
	}
	counts := []struct {
		kind jit.Kind
		n    int
	}{{jit.Fentry, r.fentry}, {jit.Fexit, r.fexit}, {jit.ModRet, r.modret}, {jit.LSM, r.lsm}, {jit.Fsession, r.fsession}}
	total := 0
	for _, k := range counts {
		if k.n < 0 {
			return nil, usageErr("--%s must not be negative", strings.ReplaceAll(string(k.kind), "_", "-"))
		}
		// Checked before anything is built: a count is a flag, not a promise of memory.
		if total += k.n; k.n > btfmodel.MaxTrampLinks || total > btfmodel.MaxTrampLinks {
			return nil, usageErr("%d programs on one trampoline: the kernel allows %d (BPF_MAX_TRAMP_LINKS) and fails the link with E2BIG", total, btfmodel.MaxTrampLinks)
		}
	}
	if r.sessionCookies < 0 || r.sessionCookies > r.fsession {
		return nil, usageErr("--session-cookie %d: a cookie is an fsession program's, and there are %d (--fsession)", r.sessionCookies, r.fsession)
	}
	for _, k := range counts {
		for i := 0; i < k.n; i++ {
			p := jit.Prog{Kind: k.kind, Sleepable: r.sleepable, FuncIP: r.funcIP}
			p.SessionCookie = k.kind == jit.Fsession && i < r.sessionCookies
			req.Progs = append(req.Progs, p)
		}
	}
	if len(req.Progs) == 0 {
		return nil, usageErr("no programs: give --fentry N, --fexit N, --fmod-ret N, --lsm N or --fsession N (or --request FILE)")
	}
	if r.cookies != "" {
		parts := strings.Split(r.cookies, ",")
		if len(parts) != 1 && len(parts) != len(req.Progs) {
			return nil, usageErr("--cookie has %d values for %d programs", len(parts), len(req.Progs))
		}
		for i := range req.Progs {
			s := strings.TrimSpace(parts[min(i, len(parts)-1)])
			var c jit.Cookie
			if err := c.UnmarshalJSON([]byte(strconv.Quote(s))); err != nil {
				return nil, usageErr("--cookie: %v", err)
			}
			req.Progs[i].Cookie = c
		}
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	return req, nil
}

// genJSON is `trampjit gen --format json` (docs/request-format.md, "Output").
type genJSON struct {
	Arch     string        `json:"arch"`
	Kernel   string        `json:"kernel"`
	Size     int           `json:"size"`
	Flags    string        `json:"flags"`
	Image    string        `json:"image"`
	Base     string        `json:"base"`
	Sections []jit.Section `json:"sections"`
	Relocs   []jit.Reloc   `json:"relocs"`
	Listing  []jit.Line    `json:"listing,omitempty"`
}

func runGen(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("gen", stderr)
	var rf requestFlags
	var out output
	var outPath string
	rf.register(fs)
	out.register(fs, "listing, json, hex, bin or html")
	fs.StringVar(&outPath, "o", "", "write to this file instead of standard output (written whole or not at all)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if out.format == "text" {
		out.format = "listing"
	}
	if err := out.check("listing", "json", "hex", "bin", "html"); err != nil {
		return err
	}
	req, err := rf.build(fs)
	if err != nil {
		return err
	}
	tr, img, err := jit.Generate(req)
	if err != nil {
		return err
	}
	_, dis, err := jit.Lookup(req.Arch)
	if err != nil {
		return err
	}
	w := stdout
	if outPath != "" {
		o, err := createOutput(outPath)
		if err != nil {
			return err
		}
		defer o.abort()
		w = o
	}
	switch out.format {
	case "bin":
		_, err = w.Write(img.Code)
	case "hex":
		_, err = fmt.Fprintln(w, hex.EncodeToString(img.Code))
	case "html":
		err = genHTML(w, req)
	case "json":
		var lines []jit.Line
		if lines, err = jit.Listing(tr, img, dis); err != nil {
			return err
		}
		res := genJSON{Arch: string(req.Arch), Kernel: string(req.Kernel), Size: len(img.Code),
			Flags: fmt.Sprintf("%#x", uint32(img.Flags)), Image: hex.EncodeToString(img.Code),
			Base: fmt.Sprintf("%#x", img.Base), Sections: img.Sections, Relocs: img.Relocs, Listing: lines}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(res)
	default:
		err = jit.WriteImage(w, tr, img, dis, jit.Palette{On: outPath == "" && out.colorful(stdout)})
	}
	if err != nil {
		return err
	}
	if o, ok := w.(*outFile); ok {
		return o.commit()
	}
	return nil
}

// fsessionKernels names the profiles that have fsession, for the flag's help.
func fsessionKernels() string {
	var ks []string
	for _, p := range btfmodel.Profiles {
		if p.Kernel.Has(btfmodel.CapFsession) {
			ks = append(ks, string(p.Kernel))
		}
	}
	return strings.Join(ks, ", ")
}

// parseStructOps reads --struct-ops OPS.MEMBER.
func parseStructOps(s string) (*jit.StructOps, error) {
	ops, member, ok := strings.Cut(s, ".")
	if !ok || ops == "" || member == "" || strings.Contains(member, ".") {
		return nil, usageErr("--struct-ops %q: want OPS.MEMBER, e.g. tcp_congestion_ops.cong_avoid", s)
	}
	return &jit.StructOps{Ops: ops, Member: member}, nil
}
