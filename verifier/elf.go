package verifier

import (
	"bytes"
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
// (SEC("fentry/tcp_v4_connect"), SEC("lsm.s/file_open"), ...) with cilium/ebpf, applies its
// CO-RE relocations against kernel (as libbpf would against the running kernel's BTF), and
// describes the maps it references. Programs of other types are skipped.
func LoadELF(path string, kernel *btf.Spec) ([]Program, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxELFSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxELFSize {
		return nil, fmt.Errorf("%s: larger than %d MiB, more than a BPF object needs", path, MaxELFSize>>20)
	}
	progs, err := ParseELF(data, kernel)
	if err != nil {
		return nil, err
	}
	if len(progs) == 0 {
		return nil, fmt.Errorf("%s has no fentry, fexit, fmod_ret or lsm programs", path)
	}
	return progs, nil
}

// MaxELFSize bounds an object LoadELF reads: clang's BPF objects are kilobytes to a few MiB.
const MaxELFSize = 64 << 20

// ParseELF is LoadELF on an object already in memory. A malformed object is an error, never a
// crash: cilium/ebpf's ELF reader is not written for hostile input, so its panics are caught.
func ParseELF(data []byte, kernel *btf.Spec) (progs []Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			progs, err = nil, fmt.Errorf("malformed BPF object: %v", r)
		}
	}()
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	var maps []Map
	for name, m := range spec.Maps {
		maps = append(maps, Map{Name: name, Type: strings.ToLower(m.Type.String()), KeySize: m.KeySize,
			ValueSize: m.ValueSize, MaxEntries: m.MaxEntries, ReadOnly: strings.HasPrefix(name, ".rodata")})
	}
	sort.Slice(maps, func(i, j int) bool { return maps[i].Name < maps[j].Name })
	names := make([]string, 0, len(spec.Programs))
	for n := range spec.Programs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ps := spec.Programs[n]
		if ps.Type != ebpf.Tracing && ps.Type != ebpf.LSM {
			continue
		}
		insns := ps.Copy().Instructions
		if err := btfmodel.ApplyCORE(insns, kernel, nil); err != nil {
			return nil, fmt.Errorf("program %s: %w", n, err)
		}
		progs = append(progs, Program{Name: n, Section: ps.SectionName, License: ps.License,
			Maps: maps, Instructions: insns})
	}
	return progs, nil
}
