package kernel

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/kernel/vm"
	"github.com/trampjit/trampjit/kernel/wire"
)

// bpfFSleepable is BPF_F_SLEEPABLE of the uapi (x/sys/unix has it for Linux only).
const bpfFSleepable = 1 << 4

// ProgramFromInstructions completes p (name, attach type and target, sleepable, license,
// maps) with the bytecode of insns, built in Go. Map loads (asm.LoadMapPtr,
// asm.LoadMapValue) name their map by Reference, or else by the index of p.Maps in their
// constant; kfunc calls name their function by Reference. Anything else travels as it is,
// for the kernel to judge. An empty p.Type follows p.AttachType and an empty license
// becomes "GPL". When the first instruction carries btf.FuncMetadata, the program's BTF
// and func/line info go along.
func ProgramFromInstructions(p wire.VerifyProgram, insns asm.Instructions) (wire.VerifyProgram, error) {
	if p.Type == "" {
		p.Type = "tracing"
		if p.AttachType == "lsm_mac" {
			p.Type = "lsm"
		}
	}
	if p.License == "" {
		p.License = "GPL"
	}
	var b btf.Builder
	ext := len(insns) > 0 && btf.FuncMetadata(&insns[0]) != nil
	if err := encodeProgram(&p, slices.Clone(insns), &b, ext, nil); err != nil {
		return p, err
	}
	return p, p.Validate()
}

// ProgramForSection starts a program from a libbpf section name: "fentry/F", "fexit/F",
// "fmod_ret/F" or "lsm/HOOK", each optionally sleepable with ".s" ("lsm.s/file_open"), or
// "tp_btf/TRACEPOINT", or "struct_ops/OPS:MEMBER" (also .s); a leading '?' (libbpf:
// autoload off) is dropped.
func ProgramForSection(name, section string) (wire.VerifyProgram, error) {
	section = strings.TrimPrefix(section, "?")
	kind, target, ok := strings.Cut(section, "/")
	if !ok || target == "" {
		return wire.VerifyProgram{}, fmt.Errorf("section %q: want <kind>/<function>", section)
	}
	p := wire.VerifyProgram{Name: name, Type: "tracing", AttachTo: target, License: "GPL"}
	kind, p.Sleepable = strings.CutSuffix(kind, ".s")
	switch {
	case kind == "fentry" || kind == "fexit" || kind == "fmod_ret":
		p.AttachType = kind
	case kind == "lsm":
		p.Type, p.AttachType = "lsm", "lsm_mac"
	case kind == "tp_btf" && !p.Sleepable:
		p.AttachType = "raw_tp"
	case kind == "struct_ops":
		// libbpf ignores the name and takes the member from the .struct_ops map; a
		// program listed without an object names it: "struct_ops/OPS:MEMBER".
		p.Type, p.AttachType = "struct_ops", "struct_ops"
	default:
		return p, fmt.Errorf("section %q: want fentry, fexit, fmod_ret or lsm (optionally .s), tp_btf, or struct_ops/OPS:MEMBER", section)
	}
	return p, nil
}

// ELFOptions configure ProgramsFromELF.
type ELFOptions struct {
	// KernelBTF is the target kernel's BTF, against which CO-RE relocations are applied
	// (e.g. testdata/kernel/<kernel>-<arch>/vmlinux.btf.xz); needed only when the object
	// has relocations.
	KernelBTF *btf.Spec
	// NoBTF drops the object's BTF func and line info (libbpf and cilium/ebpf send them,
	// and the verifier then interleaves source lines with its log).
	NoBTF bool
	// Profile ("6.12-amd64") is the kernel the programs are for: .kconfig externs are
	// resolved as libbpf would resolve them there (its version, and the configuration of
	// its Debian build from the kernel cache, see KconfigFor). Needed only by objects with
	// .kconfig externs.
	Profile string

	weak map[string]bool // the object's weak symbols (externs libbpf may leave unresolved)
}

// ProgramsFromELF reads an object built by clang (SEC("fentry/tcp_v4_connect"),
// SEC("lsm.s/file_open"), SEC("tp_btf/sched_switch"), ...) with cilium/ebpf, applies its
// CO-RE relocations on the host and returns its programs, sorted by name, each with the maps
// it refers to. Kfunc calls and __ksym variables travel by name; .kconfig externs are not
// supported. Programs of other types are skipped (ProgramsFromELFSkipped says which).
func ProgramsFromELF(path string, o ELFOptions) ([]wire.VerifyProgram, error) {
	progs, _, err := ProgramsFromELFSkipped(path, o)
	return progs, err
}

// SkippedProgram is a program of an object the backend does not load, and why.
type SkippedProgram struct {
	Name, Section, Reason string
}

// ProgramsFromELFSkipped is ProgramsFromELF that also names the programs it skipped:
// TRACING programs other than fentry, fexit, fmod_ret and tp_btf, LSM programs other than
// BPF_LSM_MAC, and every other program type (kprobes, tracepoints, iterators, ...). The
// object is still loaded: libbpf would load each with its own rules.
func ProgramsFromELFSkipped(path string, o ELFOptions) ([]wire.VerifyProgram, []SkippedProgram, error) {
	data, err := ReadFileLimit(path, "BPF object", maxObjectSize)
	if err != nil {
		return nil, nil, err
	}
	data, typed, err := btfmodel.TypedKsyms(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(spec.Programs))
	for n := range spec.Programs {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []wire.VerifyProgram
	var skipped []SkippedProgram
	ksyms := objectKsyms(data, spec, typed)
	o.weak = map[string]bool{}
	for n, k := range ksyms {
		o.weak[n] = k.Weak
	}
	if f, err := elf.NewFile(bytes.NewReader(data)); err == nil {
		syms, _ := f.Symbols()
		for _, sym := range syms {
			if elf.ST_BIND(sym.Info) == elf.STB_WEAK && sym.Section == elf.SHN_UNDEF {
				o.weak[sym.Name] = true
			}
		}
	}
	for _, n := range names {
		ps := spec.Programs[n]
		if why := btfmodel.SkipReason(ps); why != "" {
			skipped = append(skipped, SkippedProgram{Name: n, Section: ps.SectionName, Reason: why})
			continue
		}
		p, err := programFromSpec(spec, ps, o, ksyms)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: program %s (%s): %w", path, n, ps.SectionName, err)
		}
		out = append(out, p)
	}
	return out, skipped, nil
}

func programFromSpec(cs *ebpf.CollectionSpec, ps *ebpf.ProgramSpec, o ELFOptions, ksyms map[string]wire.KsymRef) (wire.VerifyProgram, error) {
	p := wire.VerifyProgram{Name: ps.Name, AttachTo: ps.AttachTo, License: ps.License,
		Sleepable: ps.Flags&bpfFSleepable != 0}
	switch ps.Type {
	case ebpf.Tracing:
		p.Type = "tracing"
	case ebpf.LSM:
		p.Type = "lsm"
	case ebpf.StructOps:
		// cilium/ebpf, like libbpf, names the member through the .struct_ops.link map
		// that points at the program: AttachTo is "OPS:MEMBER".
		p.Type = "struct_ops"
	default:
		return p, fmt.Errorf("type %s: only tracing, LSM and struct_ops programs can be verified", ps.Type)
	}
	switch ps.AttachType {
	case ebpf.AttachNone:
		if ps.Type != ebpf.StructOps {
			return p, fmt.Errorf("attach type %s: want fentry, fexit, fmod_ret, tp_btf or lsm", ps.AttachType)
		}
		p.AttachType = "struct_ops"
	case ebpf.AttachTraceFEntry:
		p.AttachType = "fentry"
	case ebpf.AttachTraceFExit:
		p.AttachType = "fexit"
	case ebpf.AttachModifyReturn:
		p.AttachType = "fmod_ret"
	case ebpf.AttachLSMMac:
		p.AttachType = "lsm_mac"
	case ebpf.AttachTraceRawTp:
		p.AttachType = "raw_tp"
	default:
		return p, fmt.Errorf("attach type %s: want fentry, fexit, fmod_ret, tp_btf or lsm", ps.AttachType)
	}
	if ps.Flags&^bpfFSleepable != 0 {
		return p, fmt.Errorf("program flags %#x: only BPF_F_SLEEPABLE is supported", ps.Flags)
	}
	insns := slices.Clone(ps.Instructions)
	var b btf.Builder
	if err := btfmodel.ApplyCORE(insns, o.KernelBTF, &b); err != nil {
		return p, err
	}
	kds := btfmodel.LinkKconfig(insns, cs.Types)
	seen := map[string]bool{}
	for _, ins := range insns {
		ref := ins.Reference()
		if !ins.IsLoadFromMap() || ref == "" || seen[ref] {
			continue
		}
		seen[ref] = true
		if ref == btfmodel.KconfigSection && kds != nil {
			m, err := kconfigMap(kds, o.Profile, o.weak)
			if err != nil {
				return p, err
			}
			p.Maps = append(p.Maps, m)
			continue
		}
		ms, ok := cs.Maps[ref]
		if !ok {
			return p, fmt.Errorf("refers to map %q, which the object does not define", ref)
		}
		m, err := mapFromSpec(ref, ms)
		if err != nil {
			return p, err
		}
		p.Maps = append(p.Maps, m)
	}
	if err := encodeProgram(&p, insns, &b, !o.NoBTF, ksyms); err != nil {
		return p, err
	}
	return p, p.Validate()
}

// encodeProgram sets p's bytecode, map and kfunc references, and (ext) its BTF func and
// line info, from insns (which it modifies: references to subprograms get resolved).
func encodeProgram(p *wire.VerifyProgram, insns asm.Instructions, b *btf.Builder, ext bool, ksyms map[string]wire.KsymRef) error {
	if len(insns) == 0 {
		return fmt.Errorf("no instructions")
	}
	p.MapRefs, p.Kfuncs, p.Ksyms = nil, nil, nil
	iter := insns.Iterate()
	for iter.Next() {
		ins, off := iter.Ins, int(iter.Offset)
		switch {
		case ins.IsLoadFromMap():
			name := ins.Reference()
			if name == "" {
				idx := int(uint32(ins.Constant))
				if idx >= len(p.Maps) {
					return fmt.Errorf("insn %d loads map #%d, but the program has %d maps", off, idx, len(p.Maps))
				}
				name = p.Maps[idx].Name
			}
			p.MapRefs = append(p.MapRefs, wire.MapRef{Insn: off, Map: name})
		case ins.IsKfuncCall() && ins.Reference() != "":
			p.Kfuncs = append(p.Kfuncs, wire.KfuncRef{Insn: off, Func: ins.Reference()})
		case ins.OpCode.IsDWordLoad() && ins.Reference() != "" && !ins.IsLoadOfFunctionPointer():
			k, ok := ksyms[ins.Reference()]
			if !ok {
				// .kconfig and the like (anything else travels as it is: the kernel judges)
				return fmt.Errorf("insn %d refers to %q, an extern the kernel backend cannot resolve", off, ins.Reference())
			}
			k.Insn = off
			if k.Typed {
				ins.Src = wire.PseudoBTFID // bpf_object__relocate_data: RELO_EXTERN_LD64, typed
			}
			ins.Constant = 0
			p.Ksyms = append(p.Ksyms, k)
		}
	}
	if ext {
		fi, li, err := btf.MarshalExtInfos(insns, b)
		if err != nil {
			return fmt.Errorf("marshal func and line info: %w", err)
		}
		p.FuncInfo, p.LineInfo = fi, li
	}
	p.BTF = nil
	if ext && !b.Empty() {
		raw, err := b.Marshal(nil, &btf.MarshalOptions{Order: binary.LittleEndian, PreventNoTypeFound: true})
		if err != nil {
			return fmt.Errorf("marshal the program's BTF: %w", err)
		}
		p.BTF = raw
	}
	var buf bytes.Buffer
	if err := insns.Marshal(&buf, binary.LittleEndian); err != nil {
		return err
	}
	p.Insns = buf.Bytes()
	return nil
}

// mapFromSpec describes an ELF map (including data sections) for the agent to create.
func mapFromSpec(name string, ms *ebpf.MapSpec) (wire.VerifyMap, error) {
	typ := wire.MapTypeName(uint32(ms.Type))
	if typ == "" {
		return wire.VerifyMap{}, fmt.Errorf("map %q: type %s is not supported", name, ms.Type)
	}
	if ms.InnerMap != nil {
		return wire.VerifyMap{}, fmt.Errorf("map %q: maps of maps are not supported", name)
	}
	m := wire.VerifyMap{Name: name, Type: typ, KeySize: ms.KeySize, ValueSize: ms.ValueSize,
		MaxEntries: ms.MaxEntries, Flags: ms.Flags}
	switch len(ms.Contents) {
	case 0:
	case 1:
		k, kok := ms.Contents[0].Key.(uint32)
		v, vok := ms.Contents[0].Value.([]byte)
		if !kok || !vok || k != 0 {
			return m, fmt.Errorf("map %q: only data-section contents (key 0) are supported", name)
		}
		m.Data = v
	default:
		return m, fmt.Errorf("map %q: %d initial entries: only data-section contents are supported", name, len(ms.Contents))
	}
	// cilium/ebpf and libbpf freeze read-only data sections, so the verifier may rely on them.
	m.Freeze = strings.HasPrefix(name, ".rodata") || name == ".kconfig"
	if mapHasBTF(ms) {
		if err := mapBTF(&m, ms); err != nil {
			return m, fmt.Errorf("map %q: %w", name, err)
		}
	}
	return m, nil
}

// mapHasBTF: libbpf creates a map with key and value BTF whenever the object declares both
// types (__type(key, ...), __type(value, ...)); data sections and maps sized with
// __uint(key_size/value_size) have none here. Local storage maps are refused without it
// (bpf_local_storage_map_alloc_check, kernel/bpf/bpf_local_storage.c), and a bpf_spin_lock
// in a value is only found through it (btf_parse_fields). verifier.Map.Value follows the
// same rule.
func mapHasBTF(ms *ebpf.MapSpec) bool {
	if ms.Key == nil || ms.Value == nil {
		return false
	}
	if _, void := ms.Key.(*btf.Void); void {
		return false
	}
	_, datasec := ms.Value.(*btf.Datasec)
	return !datasec
}

// mapBTF gives m a BTF blob with the object's key and value types, as libbpf's
// bpf_map_create does with btf_key_type_id and btf_value_type_id.
func mapBTF(m *wire.VerifyMap, ms *ebpf.MapSpec) error {
	if ms.Key == nil || ms.Value == nil {
		return fmt.Errorf("needs key and value BTF (__type(key, ...), __type(value, ...))")
	}
	var b btf.Builder
	kid, err := b.Add(ms.Key)
	if err != nil {
		return fmt.Errorf("key BTF: %w", err)
	}
	vid, err := b.Add(ms.Value)
	if err != nil {
		return fmt.Errorf("value BTF: %w", err)
	}
	raw, err := b.Marshal(nil, btf.KernelMarshalOptions())
	if err != nil {
		return fmt.Errorf("map BTF: %w", err)
	}
	m.BTF, m.BTFKeyTypeID, m.BTFValueTypeID = raw, uint32(kid), uint32(vid)
	return nil
}

// maxObjectSize bounds an object read for the guest (clang's objects are kilobytes to a few
// MiB; verifier.MaxELFSize is the same bound).
const maxObjectSize = 64 << 20

// objectKsyms are the object's __ksym variables, from its .ksyms DATASEC (cilium/ebpf's
// loadKsymsSection reads the same): typed ones (btfmodel.TypedKsyms) load as
// BPF_PSEUDO_BTF_ID, as libbpf does; weak from the ELF symbol's binding.
func objectKsyms(data []byte, spec *ebpf.CollectionSpec, typed map[string]bool) map[string]wire.KsymRef {
	out := map[string]wire.KsymRef{}
	var ds *btf.Datasec
	if spec.Types == nil || spec.Types.TypeByName(".ksyms", &ds) != nil {
		return out
	}
	for _, vs := range ds.Vars {
		v, ok := vs.Type.(*btf.Var)
		if !ok {
			continue // kfuncs travel as KfuncRef
		}
		out[v.Name] = wire.KsymRef{Var: v.Name, Typed: typed[v.Name]}
	}
	if f, err := elf.NewFile(bytes.NewReader(data)); err == nil {
		syms, _ := f.Symbols()
		for _, sym := range syms {
			if k, ok := out[sym.Name]; ok && elf.ST_BIND(sym.Info) == elf.STB_WEAK {
				k.Weak = true
				out[sym.Name] = k
			}
		}
	}
	return out
}

// kconfigMap is libbpf's .kconfig map for profile: an array of one value, BPF_F_RDONLY_PROG,
// filled (bpf_object__resolve_externs) and frozen before the programs load.
func kconfigMap(ds *btf.Datasec, profile string, weak map[string]bool) (wire.VerifyMap, error) {
	v, cfg, err := KconfigFor(profile)
	if err != nil {
		return wire.VerifyMap{}, err
	}
	data, err := btfmodel.KconfigData(ds, v, cfg, weak)
	if err != nil {
		return wire.VerifyMap{}, err
	}
	return wire.VerifyMap{Name: btfmodel.KconfigSection, Type: "array", KeySize: 4, ValueSize: ds.Size,
		MaxEntries: 1, Flags: 1 << 7, Data: data, Freeze: true}, nil
}

// KconfigFor is what libbpf reads for .kconfig externs on profile ("6.12-amd64"): the
// profile's kernel version and the configuration of its Debian build, the config-* file the
// kernel cache keeps beside the vmlinuz it boots (libbpf reads /boot/config-$(uname -r) or
// /proc/config.gz on the running kernel).
func KconfigFor(profile string) (btfmodel.Version, btfmodel.Kconfig, error) {
	k, _, _ := strings.Cut(profile, "-")
	pr := btfmodel.ProfileFor(btfmodel.Kernel(k))
	if pr == nil {
		return btfmodel.Version{}, nil, fmt.Errorf(".kconfig externs: ELFOptions.Profile %q names no profile", profile)
	}
	dir, err := vm.CacheDir()
	if err != nil {
		return pr.Version, nil, err
	}
	files, _ := filepath.Glob(filepath.Join(dir, "kernels", profile, "config-*"))
	if len(files) == 0 {
		return pr.Version, nil, fmt.Errorf(".kconfig externs: no kernel config for %s in %s (boot the profile once)", profile, filepath.Join(dir, "kernels"))
	}
	f, err := os.Open(files[0])
	if err != nil {
		return pr.Version, nil, err
	}
	defer f.Close()
	cfg, err := btfmodel.ParseKconfig(f)
	return pr.Version, cfg, err
}
