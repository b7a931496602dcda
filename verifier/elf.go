package verifier

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
)

// LoadELF reads the tracing and LSM programs of an object built by clang
// (SEC("fentry/tcp_v4_connect"), SEC("lsm.s/file_open"), SEC("tp_btf/sched_switch"), ...)
// with cilium/ebpf, applies its CO-RE relocations against kernel (as libbpf would against the
// running kernel's BTF), and describes the maps it references. Programs of other types are
// skipped (LoadELFObject says which, and why).
func LoadELF(path string, kernel *btf.Spec) ([]Program, error) {
	progs, _, err := LoadELFObject(path, kernel)
	return progs, err
}

// Skipped is a program of an object that is not verified, and why: its type is one the
// model (and the kernel backend) does not load, e.g. a kprobe or an iterator.
type Skipped struct {
	Name    string `json:"name"`
	Section string `json:"section"`
	Reason  string `json:"reason"`
}

func (s Skipped) String() string { return fmt.Sprintf("%s (%s): %s", s.Name, s.Section, s.Reason) }

// LoadELFObject is LoadELF that also names the programs it skipped. An object with no
// program to verify is an error that lists them.
func LoadELFObject(path string, kernel *btf.Spec) ([]Program, []Skipped, error) {
	return LoadELFWith(path, kernel, ELFOptions{})
}

// LoadELFWith is LoadELFObject with options (the .kconfig values: see ELFOptions).
func LoadELFWith(path string, kernel *btf.Spec, o ELFOptions) ([]Program, []Skipped, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxELFSize+1))
	if err != nil {
		return nil, nil, err
	}
	if len(data) > MaxELFSize {
		return nil, nil, fmt.Errorf("%s: larger than %d MiB, more than a BPF object needs", path, MaxELFSize>>20)
	}
	progs, skipped, err := ParseELFWith(data, kernel, o)
	if err != nil {
		return nil, nil, err
	}
	if len(progs) == 0 {
		msg := fmt.Sprintf("%s has no fentry, fexit, fmod_ret, lsm or tp_btf programs", path)
		for _, s := range skipped {
			msg += "; skipped " + s.String()
		}
		return nil, skipped, errors.New(msg)
	}
	return progs, skipped, nil
}

// MaxELFSize bounds an object LoadELF reads: clang's BPF objects are kilobytes to a few MiB.
const MaxELFSize = 64 << 20

// ParseELF is LoadELF on an object already in memory. A malformed object is an error, never a
// crash: cilium/ebpf's ELF reader is not written for hostile input, so its panics are caught.
func ParseELF(data []byte, kernel *btf.Spec) ([]Program, error) {
	progs, _, err := ParseELFObject(data, kernel)
	return progs, err
}

// ParseELFObject is ParseELF that also names the programs it skipped.
func ParseELFObject(data []byte, kernel *btf.Spec) (progs []Program, skipped []Skipped, err error) {
	return ParseELFWith(data, kernel, ELFOptions{})
}

// ParseELFWith is ParseELFObject with options.
func ParseELFWith(data []byte, kernel *btf.Spec, o ELFOptions) (progs []Program, skipped []Skipped, err error) {
	defer func() {
		if r := recover(); r != nil {
			progs, skipped, err = nil, nil, fmt.Errorf("malformed BPF object: %v", r)
		}
	}()
	data, ksyms, err := btfmodel.TypedKsyms(data)
	if err != nil {
		return nil, nil, err
	}
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	var maps []Map
	for name, m := range spec.Maps {
		mm := Map{Name: name, Type: mapTypeName(uint32(m.Type)), KeySize: m.KeySize,
			ValueSize: m.ValueSize, MaxEntries: m.MaxEntries, ReadOnly: strings.HasPrefix(name, ".rodata")}
		mm.Data, mm.Frozen = sectionData(name, m) // rodata.go
		// Key and value BTF as libbpf (and the kernel backend) create the map with them:
		// both declared, neither void nor a data section.
		if _, void := m.Key.(*btf.Void); m.Key != nil && m.Value != nil && !void {
			if _, datasec := m.Value.(*btf.Datasec); !datasec {
				mm.Key, mm.Value = m.Key, m.Value
			}
		}
		maps = append(maps, mm)
	}
	var kds *btf.Datasec
	if spec.Types != nil && spec.Types.TypeByName(btfmodel.KconfigSection, &kds) == nil {
		// libbpf's .kconfig map: read-only and frozen (cilium/ebpf makes it at load time)
		km := Map{Name: btfmodel.KconfigSection, Type: "array", KeySize: 4, ValueSize: kds.Size, MaxEntries: 1, ReadOnly: true}
		km.Data, km.Frozen = o.kconfigData(kds, data) // rodata.go
		maps = append(maps, km)
	}
	sort.Slice(maps, func(i, j int) bool { return maps[i].Name < maps[j].Name })
	names := make([]string, 0, len(spec.Programs))
	for n := range spec.Programs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ps := spec.Programs[n]
		if why := Unverifiable(ps); why != "" {
			skipped = append(skipped, Skipped{Name: n, Section: ps.SectionName, Reason: why})
			continue
		}
		insns := ps.Copy().Instructions
		if err := btfmodel.ApplyCORE(insns, kernel, nil); err != nil {
			return nil, nil, fmt.Errorf("program %s: %w", n, err)
		}
		linkKsyms(insns, ksyms, kernel)
		btfmodel.LinkKconfig(insns, spec.Types)
		prog := Program{Name: n, Section: ps.SectionName, License: ps.License,
			Maps: maps, Instructions: insns}
		if ps.Type == ebpf.StructOps {
			// the member comes from the .struct_ops.link map pointing at the program
			prog.AttachType, prog.Target = btfmodel.StructOps, ps.AttachTo
			prog.Sleepable = ps.Flags&sleepableFlag != 0
		}
		progs = append(progs, prog)
	}
	return progs, skipped, nil
}

const sleepableFlag = 1 << 4 // BPF_F_SLEEPABLE

// Unverifiable says why a program of an object is not verified ("" when it is): see
// btfmodel.SkipReason, which the kernel backend shares.
func Unverifiable(ps *ebpf.ProgramSpec) string { return btfmodel.SkipReason(ps) }
